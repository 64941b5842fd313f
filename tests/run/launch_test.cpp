// The run's first launch: charged in the wall time, as a restart without its checkpoint load.
#include <doctest/doctest.h>

#include "run/reliability.h"
#include "run/run_simulation.h"
#include "test_profiles.h"

using megasim::Bytes;
using megasim::Time;
using namespace megasim::run;

TEST_CASE("run: the first launch is charged, as a restart without its checkpoint load") {
  // 10 steps of 1 h, no failures; launch: 120 s of processes and the model, and communicator
  // init of 30 s at 8 ranks. Until 2026-12-04 the wall was the steps alone (10 h).
  StepProfile step = uniform_step(Time::from_hours(1), 1000.0, 8, 8, 0, Activity::kGemm);
  step.checkpoint_size = Bytes(1e12);  // a restart would load it; a launch loads nothing
  ReliabilityModel m = no_failures_model();
  m.restart_overhead = Time::from_seconds(120);
  m.comm_init.at_reference = Time::from_seconds(30);
  m.comm_init.reference_ranks = 8.0;
  CHECK(m.launch_time(step) == Time::from_seconds(150));
  // A restart loads the checkpoint too (1 TB at 1 TB/s here); a launch has none to load.
  m.checkpoint_read_bw = megasim::BytesPerSec(1e12);
  CHECK(m.restart_time(step) == Time::from_seconds(151));
  const TrialResult r = simulate_trial(step, 10 * 1000.0, m, Time::max(), 7);
  CHECK(r.wall == Time::from_hours(10) + Time::from_seconds(150));
  CHECK(r.trained == Time::from_hours(10));
  CHECK(r.down == Time::zero());
}

TEST_CASE("run: a restart with no durable checkpoint starts from scratch, loading nothing") {
  // 10 steps of 1 h, a software failure every 5 h of running on average (no replacement), no
  // checkpoint in the run: each restart is detection (600 s) and a launch (150 s), where until
  // 2026-12-06 it loaded a checkpoint too (1,000 s here) that was never written.
  StepProfile step = uniform_step(Time::from_hours(1), 1000.0, 8, 8, 0, Activity::kGemm);
  step.checkpoint_size = Bytes(1e12);
  ReliabilityModel m = no_failures_model();
  m.restart_overhead = Time::from_seconds(120);
  m.comm_init.at_reference = Time::from_seconds(30);
  m.comm_init.reference_ranks = 8.0;
  m.checkpoint_read_bw = megasim::BytesPerSec(1e9);
  m.detection = Time::from_seconds(600);
  m.causes.push_back({"software", FailureScope::kGpu, 1.0 / (5.0 * 8.0), false, "a test"});
  REQUIRE(m.restart_time(step) == Time::from_seconds(1150));
  int restarted = 0;
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    const TrialResult r = simulate_trial(step, 10 * 1000.0, m, Time::max(), seed);
    restarted += r.restarts > 0 ? 1 : 0;
    CHECK(r.down == Time::from_seconds(750) * static_cast<double>(r.restarts));
  }
  CHECK(restarted > 0);
  // With a checkpoint every hour, a restart after the first one is durable loads it.
  m.checkpoint_write_bw = megasim::BytesPerSec(1e15);
  const TrialResult c = simulate_trial(step, 10 * 1000.0, m, Time::from_hours(1), 3);
  REQUIRE(c.restarts > 0);
  CHECK(c.down > Time::from_seconds(750) * static_cast<double>(c.restarts));
}
