// What search's run-level objectives and compare's step price, said where a --set cannot move
// them, and search's figures as the run level counts them (a planner's trial, 2026-12-07).
#include <doctest/doctest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "run_command.h"

using megasim::test::kDefaultScenario;
using megasim::test::run_megasim;

TEST_CASE("cli: search's energy objective says another device's power preset, as simulate") {
  const auto r = run_megasim("search " + kDefaultScenario +
                             " --objective energy --top 1 --set power.preset=h100-sxm5-80gb");
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("megasim: warning: power.preset h100-sxm5-80gb is the power preset of the "
                   "device profile h100-sxm5-80gb") != std::string::npos);
  CHECK(r.out.find("the objective is failure-free") != std::string::npos);
  // The step-time objective prices no power: nothing to say.
  const auto step =
      run_megasim("search " + kDefaultScenario + " --top 1 --set power.preset=h100-sxm5-80gb");
  REQUIRE(step.exit_code == 0);
  CHECK(step.err.find("power.preset") == std::string::npos);
  CHECK(step.out.find("the objective is failure-free") == std::string::npos);
}

TEST_CASE("cli: a --set of the run level that search or compare cannot price is said") {
  const auto searched = run_megasim("search " + kDefaultScenario +
                                    " --objective time-to-train --top 1 --set "
                                    "reliability.failure_rate_scale=10 --set power.pue=2");
  REQUIRE(searched.exit_code == 0);
  CHECK(searched.err.find("--set reliability.failure_rate_scale=10: search's run-level "
                          "objectives are the steps alone") != std::string::npos);
  CHECK(searched.err.find("--set power.pue=2: search's") != std::string::npos);
  // What its objectives read is not said: the tokens and the price.
  const auto priced = run_megasim("search " + kDefaultScenario +
                                  " --objective cost --top 1 --set run.tokens=3e11 --set "
                                  "power.usd_per_gpu_hour=2");
  REQUIRE(priced.exit_code == 0);
  CHECK(priced.err.find("changes nothing here") == std::string::npos);
  const auto compared = run_megasim("compare " + kDefaultScenario +
                                    " --vary plan.vpp=3,6 --set reliability.spare_nodes=4");
  REQUIRE(compared.exit_code == 0);
  CHECK(compared.err.find("--set reliability.spare_nodes=4: compare prices the step") !=
        std::string::npos);
  const auto plain = run_megasim("compare " + kDefaultScenario + " --vary plan.vpp=3,6");
  CHECK(plain.err.find("changes nothing here") == std::string::npos);
}

TEST_CASE("cli: search's cost counts the run's whole steps, as simulate's run does") {
  // 10^8 tokens are 7.95 steps of 6,144 × 2,048: the run takes 8 (search took 7.95, 0.66 %
  // less, until 2026-12-07).
  const std::string sets = " --set run.tokens=1e8 --set power.usd_per_gpu_hour=1.5";
  const auto s = run_megasim("search " + kDefaultScenario + sets +
                             " --objective cost --top 1 --fix tp=8 --fix pp=8 --fix vpp=6 "
                             "--fix micro_batch=1 --json");
  REQUIRE(s.exit_code == 0);
  const auto ranked = nlohmann::json::parse(s.out)["ranked"];
  const nlohmann::json* own = nullptr;
  for (const auto& p : ranked)
    if (p["scenario_plan"] == true) own = &p;
  REQUIRE(own != nullptr);
  const auto run = run_megasim("simulate " + kDefaultScenario + sets +
                               " --set reliability.preset=none --json");
  REQUIRE(run.exit_code == 0);
  const double usd = nlohmann::json::parse(run.out)["power"]["usd_gpu_hours"].get<double>();
  CHECK((*own)["objective"].get<double>() == doctest::Approx(usd).epsilon(1e-6));
}
