// What `megasim simulate` says beside the step: the network mode it ran, a validation key
// borrowed by a scenario of one's own, a communicator start-up carried past its published
// points (each found by a trial or an audit of 2026-12-07, failing before its fix).
#include <doctest/doctest.h>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "run_command.h"
#include "simulate_json.h"

using megasim::test::kDefaultScenario;
using megasim::test::read_all;
using megasim::test::run_megasim;
using megasim::test::simulate_json;
using megasim::test::temp_file;

TEST_CASE("cli: simulate --network apart prices the same step with each collective's flows apart") {
  // No test reached `--network apart` until a test audit (2026-12-07): sent down the shared
  // path it would pass every other test. On MegaScale's 256-GPU step the two agree on the time
  // (no traffic of the step meets another's there) and apart runs about twice the events.
  const std::string row = std::string(MEGASIM_SOURCE_DIR) +
                          "/scenarios/validation/megascale-175b-256-megascale-mfu.json";
  const auto shared = simulate_json(row);
  const auto apart = simulate_json(row + " --network apart");
  CHECK(shared["simulation"]["network"] == "shared");
  CHECK(apart["simulation"]["network"] == "apart");
  CHECK(apart["step_time_s"].get<double>() ==
        doctest::Approx(shared["step_time_s"].get<double>()).epsilon(1e-6));
  CHECK(apart["simulation"]["events"].get<double>() >
        1.5 * shared["simulation"]["events"].get<double>());
}

TEST_CASE("cli: validation.allow_oom for a run the published runs do not hold is said") {
  // A scenario of one's own borrowing the key ran a plan over the device without a word (a
  // planner's trial, 2026-12-07); the shipped Llama 3 row names a published run and says nothing.
  const std::string llama =
      std::string(MEGASIM_SOURCE_DIR) + "/scenarios/validation/llama3-405b-8k-8192.json";
  const auto shipped = run_megasim("simulate " + llama);
  CHECK(shipped.exit_code == 0);
  CHECK(shipped.err.find("allow_oom") == std::string::npos);
  auto scenario = nlohmann::json::parse(read_all(llama));
  scenario["validation"]["run"] = "my-own-run";
  const auto file = temp_file("borrowed-allow-oom.json");
  std::ofstream(file) << scenario.dump();
  const auto borrowed = run_megasim("simulate " + file.string());
  CHECK(borrowed.exit_code == 0);
  CHECK(borrowed.err.find("warning: validation.allow_oom lets this plan run over the device's "
                          "memory as published run 'my-own-run' ran") != std::string::npos);
  // A --set plan that fits needs no allowance, and is not said to (a review, 2026-12-07).
  const auto fits = run_megasim("simulate " + file.string() + " --set plan.recompute=full");
  CHECK(fits.exit_code == 0);
  CHECK(fits.err.find("allow_oom") == std::string::npos);
  // inspect and compare say it as simulate does (both ran the plan without a word until
  // 2026-12-07); compare names the variant, and inspect's own --allow-oom asks for no warning.
  const std::string said = "validation.allow_oom lets this plan run over the device's memory";
  CHECK(run_megasim("inspect " + file.string()).err.find(said) != std::string::npos);
  CHECK(run_megasim("inspect " + file.string() + " --allow-oom").err.find(said) ==
        std::string::npos);
  const auto compared =
      run_megasim("compare " + file.string() + " --vary plan.recompute=full,selective");
  CHECK(compared.exit_code == 0);
  CHECK(compared.err.find("warning: recompute=selective: " + said) != std::string::npos);
  CHECK(compared.err.find("recompute=full") == std::string::npos);
}

TEST_CASE("cli: a communicator start-up carried far past its published ranks is said to be") {
  // Megatron-LM's 1,047 s on 2,048 GPUs, grown linearly, read 6,282 s on 12,288 without a
  // word (a planner's trial, 2026-12-07); within twice the published ranks nothing is added.
  const auto far =
      run_megasim("simulate " + kDefaultScenario + " --set reliability.preset=megatron-lm");
  CHECK(far.exit_code == 0);
  CHECK(far.out.find("(comm init 6282 s, extrapolated 6.0× past the 2048 ranks it was published "
                     "at)") != std::string::npos);
  const auto near = run_megasim("simulate " + kDefaultScenario);  // MegaScale's, to 12,288
  CHECK(near.out.find("(comm init 30 s)") != std::string::npos);
  CHECK(near.out.find("extrapolated") == std::string::npos);
}
