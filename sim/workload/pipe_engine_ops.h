// Internal to the workload module: the work a pipeline's transfers add on the compute stream
// around each pass. Megatron-LM's scatter-gather (GeneratorOptions::pp_scatter_gather, tp > 1
// without sequence parallelism): the receiver all-gathers the 1/tp slices over TP, once for
// the activation before the forward and once for the gradient before the backward. And the
// work DeepSpeed's PipelineEngine adds, as its code of 2021-22 does it
// (deepspeed/runtime/pipe/engine.py and runtime/utils.py at v0.5.8, 2021-11-30, for MT-NLG;
// at 56c522386, 2022-04-19, "bf16+pipeline parallelism", the branch BLOOM trained on, for
// bf16), each of its ops marked Op::pipe_engine so the step can report the engine's share
// apart.
//
// Partitioned transfers (GeneratorOptions::pipe_partitioned_transfers, tp > 1: the engine's
// is_pipe_partitioned and is_grad_partitioned are is_model_parallel). S is one micro-batch's
// activation, tokens·h elements; every tensor below is S or a 1/tp slice of it.
//  - A PartitionedTensor's full() allocates the whole tensor with torch.zeros (a fill writing
//    S), copies its own slice in, all-gathers the slices over TP with torch.distributed's
//    list-form all_gather (ProcessGroupNCCL gathers into a flat buffer and then copies each of
//    the tp slices out, one copy_ per rank), and returns a clone (reading and writing S).
//  - The forward of every stage but the first: the received slice is cloned by the receive
//    (_exec_recv_activations) and again by the forward (_exec_forward_pass), then full().
//  - The forward of every stage but the last: its output is partitioned, its slice cloned.
//  - The backward of every stage but the last: full() rebuilds the stage's own output (whose
//    data the forward replaced to save memory) and full() the received gradient.
//  - After the backward of every stage but the first: the input gradient is partitioned for
//    the send (_exec_send_grads), its slice cloned.
// bf16 (GeneratorOptions::pipe_bf16_optimizer with Precision::kBf16, BF16_Optimizer): after
// each micro-batch's backward, update_hp_grads adds every parameter's bf16 gradient to its
// fp32 gradient, hp_grad.add_(lp.grad.to(float32)): a cast reading 2 B and writing 4 B, then
// an add reading 8 B and writing 4 B, per parameter the stage holds.
#pragma once

#include <cstdint>
#include <vector>

#include "workload/layer_ops.h"

namespace megasim::workload::detail {

// Where a chunk sits in the pipeline: the first and the last of the pp·vpp model chunks
// neither receive from, nor send to, a stage before or after them.
struct PipePosition {
  bool first = false;
  bool last = false;
};

// Before a chunk's forward compute, and after it.
void append_pipe_forward_entry(const LayerContext& c, PipePosition at, std::vector<Op>& out);
void append_pipe_forward_exit(const LayerContext& c, PipePosition at, std::vector<Op>& out);
// Before a chunk's backward (its recompute included), and after it; `parameters` are the
// stage's per rank, whose gradients BF16_Optimizer updates after the stage's last backward of
// a micro-batch (0 for the other chunks of an interleaved stage: nothing updated there).
void append_pipe_backward_entry(const LayerContext& c, PipePosition at, std::vector<Op>& out);
void append_pipe_backward_exit(const LayerContext& c, PipePosition at, std::int64_t parameters,
                               std::vector<Op>& out);

// bf16 with GeneratorOptions::pipe_bf16_optimizer, outside ZeRO-2 and ZeRO-3: BF16_Optimizer's
// path.
bool runs_bf16_optimizer(const LayerContext& c);
// _bf16_reduce_grads: the flat fp32 gradients (one tensor larger than buffered_allreduce_
// fallback's 5e8-element bucket, so one call) cast to the bf16 communication dtype and
// all-reduced over DP; and, at the step, the casts there and back and the average's mul_.
void append_bf16_gradient_all_reduce(const LayerContext& c, std::int64_t parameters,
                                     std::vector<Op>& out);
void append_bf16_gradient_casts(std::int64_t parameters, std::vector<Op>& out);

}  // namespace megasim::workload::detail
