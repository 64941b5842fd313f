// The one rank index of a job: which (pipeline stage, data-parallel index, tensor-parallel
// index) job rank r is, always in Megatron-LM's order, TP innermost, then DP, then PP
// outermost (where the ranks sit is the plan's rank order, below):
//
//   r = (stage · dp + d) · tp + t
//
// With context parallelism Megatron-Core's order is TP, CP, DP, PP from the inside out
// (parallel_state.RankGenerator, order "tp-cp-ep-dp-pp"): the cp ranks of a replica sit between
// TP and DP, so `d` here runs over dp × cp, d = replica · cp + context rank. The ranks of one
// d hold the same layers; a CP group is cp consecutive d, and the gradient reduction spans all
// dp × cp of them, as Megatron-Core's data-parallel group "with context parallel" does.
//
// Placement (`placement[r]` is the GPU of rank r), pricing, straggler selection and the step
// executor's per-rank factors all index ranks through this type, so they cannot disagree.
// A plain value type; indices are asserted in range.
//
// The plan's rank order (ParallelPlan::rank_order) decides only where a rank sits: with
// Megatron-LM's TP, CP, DP, PP the job rank is its place in the placement's list of GPUs;
// with TP, CP, PP, DP (placement_slot) a pipeline's ranks are consecutive and the replicas
// outermost, and the placement is permuted so that rank r still indexes it in this order.
#pragma once

#include <cassert>
#include <cstdint>

#include "workload/parallel_plan.h"

namespace megasim::workload {

struct RankIndex {
  int tp = 1, pp = 1, dp = 1;

  RankIndex() = default;
  RankIndex(int tp_size, int pp_size, int dp_size) : tp(tp_size), pp(pp_size), dp(dp_size) {}
  explicit RankIndex(const ParallelPlan& p) : RankIndex(p.tp, p.pp, p.dp_cp()) {}

  std::int64_t size() const { return static_cast<std::int64_t>(tp) * pp * dp; }
  std::int64_t linear(int stage, int d, int t) const {
    assert(stage >= 0 && stage < pp && d >= 0 && d < dp && t >= 0 && t < tp);
    return (static_cast<std::int64_t>(stage) * dp + d) * tp + t;
  }
  int tp_of(std::int64_t r) const { return static_cast<int>(checked(r) % tp); }
  int dp_of(std::int64_t r) const { return static_cast<int>(checked(r) / tp % dp); }
  int stage_of(std::int64_t r) const { return static_cast<int>(checked(r) / tp / dp); }

 private:
  std::int64_t checked(std::int64_t r) const {
    assert(r >= 0 && r < size());
    return r;
  }
};

// Where rank (stage, d, t) sits in the placement's list of GPUs (consecutive servers or
// spread) under the plan's rank order; d = replica · cp + context rank, as RankIndex has it.
inline std::int64_t placement_slot(const ParallelPlan& p, int stage, int d, int t) {
  const RankIndex ranks(p);
  if (p.rank_order == RankOrder::kTpCpDpPp) return ranks.linear(stage, d, t);
  const std::int64_t replica = d / p.cp, context = d % p.cp;
  return ((replica * p.pp + stage) * p.cp + context) * p.tp + t;
}

}  // namespace megasim::workload
