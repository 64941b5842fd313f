#include <doctest/doctest.h>

#include <tuple>
#include <vector>

#include "stage_costs.h"
#include "step/executor.h"
#include "step/pipeline_schedule.h"

using megasim::Time;
using namespace megasim::step;
using megasim::workload::Schedule;

namespace {
Time us(double v) { return Time::from_us(v); }

// Every stage alike: F = 10 us, B = 20 us per chunk-pass (split by v), no TP, no comm.
std::vector<StageCosts> uniform(int pp, int v, Time f = Time::from_us(10), Time b = Time::from_us(20)) {
  return megasim::test::uniform_costs(pp, v, f, b);
}

// One stage of one chunk, F = 10 us and B = 20 us, with its DP all-gather and reduce-scatter.
std::vector<StageCosts> one_stage_with_dp(Time all_gather, Time reduce_scatter) {
  auto costs = uniform(1, 1);
  costs[0].dp_all_gather = {all_gather};
  costs[0].dp_reduce_scatter = {reduce_scatter};
  return costs;
}
// The stage's breakdown terms summed: the step, when they account for all of it.
Time terms_sum(const StageBreakdown& b) {
  return b.compute + b.slowest_gpu + b.power_cap + b.tp_exposed + b.pp_exposed + b.dp_exposed +
         b.bubble + b.optimizer + b.data_loading;
}
}  // namespace

TEST_CASE("executor: with free communication it reproduces the ideal pipeline") {
  for (auto [kind, p, v, m] : {std::tuple{Schedule::kOneFOneB, 4, 1, 8},
                               std::tuple{Schedule::kInterleaved, 4, 2, 8},
                               std::tuple{Schedule::kGpipe, 3, 1, 5}}) {
    auto s = build_schedule(kind, p, v, m);
    auto costs = uniform(p, v);
    auto ideal = simulate_ideal(s, {costs[0].forward[0], costs[0].backward[0], {}, {}});
    auto r = execute_step(s, costs, ExecutorConfig{});
    CHECK(r.step_time == ideal.makespan);
    // Stage 0's idle time is all bubble: makespan − busy.
    CHECK(r.stages[0].bubble == ideal.makespan - ideal.busy_per_stage);
  }
}

TEST_CASE("executor: Megatron-LM's blocking exchanges wait for both sides and pay a sync each") {
  // 1F1B, p = 2, m = 2, F = 10, B = 20, each message 1 us. Stage 1 posts the receive of F0 at
  // 0. Stage 0: F0 [0,10], sends it [10,11]; F1 [11,21], then one exchange (send F1, receive
  // B0's gradient) posted at 21. Stage 1: F0 [11,21], B0 [21,41], exchange (send B0, receive
  // F1) posted at 41: both messages [41,42]. Stage 1: F1 [42,52], B1 [52,72], sends B1 [72,73]
  // to stage 0, which ran B0 [42,62] and posted the receive at 62; B1 [73,93]. Step = 93 us.
  auto s = build_schedule(Schedule::kOneFOneB, 2, 1, 2);
  auto costs = uniform(2, 1);
  for (auto& c : costs) c.pp_activation = c.pp_gradient = us(1);
  ExecutorConfig cfg;
  auto blocking = execute_step(s, costs, cfg);
  CHECK(blocking.step_time == us(93));
  // A 2 us synchronisation after every exchange: stage 1's first receive ends at 11 + 2, its
  // F0 [13,23], B0 [23,43]; the middle exchange [43,44] + 2; F1 [46,56], B1 [56,76]; the last
  // message [76,77] + 2; stage 0's B1 [79,99].
  cfg.blocking_p2p_overhead = us(2);
  CHECK(execute_step(s, costs, cfg).step_time == us(99));
  // Async sends free the sender: the step gets shorter.
  cfg.pp_overlap = true;
  auto async = execute_step(s, costs, cfg);
  CHECK(async.step_time < blocking.step_time);
}

TEST_CASE("executor: data loading before the first pass delays the pipeline by its length") {
  auto s = build_schedule(Schedule::kOneFOneB, 2, 1, 2);
  auto costs = uniform(2, 1);
  const Time ideal = simulate_ideal(s, {us(10), us(20), {}, {}}).makespan;
  for (auto& c : costs) c.data_loading = us(5);  // first and last stage both read the batch
  auto r = execute_step(s, costs, ExecutorConfig{});
  CHECK(r.step_time == ideal + us(5));
  CHECK(r.stages[0].data_loading == us(5));
}

TEST_CASE("executor: blocking exchanges never deadlock Megatron-LM's schedules") {
  for (int p = 1; p <= 5; ++p) {
    for (int v = 1; v <= 3; ++v) {
      for (int m : {p, 2 * p, 3 * p}) {
        const Schedule kind = v > 1 ? Schedule::kInterleaved : Schedule::kOneFOneB;
        CAPTURE(p);
        CAPTURE(v);
        CAPTURE(m);
        auto s = build_schedule(kind, p, v, m);
        auto costs = uniform(p, v);
        for (auto& c : costs) c.pp_activation = c.pp_gradient = us(1);
        ExecutorConfig cfg;
        cfg.blocking_p2p_overhead = us(0.5);
        Time step;
        CHECK_NOTHROW(step = execute_step(s, costs, cfg).step_time);
        // Never faster than the same schedule with free communication.
        const IdealTimes no_comm{costs[0].forward[0], costs[0].backward[0], {}, {}};
        CHECK(step >= simulate_ideal(s, no_comm).makespan);
      }
    }
  }
}

TEST_CASE("executor: DP overlap hides all but the last chunk's reduce-scatter and the first all-gather") {
  const int p = 2, v = 2, m = 4;
  auto s = build_schedule(Schedule::kInterleaved, p, v, m);
  auto costs = uniform(p, v);
  for (auto& c : costs) {
    c.dp_reduce_scatter.assign(v, us(5));
    c.dp_all_gather.assign(v, us(5));
    c.optimizer = us(3);
  }
  ExecutorConfig cfg;
  auto base = execute_step(s, costs, cfg);
  auto ideal = simulate_ideal(s, {us(5), us(10), {}, {}});
  // Megatron-LM: RS of both chunks (10) + optimizer (3) + AG of both chunks (10) after the
  // pipeline.
  CHECK(base.step_time == ideal.makespan + us(23));
  CHECK(base.stages[0].dp_exposed == us(20));
  cfg.dp_overlap = true;
  auto overlap = execute_step(s, costs, cfg);
  // The first chunk's all-gather (5) before the first forward and the last chunk's
  // reduce-scatter (5) after the last backward stay out; the rest hides under the pipeline
  // (only "less than 20" was held until a test audit, 2026-12-07).
  CHECK(overlap.stages[0].dp_exposed == us(10));
  CHECK(overlap.step_time == ideal.makespan + us(13));
}

TEST_CASE("executor: bucketed DP overlap gathers while the first forward runs, scatters during the last backward") {
  // One stage, one micro-batch: F = 10 us, B = 20 us; all-gather and reduce-scatter 8 us each.
  auto s = build_schedule(Schedule::kOneFOneB, 1, 1, 1);
  auto costs = one_stage_with_dp(us(8), us(8));
  ExecutorConfig cfg;
  cfg.dp_overlap = true;
  // Chunk-wise (MegaScale): AG [0,8], F [8,18], B [18,38], RS [38,46].
  auto chunked = execute_step(s, costs, cfg);
  CHECK(chunked.step_time == us(46));
  CHECK(chunked.stages[0].dp_exposed == us(16));
  // Four buckets of 2 us: F starts on the first [2,12] (the last bucket is in at 8, its
  // quarter of F could end at 10.5 < 12); B [12,32] sends buckets at 17, 22, 27 and 32, each
  // [t, t+2]: the step ends at 34, with 2 us exposed at each end.
  costs[0].dp_buckets = {4};
  auto bucketed = execute_step(s, costs, cfg);
  CHECK(bucketed.step_time == us(34));
  CHECK(bucketed.stages[0].dp_exposed == us(4));
  // A slow all-gather (40 us, buckets of 10): F starts at 10 and its compute is done at 20,
  // but its last quarter needs the last bucket (in at 40): F ends at 42.5. B [42.5,62.5], the
  // last reduce-scatter bucket [62.5,64.5].
  costs[0].dp_all_gather = {us(40)};
  auto gated = execute_step(s, costs, cfg);
  CHECK(gated.step_time == us(64.5));
  CHECK(gated.stages[0].dp_exposed == us(10 + 22.5 + 2));
  CHECK(gated.stages[0].compute == us(30));
}

TEST_CASE("executor: ZeRO-2 reduce-scatters every backward pass's gradients, not only the last's") {
  // One stage, three micro-batches: F = 10 us, B = 20 us; all-gather 8 us, reduce-scatter 40.
  auto s = build_schedule(Schedule::kOneFOneB, 1, 1, 3);
  auto costs = one_stage_with_dp(us(8), us(40));
  ExecutorConfig cfg;
  cfg.dp_overlap = true;
  // ZeRO-1: AG [0,8], F B F B F B [8,98], one RS [98,138].
  auto once = execute_step(s, costs, cfg);
  CHECK(once.step_time == us(138));
  CHECK(once.stages[0].dp_exposed == us(48));
  // ZeRO-2: RS after B1 [38,78] and after B2, queued behind it [78,118], both beside compute;
  // B3 ends at 98 and its RS waits for the DP stream [118,158].
  cfg.reduce_every_backward = true;
  auto every = execute_step(s, costs, cfg);
  CHECK(every.step_time == us(158));
  CHECK(every.stages[0].dp_exposed == us(8 + 60));
  CHECK(every.stages[0].compute == us(90));
  // Without overlap each reduce-scatter holds the next pass: F B [0,30], RS [30,70], F B
  // [70,100], RS [100,140], F B [140,170], then the last RS [170,210] and the AG [210,218].
  cfg.dp_overlap = false;
  auto blocking = execute_step(s, costs, cfg);
  CHECK(blocking.step_time == us(218));
  CHECK(blocking.stages[0].dp_exposed == us(128));
  CHECK(blocking.stages[0].compute == us(90));
}

TEST_CASE("executor: ZeRO-2's reduce-scatters go out bucket by bucket during every backward") {
  // As above, the reduce-scatter in two buckets of 20 us, each sent when the backward pass has
  // produced it (half-way through, and at its end), in every backward pass, not at the end of
  // all but the last (until 2026-12-06: 158 us, 68 exposed). AG [0,8]; F1 [8,18], B1 [18,38]:
  // buckets [28,48], [48,68]; F2 [38,48], B2 [48,68]: buckets due at 58 and 68 run [68,88],
  // [88,108]; F3 [68,78], B3 [78,98]: due at 88 and 98, run [108,128], [128,148].
  auto s = build_schedule(Schedule::kOneFOneB, 1, 1, 3);
  auto costs = one_stage_with_dp(us(8), us(40));
  costs[0].dp_reduce_buckets = {2};
  ExecutorConfig cfg;
  cfg.dp_overlap = true;
  cfg.reduce_every_backward = true;
  const auto r = execute_step(s, costs, cfg);
  CHECK(r.step_time == us(148));
  CHECK(r.stages[0].dp_exposed == us(8 + 50));
  CHECK(r.stages[0].compute == us(90));
  CHECK(terms_sum(r.stages[0]) == r.step_time);
}

TEST_CASE("executor: interference slows compute only while communication runs beside it") {
  // One stage, one chunk, m = 1: AG (prefetch) 10 us, then F 10, B 20; RS of 10 starts after
  // B. With dp_overlap the F waits for the AG (nothing overlaps): no slowdown at all.
  auto s = build_schedule(Schedule::kOneFOneB, 1, 1, 1);
  auto costs = one_stage_with_dp(us(10), us(10));
  ExecutorConfig cfg;
  cfg.dp_overlap = true;
  cfg.interference = 0.5;
  CHECK(execute_step(s, costs, cfg).step_time == us(50));
  // Two micro-batches, two chunks on one stage: chunk 1's backward ends first and its RS (10)
  // overlaps chunk 0's backward, which then runs at 1/1.5 speed for that while.
  auto s2 = build_schedule(Schedule::kInterleaved, 1, 2, 1);
  auto c2 = uniform(1, 2);
  c2[0].dp_reduce_scatter = {us(10), us(10)};
  ExecutorConfig overlap;
  overlap.dp_overlap = true;
  auto no_interf = execute_step(s2, c2, overlap);
  overlap.interference = 0.5;
  auto with_interf = execute_step(s2, c2, overlap);
  CHECK(with_interf.step_time > no_interf.step_time);
  // What the slowdown adds is compute time: the terms still add up to the step.
  const StageBreakdown& b = with_interf.stages[0];
  CHECK(terms_sum(b) == with_interf.step_time);
  CHECK(b.compute - no_interf.stages[0].compute == with_interf.step_time - no_interf.step_time);
}

TEST_CASE("executor: a collective beside a pass slows its kernels, not its exposed TP wait") {
  // One stage, two chunks, m = 1, interference 0.5: F c0 [0,5], F c1 [5,10], B c1 [10,20], its
  // reduce-scatter (10 us) [20,30] beside B c0, 20 us of which 10 are an exposed TP wait. Only
  // the other half slows: the pass runs at 1/(1 + 0.5 x 0.5) = 0.8 there, 8 us done by 30, the
  // 12 left by 42; chunk 0's reduce-scatter (1 us) ends the step at 43. The whole pass slowed
  // (until 2026-12-05) ran at 1/1.5: 6 2/3 us done by 30, the end at 43 1/3 and the step 44 1/3.
  auto s = build_schedule(Schedule::kInterleaved, 1, 2, 1);
  auto costs = uniform(1, 2);
  costs[0].backward = {us(20), us(10)};
  costs[0].backward_tp = {us(10), us(0)};
  costs[0].dp_reduce_scatter = {us(1), us(10)};
  ExecutorConfig cfg;
  cfg.dp_overlap = true;
  cfg.interference = 0.5;
  const auto r = execute_step(s, costs, cfg);
  CHECK(r.step_time == us(43));
  const StageBreakdown& b = r.stages[0];
  CHECK(b.tp_exposed == us(10));
  CHECK(terms_sum(b) == r.step_time);
}

TEST_CASE("executor: full and folded agree on a symmetric plan and a straggler slows everyone") {
  const int p = 4, v = 2, m = 8, dp = 6, tp = 2;
  auto s = build_schedule(Schedule::kInterleaved, p, v, m);
  auto costs = uniform(p, v);
  for (auto& c : costs) {
    c.pp_activation = c.pp_gradient = us(0.5);
    c.dp_reduce_scatter.assign(v, us(7));
    c.dp_all_gather.assign(v, us(4));
    c.optimizer = us(2);
  }
  ExecutorConfig cfg;
  cfg.pp_overlap = cfg.dp_overlap = true;
  cfg.interference = 0.1;
  cfg.tp = tp;
  cfg.dp = dp;
  auto folded = execute_step(s, costs, cfg);
  cfg.full = true;
  auto full = execute_step(s, costs, cfg);
  CHECK(full.step_time == folded.step_time);
  CHECK(full.ranks_simulated == p * dp * tp);
  CHECK(folded.ranks_simulated == p);
  // One rank of data-parallel replica 3, stage 1, is 10 % slower in forward passes: its DP
  // group waits for it, and so the whole step is longer.
  cfg.rank_slowdown.assign(p * dp * tp, 1.0);
  cfg.rank_slowdown[megasim::workload::RankIndex(tp, p, dp).linear(1, 3, 1)] = 1.1;
  auto slow = execute_step(s, costs, cfg);
  CHECK(slow.step_time > full.step_time);
}

TEST_CASE("executor: zero-bubble H1 runs split backward passes and shrinks the bubble") {
  // Balanced stages, F = B = W = 10 us: 1F1B (backward = B + W = 20 us) has a bubble of
  // (p − 1)·30 us, ZB-H1 of (p − 1)·10 us (Qi et al.).
  const int p = 4, m = 16;
  auto costs = uniform(p, 1, us(10), us(20));
  auto base = execute_step(build_schedule(Schedule::kOneFOneB, p, 1, m), costs, ExecutorConfig{});
  for (auto& c : costs) {
    c.backward = {us(10)};
    c.weight_grad = {us(10)};
  }
  auto zb = execute_step(build_schedule(Schedule::kZeroBubble, p, 1, m), costs, ExecutorConfig{});
  CHECK(base.step_time == us(30.0 * (m + p - 1)));
  CHECK(zb.step_time == us(30.0 * m + 10.0 * (p - 1)));
}

TEST_CASE("executor: a rank's slowdown lands on the stage and replica its RankIndex names") {
  // 1F1B, p = 2, dp = 2, tp = 1, m = 2, F = 10 us, B = 20 us, free communication. Rank 2 is
  // (stage 1, d = 0) in the one rank order r = (stage·dp + d)·tp + t; its forward passes take
  // twice as long (20 us). Stage 0: F0 [0,10], F1 [10,20]. Stage 1: F0 [10,30], B0 [30,50].
  // Stage 0: B0 [50,70]. Stage 1: F1 [50,70], B1 [70,90]. Stage 0: B1 [90,110]: 110 us.
  // Slowing stage 0 instead (the old executor's reading of index 2 as (d = 1, stage 0)) gives
  // 100 us: F0 [0,20], F1 [20,40]; stage 1 F0 [20,30], B0 [30,50], F1 [50,60], B1 [60,80];
  // stage 0 B0 [50,70], B1 [80,100].
  const int p = 2, dp = 2, m = 2;
  const megasim::workload::RankIndex ranks(1, p, dp);
  REQUIRE(ranks.linear(1, 0, 0) == 2);
  auto s = build_schedule(Schedule::kOneFOneB, p, 1, m);
  ExecutorConfig cfg;
  cfg.pp_overlap = true;
  cfg.full = true;
  cfg.dp = dp;
  cfg.rank_slowdown.assign(static_cast<std::size_t>(ranks.size()), 1.0);
  cfg.rank_slowdown[ranks.linear(1, 0, 0)] = 2.0;
  CHECK(execute_step(s, uniform(p, 1), cfg).step_time == us(110));
  cfg.rank_slowdown.assign(static_cast<std::size_t>(ranks.size()), 1.0);
  cfg.rank_slowdown[ranks.linear(0, 1, 0)] = 2.0;
  CHECK(execute_step(s, uniform(p, 1), cfg).step_time == us(100));
}

TEST_CASE("executor: a straggler slows its kernels, not its exposed TP time") {
  // One stage, one chunk, m = 1: F = 10 us of which 4 us is exposed TP (NVLink waits), B = 20
  // us. The rank's forward passes run 2x slower: the 6 us of kernels take 12, the 4 us of TP
  // stay 4: F 16 us, step 36 us, compute 12 + 20 = 32 us (until 2026-12-04 the whole 10 us
  // doubled: a 40 us step, 36 us of it booked as compute).
  auto s = build_schedule(Schedule::kOneFOneB, 1, 1, 1);
  auto costs = uniform(1, 1);
  costs[0].forward_tp = {us(4)};
  ExecutorConfig cfg;
  cfg.full = true;
  cfg.rank_slowdown = {2.0};
  const auto r = execute_step(s, costs, cfg);
  CHECK(r.step_time == us(36));
  CHECK(r.stages[0].tp_exposed == us(4));
  CHECK(r.stages[0].compute == us(32));
}

TEST_CASE("executor: waiting for a chunk's parameters after its input came is DP time, not PP") {
  // Interleaved, p = 2, v = 2, m = 2, F = 5 and B = 10 us a chunk, sends of 1 us, each chunk's
  // parameter all-gather 50 us (one bucket, overlapped). Stage 0 runs chunk 0's forwards,
  // then waits for chunk 1's first input from stage 1; when it comes, chunk 1's all-gather is
  // still running. The input's own wait is bubble and 1 us sends: a few us of PP; the rest,
  // until the parameters come, DP (it was counted as PP: 41 us of PP, 50 of DP).
  auto s = build_schedule(Schedule::kInterleaved, 2, 2, 2);
  auto costs = uniform(2, 2);
  for (auto& c : costs) {
    c.pp_activation = us(1);
    c.pp_gradient = us(1);
    c.dp_all_gather.assign(2, us(50));
    c.dp_buckets.assign(2, 1);
  }
  ExecutorConfig cfg;
  cfg.pp_overlap = true;
  cfg.dp_overlap = true;
  cfg.dp = 3;
  const auto r = execute_step(s, costs, cfg);
  const auto& b = r.stages[0];
  INFO("pp ", b.pp_exposed.to_us(), " us, dp ", b.dp_exposed.to_us(), " us");
  CHECK(b.pp_exposed <= us(3));
  CHECK(b.dp_exposed >= us(70));
  CHECK(b.compute + b.bubble + b.pp_exposed + b.dp_exposed + b.tp_exposed + b.optimizer +
            b.data_loading + b.slowest_gpu ==
        b.end);
}

TEST_CASE("executor: a gradient bucket leaves when its share of the pass is done, however slowed") {
  // One stage, two chunks, one micro-batch, interference 0.5 (a pass runs at 1/1.5 beside
  // communication): F c0 [0,5], F c1 [5,10], B c1 [10,...], B c0 after it, each B 10 us of
  // work in two buckets. Chunk 1's reduce-scatter buckets take 2 us each; chunk 0's 30 us.
  auto s = build_schedule(Schedule::kInterleaved, 1, 2, 1);
  auto costs = uniform(1, 2);
  costs[0].dp_reduce_scatter = {us(60), us(4)};
  costs[0].dp_buckets = {2, 2};
  ExecutorConfig cfg;
  cfg.dp_overlap = true;
  cfg.interference = 0.5;
  // B c1: its first bucket leaves at half its work, 15, and runs [15,17] beside it (4/3 us
  // of work done there): B c1 ends at 20 2/3 and its last bucket runs [20 2/3, 22 2/3].
  // B c0 starts at 20 2/3 slowed until 22 2/3 (4/3 us done): its first bucket is due at 5 us
  // of work, 26 1/3, and runs [26 1/3, 56 1/3]; the last one after it, [56 1/3, 86 1/3].
  // Released on the pass's nominal length (until 2026-12-04), it left at 20 2/3 + 5 = 25 2/3,
  // before half the work was done, and the step ended 2/3 us early, at 85 2/3.
  const auto r = execute_step(s, costs, cfg);
  CHECK(r.step_time.to_us() == doctest::Approx(86.0 + 1.0 / 3).epsilon(1e-5));
  // The stage's terms still add up to the step.
  const StageBreakdown& b = r.stages[0];
  CHECK(terms_sum(b) == r.step_time);
}

TEST_CASE("executor: search's blocking makespan is the executor's own off the network") {
  // step::simulate_blocking_ideal (search's estimate of Megatron-LM's lock-step) against the
  // executor with the same pass, message and synchronisation times, for each schedule kind.
  for (const auto& sc : megasim::test::kScheduleCases) {
    INFO(sc.describe());
    const auto kind = sc.kind;
    const int p = sc.pp, v = sc.vpp;
    const auto s = build_schedule(kind, p, v, sc.micro_batches);
    auto costs = uniform(p, v, us(30), us(60));
    for (auto& c : costs) c.pp_activation = c.pp_gradient = us(3);
    if (kind == Schedule::kZeroBubble) {
      for (auto& c : costs) c.weight_grad.assign(v, us(10));
    }
    ExecutorConfig cfg;
    cfg.blocking_p2p_overhead = us(1);
    const IdealTimes t{costs[0].forward[0], costs[0].backward[0], costs[0].weight_grad[0], us(3)};
    CHECK(execute_step(s, costs, cfg).step_time == simulate_blocking_ideal(s, t, us(1)));
  }
}
