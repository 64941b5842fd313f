#include <string>

#include <doctest/doctest.h>

#include "reports/number_text.h"
#include "reports/run_report.h"

using megasim::Time;
using megasim::Watts;
using namespace megasim::run;
using megasim::reports::to_json;
using megasim::reports::to_text;

namespace {

// An hour of 100 failure-free 36 s steps on 16 GPUs in 2 nodes, GEMM-bound, and GPUs of 400 W
// under GEMMs and 60 W idle (no node overhead, no switches).
StepProfile hour_of_gemms() {
  return uniform_step(Time::from_seconds(36), 10.0, 16, 8, 1, Activity::kGemm);
}

PowerInputs gpu_power() {
  PowerInputs power;
  power.name =
      std::string("p");  // not operator=(const char*): GCC 12 -Wrestrict false positive under ASan
  power.gpu = {Watts(400), Watts(300), Watts(150), Watts(60)};
  return power;
}

// The run of `trials` Monte Carlo trials of 1,000 tokens (the 100 steps).
RunResult hour_run(const StepProfile& step, const ReliabilityModel& m, const PowerInputs& power,
                   int trials) {
  RunSpec spec;
  spec.tokens = 1000.0;
  spec.trials = trials;
  return simulate_run(step, spec, m, power);
}

}  // namespace

TEST_CASE("report: run and power sections carry the result") {
  // No failures: 100 steps of 36 s = 1 h = 1/24 day; goodput exactly 1.
  const StepProfile step = hour_of_gemms();
  PowerInputs power = gpu_power();
  power.usd_per_gpu_hour = 2.0;
  const ReliabilityModel m = no_failures_model();
  const RunResult r = hour_run(step, m, power, 3);
  const auto j = to_json(r, step, power, m);
  CHECK(j.at("run").at("steps") == 100);
  CHECK(j.at("run").at("days").at("p50").get<double>() == doctest::Approx(1.0 / 24.0));
  CHECK(j.at("run").at("goodput").at("mean").get<double>() == doctest::Approx(1.0));
  CHECK(j.at("run").at("restarts").at("p90").get<double>() == 0.0);
  CHECK(j.at("run").at("mtbf_hours").is_null());
  // 16 × 400 W = 6.4 kW for 1 h at PUE 1.2: 7.68 kWh; 16 GPU-hours × $2 = $32.
  CHECK(j.at("power").at("facility_mwh").get<double>() == doctest::Approx(0.00768).scale(0));
  CHECK(j.at("power").at("usd_gpu_hours").get<double>() == doctest::Approx(32.0));
  // Failure: 16 × (400 − 60) W = 5.44 kW drop.
  CHECK(j.at("power").at("failure_drop_mw").get<double>() == doctest::Approx(0.00544).scale(0));
  const std::string text = to_text(r, step, power, m);
  CHECK(text.find("goodput        mean 100.0%") != std::string::npos);
  CHECK(text.find("restarts       mean 0.0 (p10 0.0, p90 0.0)") != std::string::npos);
  // No failure: no restart to time (it read "0.0 min (comm init 0 s)" until 2026-12-06).
  CHECK(text.find("per restart    none (no failures)\n") != std::string::npos);
  // No evaluation, no checkpoint stall, no straggler: nothing is named as taking the running
  // time the steps leave (they take all of it).
  CHECK(text.find("running time spent in steps\n") != std::string::npos);
  CHECK(text.find("take the rest") == std::string::npos);
  CHECK(text.find("power (preset p") != std::string::npos);
  // A 16-GPU job draws kilowatts: the text says so in kW and kWh, not "0.01 MW" and "0 MWh"
  // (6.4 kW IT, 7.68 kWh facility, 6.4 kWh IT; 5.44 kW drop).
  CHECK(text.find("IT             average 6.4 kW in steps, 6.4 kW over the run, peak 6.4 kW") !=
        std::string::npos);
  // --json keeps the drop (5.44 kW above); the text names it only where failures happen.
  CHECK(text.find("on a failure") == std::string::npos);
  CHECK(text.find("energy         7.68 kWh facility (6.40 kWh IT)") != std::string::npos);
}

TEST_CASE("report: the spare pool's line, keys and share of the run's energy") {
  // The same failure-free hour with a pool of two 8-GPU nodes: 2 × (8 × 60 W) idle for 1 h
  // adds 0.96 kWh IT; billed for 32 GPUs, not 16; no price, no cost wording.
  const StepProfile step = hour_of_gemms();
  const PowerInputs power = gpu_power();
  ReliabilityModel m = no_failures_model();
  m.spare_nodes = 2;
  const RunResult r = hour_run(step, m, power, 2);
  const auto j = to_json(r, step, power, m);
  CHECK(j.at("power").at("spare_nodes_reserved") == 2);
  CHECK(j.at("power").at("spare_nodes_powered").get<double>() == doctest::Approx(2.0));
  CHECK(j.at("power").at("spare_it_mw").get<double>() == doctest::Approx(0.00096).scale(0));
  CHECK(j.at("power").at("it_mwh").get<double>() == doctest::Approx(0.0064 + 0.00096).scale(0));
  CHECK_FALSE(j.at("power").contains("usd_gpu_hours"));
  const std::string text = to_text(r, step, power, m);
  CHECK(text.find("2 nodes reserved, 2.0 idling") != std::string::npos);
  CHECK(text.find("(in the run's energy)") != std::string::npos);
  CHECK(text.find("over the run (idle spares included)") != std::string::npos);
  // The facility's peak, the job's (6.4 kW IT × 1.2) and with the spares' 0.96 kW beside it,
  // the same in the text and --json (the text had the second, --json the first, both unsaid).
  CHECK(j.at("power").at("facility_peak_mw").get<double>() == doctest::Approx(0.00768).scale(0));
  CHECK(j.at("power").at("facility_peak_with_spares_mw").get<double>() ==
        doctest::Approx(0.008832).scale(0));
  CHECK(text.find("peak 7.7 kW (8.8 kW with every spare idle)") != std::string::npos);
  // The IT line's peak too: its average over the run has the spares (7.36 kW), and it gave the
  // job's 6.4 kW alone as the peak until 2026-12-06.
  CHECK(text.find("7.4 kW over the run (idle spares included), peak 6.4 kW (7.4 kW with every "
                  "spare idle)") != std::string::npos);
  // One of the two out for repair on average: the run's mean has one idling, the peak both (at
  // launch); until 2026-12-06 the peak took the mean.
  RunResult half = r;
  half.energy.spares.powered = 1.0;
  half.energy.spare_it = half.energy.spare_it_peak * 0.5;
  CHECK(
      to_json(half, step, power, m).at("power").at("facility_peak_with_spares_mw").get<double>() ==
      doctest::Approx(0.008832).scale(0));
  CHECK(to_text(half, step, power, m).find("(8.8 kW with every spare idle)") != std::string::npos);
}

TEST_CASE("report: a job billed a share of its one spare says the power is its share") {
  // 2 nodes at a 10 % pool: 0.2 of a node, rounded to one spare and billed as 0.2 of it; the
  // line said the whole node idled "at" the share's power.
  const StepProfile step = hour_of_gemms();
  ReliabilityModel m = no_failures_model();
  m.spare_fraction = 0.1;
  const RunResult r = hour_run(step, m, gpu_power(), 1);
  const std::string text = to_text(r, step, gpu_power(), m);
  INFO(text);
  CHECK(text.find("1 node reserved (the job's share, 0.2 of a node, billed), 1.0 idling beside "
                  "the job on average, 96 W IT of it the job's share") != std::string::npos);
  // So is the facility peak beside it: (6.4 + 0.096) kW x 1.2, not a whole idle node's.
  CHECK(text.find("peak 7.7 kW (7.8 kW with its share of the spares idle)") != std::string::npos);
}

TEST_CASE("report: a two-GPU job's one step says its watts and watt-hours") {
  // One 36 s step on 2 GPUs of 400 W: 800 W (it read "0.8 kW", one figure with 823 W), 8 Wh
  // IT and 9.6 Wh facility at PUE 1.2, 3.74 g of CO2 at 0.39 kg/kWh (they read "0.01 kWh" and
  // "0.00 kg" beside the energy's cost until 2026-12-06).
  const StepProfile step = uniform_step(Time::from_seconds(36), 10.0, 2, 8, 1, Activity::kGemm);
  PowerInputs power = gpu_power();
  power.grid_kg_co2_per_kwh = 0.39;
  RunSpec spec;
  spec.tokens = 10.0;
  const RunResult r = simulate_run(step, spec, no_failures_model(), power);
  const std::string text = to_text(r, step, power, no_failures_model());
  INFO(text);
  CHECK(text.find("IT             average 800 W in steps") != std::string::npos);
  CHECK(text.find("energy         9.6 Wh facility (8 Wh IT), 3.74 g CO2") != std::string::npos);
  // At the edges: 999.6 Wh is 1.00 kWh, not "1e+03 Wh"; 999.4 Wh keeps three digits.
  using megasim::reports::thousandths_text;
  CHECK(thousandths_text(0.9996e-3, "MWh", "kWh", "Wh") == "1.00 kWh");
  CHECK(thousandths_text(0.9994e-3, "MWh", "kWh", "Wh") == "999 Wh");
  CHECK(megasim::reports::power_text(0.823e-3) == "823 W");
}

TEST_CASE("reports: a signed difference that rounds to nothing reads +0.0, never -0.0") {
  // search's why column printed "-0.0 pt MFU" for a plan a hair below the best.
  CHECK(megasim::reports::signed1(-0.04) == "+0.0");
  CHECK(megasim::reports::signed1(-0.0) == "+0.0");
  CHECK(megasim::reports::signed1(0.05) == "+0.1");
  CHECK(megasim::reports::signed1(-1.26) == "-1.3");
}

TEST_CASE("report: the running time's other parts are named only when the run has them") {
  // The hour of steps, evaluated every 10 steps for 36 s, no failures and no checkpoints:
  // "evaluation takes the rest"; every 1,000 steps (past the run's 100) nothing is evaluated,
  // and the steps are said to be alone, not "with the evaluations".
  StepProfile step = hour_of_gemms();
  step.evaluation = Time::from_seconds(36);
  step.evaluation_interval_steps = 10;
  const ReliabilityModel m = no_failures_model();
  const PowerInputs power = gpu_power();
  const std::string every_ten = to_text(hour_run(step, m, power, 1), step, power, m);
  CHECK(every_ten.find("(evaluation takes the rest)") != std::string::npos);
  CHECK(every_ten.find("days of steps and evaluations alone") != std::string::npos);
  CHECK(every_ten.find("every 10 steps") != std::string::npos);
  step.evaluation_interval_steps = 1000;
  const std::string never = to_text(hour_run(step, m, power, 1), step, power, m);
  CHECK(never.find("evaluation") == std::string::npos);
  CHECK(never.find("0.04 days of steps alone (no failure, checkpoint or launch)") !=
        std::string::npos);
}

TEST_CASE("report: what the trials saw beside what the model assumes, said where they differ") {
  // A run's figures set by hand: 10 restarts, 10 h down (60 min each, against 15 min with a
  // spare free); a sweep whose trials drew no failure; a job too small to fail weekly.
  const StepProfile step = hour_of_gemms();
  const PowerInputs power = gpu_power();
  ReliabilityModel m = no_failures_model();
  m.checkpoint_interval = Time::from_minutes(30);
  m.stragglers_in_step = true;
  m.spare_nodes = 2;
  RunResult r = hour_run(step, m, power, 1);
  r.recovery = Time::from_minutes(15);
  r.restarts.mean = 10.0;
  r.down_hours = 10.0;
  r.spare_wait_hours = 7.5;
  r.failures_per_day = 0.000838;
  r.mtbf_hours = 28655.42;
  r.young = r.daly = Time::from_minutes(162.8);
  r.sweep = {{.interval = Time::from_minutes(45.0), .mean_days = 1.0}};
  r.best_interval = Time::from_minutes(45.0);
  r.sweep_failures = 0;
  r.step_share = 0.99968;
  const std::string text = to_text(r, step, power, m);
  CHECK(text.find("per restart    15.0 min (comm init 0 s) with a spare free; 60.0 min on average "
                  "in the trials, 45.0 of it waiting for spares") != std::string::npos);
  // No wait: the trials drew more failures that need a node than the model's share (the excess
  // was put down to the pool until 2026-12-05).
  RunResult no_wait = r;
  no_wait.spare_wait_hours = 0.0;
  CHECK(to_text(no_wait, step, power, m)
            .find("60.0 min on average in the trials (the failures they drew that need a node)") !=
        std::string::npos);
  CHECK(text.find("0.000838 failures/day") != std::string::npos);
  // An interval the run's steps do not reach is said to take no checkpoint.
  RunResult short_run = r;
  short_run.checkpoints_in_run = false;
  CHECK(to_text(short_run, step, power, m).find("every 30.0 min (none within the run)") !=
        std::string::npos);
  short_run.checkpoints_in_run = true;
  CHECK(to_text(short_run, step, power, m).find("(none within the run)") == std::string::npos);
  // Without spares the model's recovery holds the repair: a longer mean is chance, not said.
  ReliabilityModel no_spares = m;
  no_spares.spare_nodes = 0;
  CHECK(to_text(r, step, power, no_spares).find("waiting for spares") == std::string::npos);
  CHECK(text.find("no simulated best (the sweep's trials drew no failure)") != std::string::npos);
  CHECK(text.find("best simulated") == std::string::npos);
  CHECK(text.find("the 99.97% of the running time") != std::string::npos);
  CHECK(text.find("the scenario's slow hosts (stragglers) pace every simulated step") !=
        std::string::npos);
  const auto j = to_json(r, step, power, m);
  CHECK(j.at("run").at("best_interval_min").is_null());
  CHECK(j.at("run").at("interval_sweep_failures") == 0);
  CHECK(j.at("run").at("stragglers_in_step") == true);
  // With failures drawn, the sweep's best stands, and a mean at the model's recovery adds nothing.
  r.sweep_failures = 3;
  r.down_hours = 2.5;
  const std::string drawn = to_text(r, step, power, m);
  CHECK(drawn.find("best simulated 45.0 min") != std::string::npos);
  // A best past the hour's steps is no checkpoint at all (said as 651.3 min, for a run of an
  // hour, until 2026-12-05).
  r.sweep = {{.interval = Time::from_minutes(651.3), .mean_days = 1.0}};
  r.best_interval = Time::from_minutes(651.3);
  r.best_past_run = true;
  CHECK(to_text(r, step, power, m).find("best simulated: no checkpoint within the run") !=
        std::string::npos);
  CHECK(to_json(r, step, power, m).at("run").at("best_interval_past_run") == true);
  CHECK(drawn.find("per restart    15.0 min (comm init 0 s)\n") != std::string::npos);
}
