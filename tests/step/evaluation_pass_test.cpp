#include <doctest/doctest.h>

#include <vector>

#include "step/evaluation_pass.h"

using megasim::Time;
using megasim::step::build_schedule;
using megasim::step::evaluation_iteration;
using megasim::step::ExecutorConfig;
using megasim::step::forward_only;
using megasim::step::Pass;
using megasim::step::StageCosts;
using megasim::workload::Schedule;

namespace {

// `pp` stages of one chunk whose forward pass takes `forward` (of it `tp` exposed TP
// communication) and whose activation send takes `send`.
std::vector<StageCosts> stages(int pp, Time forward, Time tp, Time send) {
  StageCosts c;
  c.forward = {forward};
  c.forward_tp = {tp};
  c.backward = {forward * 2.0};
  c.backward_tp = {Time::zero()};
  c.pp_activation = send;
  return std::vector<StageCosts>(static_cast<std::size_t>(pp), c);
}

}  // namespace

TEST_CASE("evaluation: the forward-only schedule keeps every forward pass in training order") {
  const auto s = build_schedule(Schedule::kInterleaved, 4, 2, 8);
  const auto f = forward_only(s);
  for (std::size_t stage = 0; stage < s.order.size(); ++stage) {
    std::vector<megasim::step::PassId> forwards;
    for (const auto& p : s.order[stage])
      if (p.pass == Pass::kForward) forwards.push_back(p);
    CHECK(f.order[stage] == forwards);
    CHECK(f.order[stage].size() == 16u);
  }
}

TEST_CASE("evaluation: a forward-only iteration is the forwards of the last stage after the fill") {
  // 2 stages, 4 micro-batches, forward 1 ms, send 0.1 ms: stage 1 starts its first forward at
  // 1.1 ms and runs its four back to back, ending at 5.1 ms.
  const auto s = build_schedule(Schedule::kOneFOneB, 2, 1, 4);
  ExecutorConfig cfg;
  cfg.pp_overlap = true;
  const auto c = stages(2, Time::from_ms(1), Time::zero(), Time::from_us(100));
  CHECK(evaluation_iteration(s, c, cfg) == Time::from_us(5100));

  SUBCASE("a blocking exchange after every forward adds its host cost to each") {
    // Each forward takes 1.2 ms: stage 0 ends them at 1.2, 2.4, 3.6, 4.8 ms; stage 1 starts at
    // 1.3, then runs back to back from 2.5, and its last ends at 4.9 + 1.2 = 6.1 ms.
    cfg.pp_overlap = false;
    cfg.blocking_p2p_overhead = Time::from_us(200);
    CHECK(evaluation_iteration(s, c, cfg) == Time::from_us(6100));
  }
  SUBCASE("the slowest GPU paces the compute, not the exposed TP communication") {
    // Forward 1 ms of which 0.5 ms TP: 0.5 × 1.1 + 0.5 = 1.05 ms per pass; 5 passes on the
    // critical path plus the send.
    cfg.slowest_gpu = 0.1;
    const auto tp = stages(2, Time::from_ms(1), Time::from_us(500), Time::from_us(100));
    CHECK(evaluation_iteration(s, tp, cfg) == Time::from_us(5 * 1050 + 100));
    // Nor a ZeRO-3 gather's exposed wait: 0.25 ms TP and 0.25 ms DP of the 1 ms pass.
    auto dp = stages(2, Time::from_ms(1), Time::from_us(250), Time::from_us(100));
    for (auto& k : dp) k.forward_dp = {Time::from_us(250)};
    CHECK(evaluation_iteration(s, dp, cfg) == Time::from_us(5 * 1050 + 100));
  }
}

TEST_CASE("evaluation: one stage runs its forward passes and nothing else") {
  const auto s = build_schedule(Schedule::kOneFOneB, 1, 1, 6);
  ExecutorConfig cfg;
  CHECK(evaluation_iteration(s, stages(1, Time::from_ms(2), Time::zero(), Time::zero()), cfg) ==
        Time::from_ms(12));
}
