#include <string>

#include <doctest/doctest.h>

#include "reports/run_report.h"

using megasim::Time;
using megasim::Watts;
using namespace megasim::run;
using megasim::reports::to_json;
using megasim::reports::to_text;

TEST_CASE("report: run and power sections carry the result") {
  // No failures: 100 steps of 36 s = 1 h = 1/24 day; goodput exactly 1.
  StepProfile step = uniform_step(Time::from_seconds(36), 10.0, 16, 8, 1, Activity::kGemm);
  PowerInputs power;
  power.name =
      std::string("p");  // not operator=(const char*): GCC 12 -Wrestrict false positive under ASan
  power.gpu = {Watts(400), Watts(300), Watts(150), Watts(60)};
  power.usd_per_gpu_hour = 2.0;
  const ReliabilityModel m = no_failures_model();
  RunSpec spec;
  spec.tokens = 1000.0;
  spec.trials = 3;
  const RunResult r = simulate_run(step, spec, m, power);
  const auto j = to_json(r, step, power, m);
  CHECK(j.at("run").at("steps") == 100);
  CHECK(j.at("run").at("days").at("p50").get<double>() == doctest::Approx(1.0 / 24.0));
  CHECK(j.at("run").at("goodput").at("mean").get<double>() == doctest::Approx(1.0));
  CHECK(j.at("run").at("restarts").at("p90").get<double>() == 0.0);
  CHECK(j.at("run").at("mtbf_hours").is_null());
  // 16 × 400 W = 6.4 kW for 1 h at PUE 1.2: 7.68 kWh; 16 GPU-hours × $2 = $32.
  CHECK(j.at("power").at("facility_mwh").get<double>() == doctest::Approx(0.00768));
  CHECK(j.at("power").at("usd_gpu_hours").get<double>() == doctest::Approx(32.0));
  // Failure: 16 × (400 − 60) W = 5.44 kW drop.
  CHECK(j.at("power").at("failure_drop_mw").get<double>() == doctest::Approx(0.00544));
  const std::string text = to_text(r, step, power, m);
  CHECK(text.find("goodput        100.0%") != std::string::npos);
  CHECK(text.find("power (preset p") != std::string::npos);
}

TEST_CASE("report: the spare pool's line, keys and share of the run's energy") {
  // The same failure-free hour with a pool of two 8-GPU nodes: 2 × (8 × 60 W) idle for 1 h
  // adds 0.96 kWh IT; billed for 32 GPUs, not 16; no price, no cost wording.
  StepProfile step = uniform_step(Time::from_seconds(36), 10.0, 16, 8, 1, Activity::kGemm);
  PowerInputs power;
  power.name = std::string("p");
  power.gpu = {Watts(400), Watts(300), Watts(150), Watts(60)};
  ReliabilityModel m = no_failures_model();
  m.spare_nodes = 2;
  RunSpec spec;
  spec.tokens = 1000.0;
  spec.trials = 2;
  const RunResult r = simulate_run(step, spec, m, power);
  const auto j = to_json(r, step, power, m);
  CHECK(j.at("power").at("spare_nodes_reserved") == 2);
  CHECK(j.at("power").at("spare_nodes_powered").get<double>() == doctest::Approx(2.0));
  CHECK(j.at("power").at("spare_it_mw").get<double>() == doctest::Approx(0.00096));
  CHECK(j.at("power").at("it_mwh").get<double>() == doctest::Approx(0.0064 + 0.00096));
  CHECK_FALSE(j.at("power").contains("usd_gpu_hours"));
  const std::string text = to_text(r, step, power, m);
  CHECK(text.find("2 nodes reserved, 2.0 idling") != std::string::npos);
  CHECK(text.find("(in the run's energy)") != std::string::npos);
  CHECK(text.find("over the run (idle spares included)") != std::string::npos);
}
