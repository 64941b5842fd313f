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
