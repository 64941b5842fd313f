// simulate_blocking_ideal: Megatron-LM's blocking exchanges on fixed pass and message times,
// which search's estimate prices lock-step pipelines with.
#include <doctest/doctest.h>

#include <tuple>

#include "step/pipeline_schedule.h"

using megasim::Time;
using megasim::step::build_schedule;
using megasim::step::IdealTimes;
using megasim::step::simulate_blocking_ideal;
using megasim::step::simulate_ideal;
using megasim::workload::Schedule;

namespace {
Time us(double v) {
  return Time::from_us(v);
}
}  // namespace

TEST_CASE("blocking: one micro-batch on two stages, by hand") {
  // Stage 0: F, send F (waits for stage 1's receive, posted at 0), receive B, B. Stage 1:
  // receive F, F, B, send B. Each message takes t and each exchange is followed by the sync:
  // F + t + sync + F + B + t + sync, then stage 0's sync and B: 2f + 2b + 2t + 2 sync.
  const auto s = build_schedule(Schedule::kOneFOneB, 2, 1, 1);
  const IdealTimes t{us(10), us(20), {}, us(3)};
  CHECK(simulate_blocking_ideal(s, t, us(1)) == us(2 * 10 + 2 * 20 + 2 * 3 + 2 * 1));
}

TEST_CASE("blocking: the lock-step is never faster than the dependencies alone") {
  // A blocking send also holds its sender until the receiver posts, so the makespan is at
  // least the schedule's with the same message time on each dependency; with free messages
  // and no sync, at least the bare schedule's.
  using Case = std::tuple<Schedule, int, int, int>;
  for (const auto& [kind, pp, vpp, m] :
       {Case{Schedule::kOneFOneB, 4, 1, 8}, Case{Schedule::kOneFOneB, 8, 1, 3},
        Case{Schedule::kInterleaved, 4, 2, 8}, Case{Schedule::kInterleaved, 4, 10, 16},
        Case{Schedule::kInterleaved, 8, 3, 8}, Case{Schedule::kGpipe, 4, 1, 6},
        Case{Schedule::kZeroBubble, 4, 1, 8}}) {
    CAPTURE(pp);
    CAPTURE(vpp);
    CAPTURE(m);
    const auto s = build_schedule(kind, pp, vpp, m);
    const IdealTimes free{us(10), us(20), us(10), {}};
    CHECK(simulate_blocking_ideal(s, free, {}) >= simulate_ideal(s, free).makespan);
    const IdealTimes sends{us(10), us(20), us(10), us(2)};
    CHECK(simulate_blocking_ideal(s, sends, {}) >= simulate_ideal(s, sends).makespan);
    // Every exchange pays the synchronisation, so it only adds.
    CHECK(simulate_blocking_ideal(s, sends, us(1)) > simulate_blocking_ideal(s, sends, {}));
  }
}

TEST_CASE("blocking: the interleaved steady state pays an exchange of two messages a pass pair") {
  // PP 4, VPP 2, 32 micro-batches: stage 0's 64 chunk-forwards, of which 2·3 + 4 = 10 warm-up;
  // each of the 54 steady pairs ends in one exchange that sends two messages (its forward's
  // activation, its backward's gradient), so each holds the stage for 2t. With t = 1 us the
  // makespan grows by at least the steady state's 54 x 2 us over the free one.
  const auto s = build_schedule(Schedule::kInterleaved, 4, 2, 32);
  const Time free = simulate_blocking_ideal(s, {us(10), us(20), {}, {}}, {});
  const Time sends = simulate_blocking_ideal(s, {us(10), us(20), {}, us(1)}, {});
  CHECK(sends - free >= us(54 * 2));
  CHECK(sends - free < us(3 * 64 * 2));
}
