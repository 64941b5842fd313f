#include <doctest/doctest.h>

#include <stdexcept>

#include <algorithm>
#include <set>
#include <string>
#include <tuple>

#include "engine/error.h"
#include "step/pipeline_schedule.h"

using megasim::Time;
using megasim::step::blocking_p2p_program;
using megasim::step::build_schedule;
using megasim::step::dependency;
using megasim::step::ProgramStep;
using megasim::step::warmup_forwards;
using megasim::step::IdealTimes;
using megasim::step::Pass;
using megasim::step::PassId;
using megasim::step::simulate_ideal;
using megasim::workload::Schedule;

namespace {
// Every stage runs every (pass, micro-batch, chunk) exactly once.
void check_complete(const megasim::step::PipelineSchedule& s) {
  const int passes = s.split_backward() ? 3 : 2;
  for (const auto& order : s.order) {
    CHECK(order.size() == static_cast<std::size_t>(passes * s.vpp * s.micro_batches));
    std::set<std::tuple<int, int, int>> seen;
    for (const auto& p : order) {
      CHECK(seen.insert({static_cast<int>(p.pass), p.micro_batch, p.chunk}).second);
    }
  }
}
}  // namespace

TEST_CASE("schedule: 1F1B bubble is (p-1)/m with ideal costs") {
  // Makespan (m + p − 1)(tf + tb); busy m(tf + tb); bubble (p − 1)/m.
  for (auto [p, m] : {std::pair{4, 8}, std::pair{8, 32}, std::pair{8, 8}, std::pair{2, 3}}) {
    auto s = build_schedule(Schedule::kOneFOneB, p, 1, m);
    check_complete(s);
    auto r = simulate_ideal(s, {Time::from_us(10), Time::from_us(20), {}, {}});
    CHECK(r.bubble_fraction == doctest::Approx(double(p - 1) / m));
    CHECK(r.makespan == Time::from_us(30.0 * (m + p - 1)));
  }
}

TEST_CASE("schedule: GPipe has the same bubble as 1F1B") {
  auto s = build_schedule(Schedule::kGpipe, 4, 1, 8);
  check_complete(s);
  auto r = simulate_ideal(s, {Time::from_us(10), Time::from_us(20), {}, {}});
  CHECK(r.bubble_fraction == doctest::Approx(3.0 / 8));
}

TEST_CASE("schedule: interleaved bubble is (p-1)/(v m) with ideal costs") {
  // Each chunk does 1/v of the stage's work: tf/v and tb/v per chunk-pass.
  for (auto [p, v, m] : {std::tuple{4, 2, 8}, std::tuple{8, 6, 32}, std::tuple{4, 3, 4},
                         std::tuple{8, 3, 16}}) {
    auto s = build_schedule(Schedule::kInterleaved, p, v, m);
    check_complete(s);
    auto r = simulate_ideal(s, {Time::from_us(60.0 / v), Time::from_us(120.0 / v), {}, {}});
    INFO("p=", p, " v=", v, " m=", m);
    CHECK(r.bubble_fraction == doctest::Approx(double(p - 1) / (v * m)).epsilon(1e-6).scale(0));
  }
}

TEST_CASE("schedule: interleaved follows Megatron's ordering on a small case") {
  // p = 2, v = 2, m = 4, stage 0: warm-up (2−0−1)·2 + (2−1)·2 = 4 chunk-forwards:
  // k = 0..3 -> (mb 0, c0) (mb 1, c0) (mb 0, c1) (mb 1, c1); then F k=4 (mb 2, c0), B k=0 (mb 0,
  // c1) ...
  auto s = build_schedule(Schedule::kInterleaved, 2, 2, 4);
  const auto& o = s.order[0];
  CHECK(o[0] == PassId{Pass::kForward, 0, 0});
  CHECK(o[1] == PassId{Pass::kForward, 1, 0});
  CHECK(o[2] == PassId{Pass::kForward, 0, 1});
  CHECK(o[3] == PassId{Pass::kForward, 1, 1});
  CHECK(o[4] == PassId{Pass::kForward, 2, 0});
  CHECK(o[5] == PassId{Pass::kBackward, 0, 1});
}

TEST_CASE("schedule: a micro-batch group larger than pp runs each chunk on that many in a row") {
  // p = 2, v = 2, m = 8, group 4 (Megatron-Core's micro-batch group, Llama 3's N): stage 0's
  // warm-up is (2−0−1)·2 + (2−1)·4 = 6 chunk-forwards, mb 0..3 of chunk 0 then mb 0..1 of
  // chunk 1; k = 6 is (mb 2, c1), then the first backward, (mb 0, c1). No deadlock, and more
  // micro-batches in flight than Megatron's group of pp (4 forwards before the first backward).
  auto s = build_schedule(Schedule::kInterleaved, 2, 2, 8, 4);
  check_complete(s);
  const auto& o = s.order[0];
  for (int mb = 0; mb < 4; ++mb) CHECK(o[static_cast<std::size_t>(mb)] == PassId{Pass::kForward, mb, 0});
  CHECK(o[4] == PassId{Pass::kForward, 0, 1});
  CHECK(o[5] == PassId{Pass::kForward, 1, 1});
  CHECK(o[6] == PassId{Pass::kForward, 2, 1});
  CHECK(o[7] == PassId{Pass::kBackward, 0, 1});
  CHECK(warmup_forwards(s, 0) == 6);
  CHECK(warmup_forwards(build_schedule(Schedule::kInterleaved, 2, 2, 8), 0) == 4);
  CHECK_NOTHROW(simulate_ideal(s, {Time::from_us(10), Time::from_us(20), {}, {}}));
  CHECK_THROWS_AS(build_schedule(Schedule::kInterleaved, 2, 2, 6, 4), std::invalid_argument);
}

TEST_CASE("schedule: a single group over pp has the capped warm-up, one of pp runs all forwards") {
  // Megatron-LM's `num_microbatches == pipeline_parallel_size` rule runs every forward first;
  // a group over pp exists only in Megatron-Core 0.10+, which dropped it: p = 4, v = 2,
  // m = group = 8 warms up (4−s−1)·2 + (2−1)·8 = 14, 12, 10, 8 chunk-forwards, not all 16
  // (until 2026-12-03 megasim ran all 16 first).
  const auto big = build_schedule(Schedule::kInterleaved, 4, 2, 8, 8);
  check_complete(big);
  for (int s = 0; s < 4; ++s) CHECK(warmup_forwards(big, s) == (4 - s - 1) * 2 + 8);
  const auto pp_group = build_schedule(Schedule::kInterleaved, 4, 2, 4);
  for (int s = 0; s < 4; ++s) CHECK(warmup_forwards(pp_group, s) == 8);
}

TEST_CASE("schedule: zero-bubble H1 cuts the 1F1B bubble to about a third when F B W are equal") {
  // ZB-H1's bubble is (p − 1)(tF + tB − tW) against 1F1B's (p − 1)(tF + tB + tW) when B+W is
  // 1F1B's backward (Qi et al.): with equal passes, a third.
  const int p = 4, m = 16;
  auto zb = build_schedule(Schedule::kZeroBubble, p, 1, m);
  check_complete(zb);
  const Time t = Time::from_us(10);
  auto r = simulate_ideal(zb, {t, t, t, {}});
  auto base = simulate_ideal(build_schedule(Schedule::kOneFOneB, p, 1, m), {t, t * 2, {}, {}});
  const double zb_bubble = (r.makespan - r.busy_per_stage).to_us();
  const double fb_bubble = (base.makespan - base.busy_per_stage).to_us();
  CHECK(fb_bubble == doctest::Approx((p - 1) * 30.0));
  CHECK(zb_bubble == doctest::Approx((p - 1) * 10.0));
}

TEST_CASE("schedule: point-to-point latency lengthens the pipeline fill") {
  auto s = build_schedule(Schedule::kOneFOneB, 4, 1, 8);
  auto a = simulate_ideal(s, {Time::from_us(10), Time::from_us(20), {}, {}});
  auto b = simulate_ideal(s, {Time::from_us(10), Time::from_us(20), {}, Time::from_us(1)});
  // Fill and drain each cross p − 1 = 3 stage boundaries, and the steady state's exchanges
  // between neighbours lie on the critical path too: 16 boundaries in all (as simulated on
  // 2026-12-03), 1 us each. A latency charged twice a send would give 32 us, none 0.
  CHECK((b.makespan - a.makespan) == Time::from_us(16));
}

TEST_CASE("schedule: invalid combinations are input errors") {
  CHECK_THROWS_AS(build_schedule(Schedule::kInterleaved, 4, 2, 6), std::invalid_argument);
  CHECK_THROWS_AS(build_schedule(Schedule::kOneFOneB, 4, 2, 8), std::invalid_argument);
  CHECK_THROWS_AS(build_schedule(Schedule::kOneFOneB, 0, 1, 8), std::invalid_argument);
}

TEST_CASE("schedule: Megatron-LM's blocking program sends and receives every boundary once") {
  for (auto [kind, p, v, m] : {std::tuple{Schedule::kOneFOneB, 4, 1, 8},
                               std::tuple{Schedule::kInterleaved, 4, 2, 8},
                               std::tuple{Schedule::kInterleaved, 3, 3, 3},
                               std::tuple{Schedule::kGpipe, 3, 1, 4},
                               std::tuple{Schedule::kZeroBubble, 4, 1, 8}}) {
    const auto s = build_schedule(kind, p, v, m);
    for (int stage = 0; stage < p; ++stage) {
      CAPTURE(stage);
      const auto program = blocking_p2p_program(s, stage);
      std::vector<PassId> run, sent, received;
      for (const auto& step : program) {
        if (!step.exchange) {
          run.push_back(step.pass);
          continue;
        }
        // Only the interleaved schedule's helpers synchronise with nothing to exchange.
        if (kind != Schedule::kInterleaved) CHECK((!step.sends.empty() || !step.recvs.empty()));
        for (const auto& q : step.sends) {  // a pass already run
          CHECK(std::find(run.begin(), run.end(), q) != run.end());
          sent.push_back(q);
        }
        for (const auto& q : step.recvs) {  // a pass not run yet
          CHECK(std::find(run.begin(), run.end(), q) == run.end());
          received.push_back(q);
        }
      }
      CHECK(run == s.order[stage]);
      std::size_t crossing_in = 0;
      for (const auto& q : s.order[stage]) crossing_in += dependency(s, stage, q).crosses_stages;
      CHECK(received.size() == crossing_in);
      // Every forward but the last virtual stage's, every backward but the first's, leaves.
      std::size_t leaving = 0;
      for (const auto& q : s.order[stage]) {
        const int vs = s.virtual_stage(stage, q.chunk);
        leaving += (q.pass == Pass::kForward && vs < p * v - 1) ||
                   (q.pass == Pass::kBackward && vs > 0);
      }
      CHECK(sent.size() == leaving);
    }
  }
  // The interleaved steady state exchanges once per (F, B) pair: a middle stage of p = 4,
  // v = 2, m = 8 (16 chunk-passes each way, 8 warm-up) makes its first receive, one exchange
  // after each of the 8 warm-up forwards, the 8 pairs and the 8 cool-down backwards.
  const auto s = build_schedule(Schedule::kInterleaved, 4, 2, 8);
  const auto program = blocking_p2p_program(s, 1);
  const auto exchanges = std::count_if(program.begin(), program.end(),
                                       [](const ProgramStep& x) { return x.exchange; });
  CHECK(warmup_forwards(s, 1) == 8);
  CHECK(exchanges == 1 + 8 + 8 + 8);
}

TEST_CASE("schedule: all-warm-up interleaved receives the first gradient in a call of its own") {
  // With m = pp every forward is warm-up: the last forward's send_forward_recv_forward and
  // the first backward's recv_backward are two calls. Otherwise the last warm-up exchange
  // sends a forward and receives the first backward's gradient together.
  const auto sends_forward_receives_backward = [](const std::vector<ProgramStep>& program) {
    return std::any_of(program.begin(), program.end(), [](const ProgramStep& x) {
      const bool f = std::any_of(x.sends.begin(), x.sends.end(),
                                 [](const PassId& q) { return q.pass == Pass::kForward; });
      const bool b = std::any_of(x.recvs.begin(), x.recvs.end(),
                                 [](const PassId& q) { return q.pass == Pass::kBackward; });
      return f && b;
    });
  };
  for (int stage = 0; stage < 4; ++stage) {
    CAPTURE(stage);
    CHECK_FALSE(sends_forward_receives_backward(
        blocking_p2p_program(build_schedule(Schedule::kInterleaved, 4, 2, 4), stage)));
    CHECK(sends_forward_receives_backward(
        blocking_p2p_program(build_schedule(Schedule::kInterleaved, 4, 2, 8), stage)));
  }
}
