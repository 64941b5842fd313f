// The embedding and logits head of the first and last pipeline stages, and ZeRO-3's
// per-layer parameter gathers and gradient scatters.
#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "workload/op_builders.h"

namespace megasim::workload::detail {

void append_embedding_forward(const LayerContext& c, std::vector<Op>& out) {
  const double full = hidden_bytes(c, c.tokens);
  add_memory(out, -1, "embedding lookup", Phase::kForward, hw::MemoryKernel::kEmbedding, full,
             full);
  // Vocab-parallel embedding: each rank holds a vocabulary shard, partial rows are summed.
  if (c.t > 1) {
    add_comm(out, -1,
             c.plan.sequence_parallel ? "embedding reduce-scatter" : "embedding all-reduce",
             Phase::kForward,
             c.plan.sequence_parallel ? CollectiveOp::kReduceScatter : CollectiveOp::kAllReduce,
             Group::kTp, full, false);
  }
  if (c.model.position == Position::kLearned) {
    add_memory(out, -1, "position embedding add", Phase::kForward, hw::MemoryKernel::kCopy,
               2.0 * norm_bytes(c), norm_bytes(c));
  }
  if (c.model.dropout) {
    add_memory(out, -1, "embedding dropout", Phase::kForward, hw::MemoryKernel::kCopy,
               norm_bytes(c), norm_bytes(c) + d(c.sp_tokens) * d(c.h));
  }
}

void append_embedding_backward(const LayerContext& c, std::vector<Op>& out) {
  if (c.model.dropout) {
    add_memory(out, -1, "embedding dropout", Phase::kBackward, hw::MemoryKernel::kCopy,
               norm_bytes(c) + d(c.sp_tokens) * d(c.h), norm_bytes(c));
  }
  if (c.t > 1 && c.plan.sequence_parallel) {
    add_comm(out, -1, "embedding grad all-gather", Phase::kBackward, CollectiveOp::kAllGather,
             Group::kTp, hidden_bytes(c, c.tokens), false);
  }
  // Scatter-add of the row gradients into the fp32 gradient of the vocabulary shard.
  const double grads = d(c.tokens) * d(c.h);
  add_memory(out, -1, "embedding grad scatter-add", Phase::kBackward, hw::MemoryKernel::kEmbedding,
             grads * (c.elem + 4.0), grads * 4.0);
}

void append_logits_forward(const LayerContext& c, std::vector<Op>& out) {
  add_memory(out, -1, "final norm", Phase::kForward, norm_kind(c), norm_bytes(c), norm_bytes(c));
  tp_enter_forward(c, out, -1, "logits input", Phase::kForward, Linear::kHead);
  const double exact = 2.0 * d(c.tokens) * d(c.h) * d(c.model.vocab) / d(c.t);
  linear_forward(c, out, -1, "logits", Phase::kForward, Linear::kHead, c.vocab_r, c.h, exact);
  const double logits = d(c.tokens) * d(c.vocab_r) * c.elem;
  add_memory(out, -1, "cross entropy", Phase::kForward, hw::MemoryKernel::kCrossEntropy, logits,
             d(c.tokens) * 4.0);
  if (c.t > 1) {
    // Vocab-parallel cross entropy: all-reduces of the row max, the sum of exponentials and
    // the target logit (fp32, one value per token each).
    for (const char* what : {"cross entropy max", "cross entropy sum", "cross entropy target"}) {
      add_comm(out, -1, fmt::format("{} all-reduce", what), Phase::kForward,
               CollectiveOp::kAllReduce, Group::kTp, d(c.tokens) * 4.0, false);
    }
  }
}

void append_logits_backward(const LayerContext& c, std::vector<Op>& out) {
  const double logits = d(c.tokens) * d(c.vocab_r) * c.elem;
  add_memory(out, -1, "cross entropy", Phase::kBackward, hw::MemoryKernel::kCrossEntropy, logits,
             logits);
  const double exact = 2.0 * d(c.tokens) * d(c.h) * d(c.model.vocab) / d(c.t);
  tp_regather_input(c, out, -1, "logits", Linear::kHead);
  dgrad_only(c, out, -1, "logits", Linear::kHead, c.vocab_r, c.h, exact);
  tp_enter_backward(c, out, -1, "logits input");
  wgrad_only(c, out, -1, "logits", Linear::kHead, c.vocab_r, c.h, exact);
  norm_backward(c, out, -1, "final norm");
}

namespace {

// The sizes (elements) a layer's ZeRO-3 collectives carry: one per tensor, or the layer's sum.
std::vector<std::int64_t> zero3_units(const LayerContext& c) {
  if (c.opts.shard_per_tensor) return rank_layer_parameter_tensors(c.model, static_cast<int>(c.t));
  return {rank_layer_parameters(c.model, static_cast<int>(c.t))};
}

}  // namespace

Group zero3_group(const LayerContext& c) {
  return c.plan.hybrid_shard() ? Group::kDpShard : Group::kDp;
}

namespace {

void add_gathers(const LayerContext& c, int layer, Phase phase,
                 const std::vector<std::int64_t>& units, std::vector<Op>& out) {
  for (const std::int64_t n : units) {
    if (c.opts.shard_per_tensor && n < c.opts.shard_persistence_threshold) continue;
    add_comm(out, layer, c.plan.zero3 ? "zero3 parameter all-gather" : "zero2 parameter all-gather",
             phase, CollectiveOp::kAllGather, zero3_group(c), d(n) * c.elem, false);
  }
}

}  // namespace

void append_zero3_gathers(const LayerContext& c, int layer, Phase phase, std::vector<Op>& out) {
  add_gathers(c, layer, phase, zero3_units(c), out);
}

bool zero3_gathers_for_backward(const LayerContext& c) {
  return c.plan.recompute != Recompute::kFull || c.opts.regather_after_recompute;
}

bool kept_for_backward(const LayerContext& c, SubModule s) {
  if (c.plan.recompute != Recompute::kFull) return false;
  const auto kept =
      workload::kept_for_backward(c.model, static_cast<int>(c.t), c.opts.shard_max_reuse_distance);
  return std::find(kept.begin(), kept.end(), s) != kept.end();
}

void fetch_sub_module(const LayerContext& c, int layer, Phase phase, SubModule s,
                      std::vector<Op>& out) {
  if (!c.plan.zero3 || !c.opts.shard_per_sub_module) return;
  if (phase == Phase::kBackward && !zero3_gathers_for_backward(c)) return;
  // Still gathered from the recompute, within the reuse distance (until 2026-12-07 every
  // sub-module was gathered again, fc2 of a 175B layer too, which DeepSpeed keeps).
  if (phase == Phase::kBackward && kept_for_backward(c, s)) return;
  const auto tensors = sub_module_tensors(c.model, static_cast<int>(c.t), s);
  if (c.opts.shard_per_tensor) {
    add_gathers(c, layer, phase, tensors, out);
  } else if (!tensors.empty()) {
    add_gathers(c, layer, phase, {std::accumulate(tensors.begin(), tensors.end(), std::int64_t{0})},
                out);
  }
}

void append_zero3_scatters(const LayerContext& c, int layer, std::vector<Op>& out) {
  // In the order the backward produces the gradients: the layer's modules last to first (the
  // order DeepSpeed's reduce buckets fill in).
  const double grad_bytes = gradient_bytes(c.plan);
  const std::vector<std::int64_t> units = zero3_units(c);
  for (auto it = units.rbegin(); it != units.rend(); ++it) {
    const std::int64_t n = *it;
    add_comm(out, layer, "zero3 gradient reduce-scatter", Phase::kBackward,
             CollectiveOp::kReduceScatter, zero3_group(c), d(n) * grad_bytes, false);
    std::get<CommOp>(out.back().work).elements = n;
    if (!c.plan.hybrid_shard()) continue;
    // HYBRID_SHARD: the shard just reduced, all-reduced across the replicas at once, on the
    // same stream (PyTorch FSDP's _reduce_grad: all_reduce on the inter-node group right after
    // the reduce-scatter), every backward pass; until 2026-12-06 once a step, after the last.
    const std::int64_t shard = n / c.plan.shard_ranks();
    add_comm(out, layer, "shard gradient all-reduce", Phase::kBackward, CollectiveOp::kAllReduce,
             Group::kDpReplica, d(shard) * grad_bytes, false);
    std::get<CommOp>(out.back().work).elements = shard;
  }
}

}  // namespace megasim::workload::detail
