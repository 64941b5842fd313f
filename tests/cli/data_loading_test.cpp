// MegaScale's asynchronous data pipeline from the command line: what it hides the next step's
// loading behind (step/step_model.cpp).
#include <doctest/doctest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "run_command.h"

using megasim::test::kDefaultScenario;
using megasim::test::run_megasim;

TEST_CASE("cli: asynchronous data loading hides behind the step's end only, not ZeRO-3's waits") {
  // MegaScale's system, ZeRO-3 on one stage: 4 s of loading a replica (4 samples at 1 s), and
  // about 28 s of DP waits inside the passes (layers' gathers) but little at the step's end:
  // the loading is nearly all exposed (it hid behind the in-pass waits: the step unchanged).
  const std::string base = "simulate --json " + kDefaultScenario +
                           " --set plan.pp=1 --set plan.vpp=1 --set plan.schedule=1f1b "
                           "--set plan.zero3=true --set plan.dp=32 --set plan.global_batch=128";
  const auto none = run_megasim(base);
  const auto loaded = run_megasim(base + " --set data_loading.host_ms_per_sample=1000");
  REQUIRE(none.exit_code == 0);
  REQUIRE(loaded.exit_code == 0);
  const auto a = nlohmann::json::parse(none.out), b = nlohmann::json::parse(loaded.out);
  const double exposed = b["step_time_s"].get<double>() - a["step_time_s"].get<double>();
  CHECK(exposed > 3.5);
  CHECK(exposed <= 4.0 + 1e-9);
  CHECK(b["breakdown_s"]["other"].get<double>() == doctest::Approx(exposed).epsilon(1e-6));
}

TEST_CASE("cli: asynchronous data loading hides behind the next step's opening all-gather too") {
  // The default scenario's DP waits are all outside its passes: 108 ms at the step's end and
  // 52 ms of the first chunk's parameter all-gather before its first pass, when the step needs
  // no data yet. Until 2026-12-06 the window left out the opening wait, and 32 samples at
  // 5 ms (160 ms) exposed 52 ms.
  const std::string base = "simulate --json " + kDefaultScenario;
  const auto none = nlohmann::json::parse(run_megasim(base).out);
  const auto hidden = run_megasim(base + " --set data_loading.host_ms_per_sample=5");
  const auto over = run_megasim(base + " --set data_loading.host_ms_per_sample=50");
  REQUIRE(hidden.exit_code == 0);
  REQUIRE(over.exit_code == 0);
  const auto h = nlohmann::json::parse(hidden.out), o = nlohmann::json::parse(over.out);
  const double window = none["breakdown_s"]["dp_exposed"].get<double>() +
                        none["breakdown_s"]["optimizer"].get<double>();
  REQUIRE(window > 0.160);
  CHECK(h["step_time_s"].get<double>() == none["step_time_s"].get<double>());
  CHECK(o["breakdown_s"]["other"].get<double>() ==
        doctest::Approx(32 * 0.050 - window).epsilon(1e-6));
}
