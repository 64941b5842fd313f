// The exact work of one pipeline stage on one rank: for each model chunk (vpp) the ordered
// forward and backward ops of ONE micro-batch, then per optimizer step the DP gradient
// communication, the optimizer kernels and the distributed optimizer's parameter all-gather.
// Every rank of a stage (all TP and DP ranks) runs the same program. The pipeline schedule
// (which micro-batch and chunk runs when) and the PP send/recv placement belong to the step
// simulator; the stage gives the bytes a send carries.
//
// Conventions (see sim/workload/README.md): GEMM C[m×n] = A[m×k]·B[k×n] with m = tokens;
// backward of Y = X·W is dgrad dX = dY·Wᵀ then wgrad dW = Xᵀ·dY. A layer's recompute ops
// (phase kRecompute) come right before its backward. Activations are bf16/fp16 (2 bytes); gradients
// are reduced in fp32 with bf16 (Megatron-LM forces accumulate_allreduce_grads_in_fp32 for bf16).
#pragma once

#include <cstdint>
#include <vector>

#include "workload/model_spec.h"
#include "workload/op.h"
#include "workload/parallel_plan.h"

namespace megasim::workload {

struct GeneratorOptions {
  // Flash-style single kernel (default), or Megatron's unfused QKᵀ / softmax / dropout / PV.
  bool fused_attention = true;
  // Gradient bucket of Megatron-LM's DistributedDataParallel: max(40,000,000, 1,000,000 × dp)
  // parameters (megatron/core/distributed/distributed_data_parallel.py, bucket_size default).
  std::int64_t dp_bucket_min_elements = 40'000'000;
  std::int64_t dp_bucket_elements_per_rank = 1'000'000;
  // ZeRO-3 / FSDP (plan.zero3): one all-gather and one reduce-scatter per parameter tensor, as
  // DeepSpeed's ZeRO-3 of 2021 issued them, rather than one per layer (FSDP's flat parameter
  // per transformer block).
  bool shard_per_tensor = false;
  // ZeRO-3 with full recompute: a layer's parameters, released after the recompute's forward,
  // are gathered again for its backward (DeepSpeed's ZeRO-3); else the recompute's gather
  // serves the backward too.
  bool regather_after_recompute = false;
  // With regather_after_recompute and per-sub-module fetches: a sub-module used again within
  // this many parameter elements of its own trace is kept gathered (DeepSpeed's
  // stage3_max_reuse_distance; 0: none kept). See detail::kept_for_backward.
  std::int64_t shard_max_reuse_distance = 0;
  // ZeRO-2 (plan.zero2) as FSDP's SHARD_GRAD_OP: the parameters resharded after each backward
  // pass and gathered layer by layer before each forward pass, where the ZeRO-3 gathers go
  // (the recompute and the backward find them still gathered); the parameters outside the
  // layers once a step, after the optimizer, as a distributed optimizer gathers them all.
  bool zero2_reshard_after_backward = false;
  // ZeRO-3: each sub-module's tensors gathered just before its own compute (DeepSpeed's
  // fetch_sub_module in the module's pre-forward and pre-backward hooks), rather than the
  // layer's all before the layer.
  bool shard_per_sub_module = false;
  // ZeRO-3, per tensor: tensors of fewer elements than this stay gathered once gathered
  // (DeepSpeed's stage3_param_persistence_threshold), so no pass gathers them; 0: none.
  std::int64_t shard_persistence_threshold = 0;
  // DeepSpeed's pipeline engine (step::SystemOptions::PipelineEngine, pipe_engine_ops.h):
  // PartitionedTensor transfers between stages with tp > 1, and BF16_Optimizer's per
  // micro-batch fp32 gradient update and all-reduced gradients with bf16.
  bool pipe_partitioned_transfers = false;
  bool pipe_bf16_optimizer = false;  // where bf16_optimizer_applies
  // Each micro-batch's weight gradients added into the accumulation buffer by an elementwise
  // pass of their own after each layer's backward (step::SystemOptions::grad_accumulation_pass).
  bool grad_accumulation_pass = false;
  // Without sequence parallelism and tp > 1: Megatron-LM's scatter-gather transfers between
  // stages (step::SystemOptions::scatter_gather_transfers): a 1/tp slice sent, the receiver's
  // TP all-gather before its pass; else the whole tensor sent from every TP rank (unless
  // pipe_partitioned_transfers).
  bool pp_scatter_gather = true;
  // With pp_scatter_gather: the gathered tensor copied out of PyTorch's flat buffer into the
  // list's per-rank views (step::SystemOptions::scatter_gather_list_copy).
  bool pp_gather_list_copy = false;
};

// Whether BF16_Optimizer runs for `p` when the engine takes it (`enabled`, the preset's key):
// bf16 only, outside ZeRO-2 and ZeRO-3 (whose own optimizers run). For the memory model and for
// the scenario's keys that change nothing.
bool bf16_optimizer_applies(bool enabled, const ParallelPlan& p);

// How one micro-batch's activation, or its gradient, crosses a pipeline boundary (the plan's pp
// is not read: what a boundary would carry), from the framework's transfers
// (GeneratorOptions::pp_scatter_gather, pipe_partitioned_transfers). The one rule that
// build_program's pp_send_bytes, pipe_engine_ops' gathers and rebuilds, search's estimate and
// simulate's `system.pp_transfer` follow.
enum class PpTransfer {
  kWhole,                  // tp 1: the one rank sends the whole tensor
  kSequenceParallelShard,  // each TP rank its 1/tp sequence shard; nothing to rebuild
  kPartitioned,            // DeepSpeed's PartitionedTensor: a 1/tp slice, rebuilt on the receiver
  kScatterGather,          // Megatron-LM's: a 1/tp slice, all-gathered over TP on the receiver
  kWholeFromEveryTpRank,   // Megatron-Core's without sequence parallelism
};
PpTransfer pp_transfer(const ParallelPlan& p, bool scatter_gather, bool partitioned);
const char* to_string(PpTransfer t);

struct ChunkProgram {
  int chunk = 0;
  LayerRange layers;
  bool has_embedding = false;  // first stage, first chunk
  bool has_logits = false;     // last stage, last chunk
  std::int64_t parameters = 0;  // weights this rank holds of the chunk (before ZeRO sharding)
  std::vector<Op> forward;
  std::vector<Op> backward;  // in reverse layer order, each layer's recompute before it
};

struct StageProgram {
  int stage = 0;
  std::vector<ChunkProgram> chunks;
  // Per optimizer step, in order: gradient buckets (reduce-scatter with the distributed
  // optimizer or ZeRO-3, else all-reduce; the tied-embedding all-reduce between first and
  // last stage on the PP group), the optimizer kernels, and the parameter all-gather of the
  // distributed optimizer (empty otherwise; with ZeRO-3 the per-layer gathers are in the
  // chunk programs).
  std::vector<Op> dp_gradient_comm;
  std::vector<Op> optimizer;
  std::vector<Op> dp_param_comm;
  // Activation (forward) or its gradient (backward) sent to the neighbouring stage per
  // micro-batch per chunk by each TP rank: s·b·h / tp elements (the sequence-parallel shard,
  // Megatron-LM's scatter-gather slice or DeepSpeed's partition without sequence parallelism),
  // else s·b·h (Megatron-Core's whole tensor, GeneratorOptions::pp_scatter_gather false).
  Bytes pp_send_bytes{0.0};
  std::int64_t parameters_per_rank = 0;  // weights this rank holds (before ZeRO sharding)
};

// Parameters one TP rank holds of one layer: column/row-parallel weights and their split
// biases / tp; norms and the row-parallel output biases replicated (validate_plan has tp
// divide kv_heads).
std::int64_t rank_layer_parameters(const ModelSpec& m, int tp);
// The same parameters as the tensors a framework holds them in, in module order: input norm,
// QKV, attention output, post-attention norm (absent with the parallel block), fc1, fc2, each
// weight then bias. Their sum is rank_layer_parameters.
std::vector<std::int64_t> rank_layer_parameter_tensors(const ModelSpec& m, int tp);
// A layer's sub-modules that hold parameters (the nn.Modules DeepSpeed's ZeRO-3 hooks fetch
// one at a time), in forward order; the post-attention norm is absent with the parallel block.
enum class SubModule { kInputNorm, kQkv, kAttentionOut, kPostNorm, kFc1, kFc2 };
// The tensors of one sub-module, weight then bias (norm: scale, then shift for LayerNorm);
// rank_layer_parameter_tensors is their concatenation in forward order.
std::vector<std::int64_t> sub_module_tensors(const ModelSpec& m, int tp, SubModule s);
// The sub-modules of a layer that DeepSpeed's ZeRO-3 keeps gathered from the full recompute's
// forward to their own backward: those used again within `max_reuse_distance` elements of the
// trace (_keep_for_later), counting the later sub-modules' recompute and the earlier ones'
// backward (the backward's order as the layer runs it, a parallel block's too). The containers'
// registered external biases in that trace are not counted. Empty for a distance of 0.
std::vector<SubModule> kept_for_backward(const ModelSpec& m, int tp,
                                         std::int64_t max_reuse_distance);
// A layer's sub-modules in the order its forward (or backward) fetches them.
std::vector<SubModule> fetch_order(const ModelSpec& m, bool backward);
std::int64_t stage_parameters_per_rank(const ModelSpec& m, const ParallelPlan& p, int stage);
// The weights one rank holds of `layers` layers, with the embedding (first stage's first chunk)
// and the output head (last stage's last chunk: final norm, the output projection or the tied
// embedding's copy).
std::int64_t parameters_per_rank(const ModelSpec& m, const ParallelPlan& p, int layers,
                                 bool embedding, bool head);
// The weights of the stage's layers' four linear layers one rank holds (no biases, norms or
// embedding): what Transformer Engine keeps an FP8 copy and transpose of under plan.fp8.
std::int64_t stage_linear_weights_per_rank(const ModelSpec& m, const ParallelPlan& p, int stage);

// Parameters in one DP gradient bucket: max(dp_bucket_min_elements, dp_bucket_elements_per_rank
// × the DP group), as Megatron-LM sizes them.
std::int64_t dp_bucket_elements(const ParallelPlan& p, const GeneratorOptions& opts = {});

// The plan must be valid for the model (validate_plan; io::load_inputs checks it once).
StageProgram build_stage(const ModelSpec& m, const ParallelPlan& p, int stage,
                         const GeneratorOptions& opts = {});
std::vector<StageProgram> build_program(const ModelSpec& m, const ParallelPlan& p,
                                        const GeneratorOptions& opts = {});

}  // namespace megasim::workload
