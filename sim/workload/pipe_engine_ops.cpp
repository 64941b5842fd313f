#include "workload/pipe_engine_ops.h"

#include <string>

#include "workload/op_builders.h"

namespace megasim::workload::detail {
namespace {

// With sequence parallelism a TP rank already holds only its 1/tp of the activation, so there
// is nothing for PartitionedTensor to split or rebuild (Megatron-DeepSpeed of MT-NLG's and
// BLOOM's time had no sequence parallelism).
bool partitioned(const LayerContext& c) {
  return c.plan.pp > 1 &&
         pp_transfer(c.plan, c.opts.pp_scatter_gather, c.opts.pipe_partitioned_transfers) ==
             PpTransfer::kPartitioned;
}

// The bytes of one micro-batch's activation between stages, whole.
double activation_bytes(const LayerContext& c) { return hidden_bytes(c, c.tokens); }

void memory(std::vector<Op>& out, const std::string& what, Phase phase, double read,
            double written) {
  add_memory(out, -1, "pipe engine " + what, phase, hw::MemoryKernel::kCopy, read, written);
  out.back().pipe_engine = true;
}

// One 1/tp slice cloned (PartitionedTensor's narrow().clone(), or a received slice's clone).
void clone_slice(const LayerContext& c, std::vector<Op>& out, const std::string& what,
                 Phase phase) {
  const double slice = activation_bytes(c) / static_cast<double>(c.t);
  memory(out, what + " slice clone", phase, slice, slice);
}

// PartitionedTensor.full() (deepspeed/runtime/utils.py).
void full(const LayerContext& c, std::vector<Op>& out, const std::string& what, Phase phase) {
  const double whole = activation_bytes(c);
  const double slice = whole / static_cast<double>(c.t);
  memory(out, what + " full zero fill", phase, 0.0, whole);
  memory(out, what + " full own slice copy", phase, slice, slice);
  add_comm(out, -1, "pipe engine " + what + " full all-gather", phase, CollectiveOp::kAllGather,
           Group::kTp, whole, false);
  out.back().pipe_engine = true;
  for (std::int64_t r = 0; r < c.t; ++r) {
    memory(out, what + " full per-rank copy " + std::to_string(r), phase, slice, slice);
  }
  memory(out, what + " full clone", phase, whole, whole);
}

// Megatron-LM's scatter-gather transfers (GeneratorOptions::pp_scatter_gather): the received
// 1/tp slices all-gathered over TP into the whole tensor before the pass that takes it
// (gather_split_1d_tensor in p2p_communication.py, an all_gather into one flat buffer, on the
// compute stream). Not DeepSpeed's engine work: not marked pipe_engine.
bool scatter_gathered(const LayerContext& c) {
  return c.plan.pp > 1 &&
         pp_transfer(c.plan, c.opts.pp_scatter_gather, c.opts.pipe_partitioned_transfers) ==
             PpTransfer::kScatterGather;
}

void gather_received(const LayerContext& c, std::vector<Op>& out, const std::string& what,
                     Phase phase) {
  add_comm(out, -1, "pp scatter-gather all-gather (" + what + ")", phase, CollectiveOp::kAllGather,
           Group::kTp, activation_bytes(c), false);
  // Before _all_gather_base (37181ef4, February 2022) the gather filled a list of per-rank
  // views: PyTorch's ProcessGroupNCCL::allgather gathers into a flat buffer of its own and
  // copies each rank's share out of it (a copy_ a rank: tp kernels, the whole tensor read and
  // written), before the synchronous call returns to the pass.
  if (!c.opts.pp_gather_list_copy) return;
  const double share = activation_bytes(c) / d(c.t);
  for (std::int64_t k = 0; k < c.t; ++k) {
    add_memory(out, -1, "pp scatter-gather list copy (" + what + ")", phase,
               hw::MemoryKernel::kCopy, share, share);
  }
}

}  // namespace

void append_pipe_forward_entry(const LayerContext& c, PipePosition at, std::vector<Op>& out) {
  if (scatter_gathered(c) && !at.first)
    gather_received(c, out, "received activation", Phase::kForward);
  if (!partitioned(c) || at.first) return;
  clone_slice(c, out, "received activation", Phase::kForward);
  clone_slice(c, out, "forward input", Phase::kForward);
  full(c, out, "input", Phase::kForward);
}

void append_pipe_forward_exit(const LayerContext& c, PipePosition at, std::vector<Op>& out) {
  if (!partitioned(c) || at.last) return;
  clone_slice(c, out, "output partition", Phase::kForward);
}

void append_pipe_backward_entry(const LayerContext& c, PipePosition at, std::vector<Op>& out) {
  if (scatter_gathered(c) && !at.last)
    gather_received(c, out, "received gradient", Phase::kBackward);
  if (!partitioned(c) || at.last) return;
  full(c, out, "output", Phase::kBackward);
  full(c, out, "output gradient", Phase::kBackward);
}

void append_pipe_backward_exit(const LayerContext& c, PipePosition at, std::int64_t parameters,
                               std::vector<Op>& out) {
  if (partitioned(c) && !at.first) clone_slice(c, out, "input gradient partition", Phase::kBackward);
  if (runs_bf16_optimizer(c) && parameters > 0) {
    const double n = d(parameters);
    memory(out, "bf16 gradient cast to fp32", Phase::kBackward, 2.0 * n, 4.0 * n);
    memory(out, "fp32 gradient add", Phase::kBackward, 8.0 * n, 4.0 * n);
  }
}

// DeepSpeed takes BF16_Optimizer for bf16 at ZeRO stage 0 (its own ZeRO-1-like sharding of
// the optimizer states is plan.distributed_optimizer); at stage 2 or 3 its ZeRO optimizer runs.
bool runs_bf16_optimizer(const LayerContext& c) {
  return bf16_optimizer_applies(c.opts.pipe_bf16_optimizer, c.plan);
}

void append_bf16_gradient_all_reduce(const LayerContext& c, std::int64_t parameters,
                                     std::vector<Op>& out) {
  add_comm(out, -1, "bf16 gradient all-reduce", Phase::kOptimizer, CollectiveOp::kAllReduce,
           Group::kDp, d(parameters) * c.elem, false);
}

void append_bf16_gradient_casts(std::int64_t parameters, std::vector<Op>& out) {
  // allreduce_bucket: fp32 -> bf16, the average's mul_, bf16 -> fp32 back into the gradient.
  const double n = d(parameters);
  add_memory(out, -1, "gradient cast to bf16", Phase::kOptimizer, hw::MemoryKernel::kCopy,
             4.0 * n, 2.0 * n);
  add_memory(out, -1, "gradient average", Phase::kOptimizer, hw::MemoryKernel::kCopy, 2.0 * n,
             2.0 * n);
  add_memory(out, -1, "gradient cast to fp32", Phase::kOptimizer, hw::MemoryKernel::kCopy,
             2.0 * n, 4.0 * n);
}

}  // namespace megasim::workload::detail

namespace megasim::workload {

bool bf16_optimizer_applies(bool enabled, const ParallelPlan& p) {
  return enabled && p.precision == Precision::kBf16 && !p.zero2 && !p.zero3;
}

PpTransfer pp_transfer(const ParallelPlan& p, bool scatter_gather, bool partitioned) {
  if (p.tp == 1) return PpTransfer::kWhole;
  if (p.sequence_parallel) return PpTransfer::kSequenceParallelShard;
  if (partitioned) return PpTransfer::kPartitioned;
  return scatter_gather ? PpTransfer::kScatterGather : PpTransfer::kWholeFromEveryTpRank;
}

const char* to_string(PpTransfer t) {
  switch (t) {
    case PpTransfer::kWhole:
      return "whole";
    case PpTransfer::kSequenceParallelShard:
      return "sequence-parallel shard";
    case PpTransfer::kPartitioned:
      return "partitioned";
    case PpTransfer::kScatterGather:
      return "scatter-gather";
    case PpTransfer::kWholeFromEveryTpRank:
      return "whole from every tp rank";
  }
  return "?";
}

}  // namespace megasim::workload
