// Planned stops (Llama 3's 47 in 54 days: firmware, configuration and dataset updates): each
// ends the step under way, saves and waits for the write, relaunches and loads; no work lost,
// and the failures a trial draws in running time do not move.
#include <filesystem>
#include <limits>

#include <doctest/doctest.h>

#include "input_error_of.h"
#include "io/reliability_loader.h"
#include "io/scenario.h"
#include "run/reliability.h"
#include "run/run_simulation.h"
#include "test_profiles.h"

namespace fs = std::filesystem;
using megasim::Bytes;
using megasim::BytesPerSec;
using megasim::Time;
using namespace megasim::run;

namespace {

// 100 steps of 1 h on 8 GPUs, a checkpoint of 1 TB: a 60 s stall, then 1,000 s of writing at
// 1 GB/s beside training; a launch of 150 s and a load of 500 s at 2 GB/s.
struct Fixture {
  StepProfile step = uniform_step(Time::from_hours(1), 1000.0, 8, 8, 0, Activity::kGemm);
  ReliabilityModel m = no_failures_model();
  Fixture() {
    step.checkpoint_size = Bytes(1e12);
    m.restart_overhead = Time::from_seconds(120);
    m.comm_init.at_reference = Time::from_seconds(30);
    m.comm_init.reference_ranks = 8.0;
    m.checkpoint_stall = Time::from_seconds(60);
    m.checkpoint_write_bw = BytesPerSec(1e9);
    m.checkpoint_read_bw = BytesPerSec(2e9);
    m.planned_per_hour = 0.1;
  }
};

}  // namespace

TEST_CASE("run: a planned stop saves, waits for the write and restarts, losing no work") {
  Fixture f;
  // Saved whole (stall and write: 1,060 s), then relaunched (150 s) and loaded (500 s).
  CHECK(f.m.planned_save_time(f.step.checkpoint_size) == Time::from_seconds(1060));
  const Time stop = Time::from_seconds(1060 + 150 + 500);
  std::int64_t stops = 0;
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    const TrialResult r = simulate_trial(f.step, 100 * 1000.0, f.m, Time::max(), seed);
    stops += r.planned_stops;
    CHECK(r.restarts == 0);
    CHECK(r.down == Time::zero());
    CHECK(r.planned_down == stop * static_cast<double>(r.planned_stops));
    // No work redone: a stop lets its step end and saves it.
    CHECK(r.trained == Time::from_hours(100));
    CHECK(r.wall == Time::from_hours(100) + Time::from_seconds(150) + r.planned_down);
  }
  // 0.1 a running hour over 100 h: 10 a trial, 200 in 20 (a Poisson count's sd is 14).
  CHECK(stops > 150);
  CHECK(stops < 250);
  // None at a rate of 0: the run is as before.
  f.m.planned_per_hour = 0.0;
  const TrialResult none = simulate_trial(f.step, 100 * 1000.0, f.m, Time::max(), 3);
  CHECK(none.planned_stops == 0);
  CHECK(none.wall == Time::from_hours(100) + Time::from_seconds(150));
}

TEST_CASE("run: planned stops move no failure the trial draws in running time") {
  // Failures every 20 h of running on average and no checkpoint: each rolls back to the start,
  // so the running time to each failure is the draw itself. With planned stops (whose saves
  // become the rollback's point) the first failure comes after the same running time.
  Fixture f;
  f.m.detection = Time::from_seconds(600);
  f.m.causes.push_back({"software", FailureScope::kGpu, 1.0 / (20.0 * 8.0), false, "a test"});
  ReliabilityModel without = f.m;
  without.planned_per_hour = 0.0;
  int compared = 0;
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    const TrialResult a = simulate_trial(f.step, 100 * 1000.0, without, Time::max(), seed);
    const TrialResult b = simulate_trial(f.step, 100 * 1000.0, f.m, Time::max(), seed);
    CHECK(b.planned_stops > 0);
    if (a.restarts == 0) continue;
    ++compared;
    // Every failure loses work without checkpoints; with planned stops the saves keep some.
    CHECK(b.trained - b.useful < a.trained - a.useful);
  }
  CHECK(compared > 0);
  // On a stream of their own: a rate too low to stop this run draws, and moves nothing.
  ReliabilityModel rare = f.m;
  rare.planned_per_hour = 1e-9;
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    const TrialResult a = simulate_trial(f.step, 100 * 1000.0, without, Time::max(), seed);
    const TrialResult c = simulate_trial(f.step, 100 * 1000.0, rare, Time::max(), seed);
    CHECK(c.planned_stops == 0);
    CHECK(c.restarts == a.restarts);
    CHECK(c.wall == a.wall);
  }
}

TEST_CASE("presets: Llama 3's planned stops, per job, untouched by the failure-rate scale") {
  auto s = megasim::io::load_scenario(fs::path(MEGASIM_SOURCE_DIR) /
                                      "scenarios/megascale-production-530b.json");
  const ReliabilityModel base = megasim::io::reliability_for(s, 8);
  CHECK(base.planned_per_hour == doctest::Approx(47.0 / (54.0 * 24.0)));
  s.reliability.failure_rate_scale = 3.0;
  CHECK(megasim::io::reliability_for(s, 8).planned_per_hour == base.planned_per_hour);
  s.reliability.planned_stops_per_day = 2.0;
  CHECK(megasim::io::reliability_for(s, 8).planned_per_hour == doctest::Approx(2.0 / 24.0));
  s.reliability.planned_stops_per_day = 0.0;
  CHECK(megasim::io::reliability_for(s, 8).planned_per_hour == 0.0);
  // The none preset prices no restart: a rate there would count stops at no cost.
  s.reliability.preset = "none";
  CHECK(megasim::io::reliability_for(s, 8).planned_per_hour == 0.0);
  s.reliability.planned_stops_per_day = 2.0;
  const std::string e = megasim::test::input_error_of([&] { megasim::io::reliability_for(s, 8); });
  CHECK(e.find("reliability.planned_stops_per_day: 2 with reliability.preset \"none\"") !=
        std::string::npos);
}

TEST_CASE("run: failures come during the step a planned stop waits to end, as in any step") {
  // 1-hour steps, a planned stop every running hour on average, a failure every 10: each stop
  // waits half a step on average for its step's end, running. Until 2026-12-07 the failures'
  // clock stopped at the stop's arrival, so that half a step ran with no failure drawn (a
  // trial found 27 % fewer failures than the rate over the running time).
  Fixture f;
  f.m.planned_per_hour = 1.0;
  f.m.detection = Time::from_seconds(600);
  f.m.causes.push_back({"software", FailureScope::kGpu, 1.0 / (10.0 * 8.0), false, "a test"});
  double failures = 0.0, running_hours = 0.0;
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    const TrialResult r = simulate_trial(f.step, 50 * 1000.0, f.m, Time::max(), seed);
    failures += static_cast<double>(r.restarts);
    running_hours += (r.trained + r.checkpointing).to_hours();
  }
  // About 0.1 × running hours (sd of the count about 3 %).
  CHECK(failures / (0.1 * running_hours) == doctest::Approx(1.0).epsilon(0.08));
}

TEST_CASE("run: planned stops that outlast the longest run are refused, not cut") {
  // Stops of a 100,000 s save and a 650 s restart every running hour on 1-hour steps: past 50
  // years the trial stops, and simulate_trial refuses it naming the planned stops (drawing
  // stopped silently past 150 years until 2026-12-07).
  Fixture f;
  f.m.planned_per_hour = 1.0;
  f.m.checkpoint_write_bw = BytesPerSec(1e7);  // a 100,000 s save: the stops take the time
  const std::string e = megasim::test::input_error_of(
      [&] { simulate_trial(f.step, 200000 * 1000.0, f.m, Time::max(), 1); });
  CHECK(e.find("planned stops of") != std::string::npos);
  CHECK(e.find("reliability.planned_stops_per_day 24") != std::string::npos);
}

TEST_CASE("run: planned stops among periodic checkpoints: in a stall, a write's wait, at a mark") {
  // 100 steps of 1 h, a checkpoint every 2 steps: a 600 s stall, then a 2 h write beside
  // training, which the next checkpoint waits for (an hour). Stops every 2 running hours on
  // average come in every mode: computing (the step ends first, sometimes at a mark), in a
  // stall, in a write's wait, with a write pending. No failures: no work is lost, and the wall
  // is the launch, the steps, the checkpoints' stalls and waits and the stops, nothing else.
  Fixture f;
  f.m.checkpoint_stall = Time::from_seconds(600);
  f.m.checkpoint_write_bw = BytesPerSec(1e12 / 7200.0);
  f.m.planned_per_hour = 0.5;
  for (std::uint64_t seed = 1; seed <= 30; ++seed) {
    CAPTURE(seed);
    const TrialResult r = simulate_trial(f.step, 100 * 1000.0, f.m, Time::from_hours(2), seed);
    CHECK(r.planned_stops > 0);
    CHECK(r.trained == Time::from_hours(100));
    CHECK(r.wall == Time::from_seconds(150) + r.trained + r.checkpointing + r.planned_down);
    CHECK(r.first_checkpointing <= r.checkpointing);
    // Each stop's save and restart: the whole 2 h write, the 600 s stall, 150 s and a 500 s load.
    CHECK(r.planned_down ==
          Time::from_seconds(600 + 7200 + 150 + 500) * static_cast<double>(r.planned_stops));
  }
  // Where the checkpoints' stalls (20 h after each 1-hour step, no write), or their waits for a
  // 40-hour write (a 60 s stall), take nearly all the running time, nearly every stop arrives
  // in one: the same accounting holds there (the 30 seeds above reach those modes by chance).
  for (const bool waits : {false, true}) {
    CAPTURE(waits);
    Fixture g;
    g.m.planned_per_hour = 0.5;
    g.m.checkpoint_stall = Time::from_hours(waits ? 60.0 / 3600.0 : 20.0);
    g.m.checkpoint_write_bw = waits ? BytesPerSec(1e12 / (40.0 * 3600.0))
                                    : BytesPerSec(std::numeric_limits<double>::infinity());
    for (std::uint64_t seed = 1; seed <= 10; ++seed) {
      const TrialResult r = simulate_trial(g.step, 20 * 1000.0, g.m, Time::from_hours(1), seed);
      CHECK(r.planned_stops > 0);
      CHECK(r.trained == Time::from_hours(20));
      CHECK(r.wall == Time::from_seconds(150) + r.trained + r.checkpointing + r.planned_down);
    }
  }
}
