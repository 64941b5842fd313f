#include <doctest/doctest.h>

#include <vector>

#include "stage_costs.h"
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

  SUBCASE("Megatron-LM's blocking exchanges hold both stages in lock-step") {
    // forward_only's program: stage 0 runs F, then a send it cannot leave until stage 1 has
    // posted its receive and the 0.1 ms message is through, then a 0.2 ms sync. Stage 1
    // posts its receive at 0, 2.3, 3.6 and 4.9 ms (after each forward of its own): the
    // exchanges end at 1.1, 2.4, 3.7, 5.0 ms, each then 0.2 ms of sync, and stage 1's last
    // forward runs 5.2 to 6.2 ms. (Until 2026-12-05 only the sync was added, after each
    // forward, as though a send never waited: 6.1 ms.)
    cfg.pp_overlap = false;
    cfg.blocking_p2p_overhead = Time::from_us(200);
    CHECK(evaluation_iteration(s, c, cfg) == Time::from_us(6200));
    // The batch read first on both stages (0.5 ms) starts the lock-step 0.5 ms later.
    auto loads = c;
    for (auto& k : loads) k.data_loading = Time::from_us(500);
    CHECK(evaluation_iteration(s, loads, cfg) == Time::from_us(6700));
  }
  SUBCASE("the batch is read before the first forward on the stages that read it") {
    // Until 2026-12-05 an evaluation read nothing: 5.1 ms whatever the loading.
    auto loads = c;
    loads.back().data_loading = Time::from_us(2000);  // stage 1 only: its input comes at 1.1
    CHECK(evaluation_iteration(s, loads, cfg) == Time::from_us(2000 + 4000));
    loads.front().data_loading = Time::from_us(500);
    CHECK(evaluation_iteration(s, loads, cfg) == Time::from_us(2000 + 4000));
    loads.back().data_loading = Time::zero();
    CHECK(evaluation_iteration(s, loads, cfg) == Time::from_us(5600));
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

TEST_CASE("evaluation: under blocking exchanges, the executor's forward-only step") {
  // The executor run on the forward-only schedule, off the network, with nothing after the
  // passes: the same lock-step (its programs are blocking_p2p_program's, as here).
  for (const auto& sc : megasim::test::kScheduleCases) {
    INFO(sc.describe());
    const int p = sc.pp, v = sc.vpp;
    const auto s = build_schedule(sc.kind, p, v, sc.micro_batches);
    // 30 us forward and 60 us backward a chunk.
    auto costs =
        megasim::test::uniform_costs(p, v, Time::from_us(30.0 * v), Time::from_us(60.0 * v));
    for (auto& c : costs) c.pp_activation = c.pp_gradient = Time::from_us(3);
    costs.front().data_loading = Time::from_us(7);
    costs.back().data_loading = Time::from_us(40);
    ExecutorConfig cfg;
    cfg.pp_overlap = false;
    cfg.blocking_p2p_overhead = Time::from_us(1);
    CHECK(evaluation_iteration(s, costs, cfg) ==
          megasim::step::execute_step(forward_only(s), costs, cfg).step_time);
  }
}
