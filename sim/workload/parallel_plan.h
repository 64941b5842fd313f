// How a model is split over GPUs: Megatron-style tensor (TP, with optional sequence
// parallelism), pipeline (PP, with VPP interleaved chunks per stage) and data (DP)
// parallelism, micro/global batch, activation recomputation, optimizer sharding and
// precision. A plain value type; validate_plan() checks it against a model and throws
// InputError naming the numbers that clash. Layer placement (which layers each pipeline
// stage and model chunk holds) follows Megatron-LM's interleaved assignment.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "workload/model_spec.h"

namespace megasim::workload {

enum class Recompute { kNone, kSelective, kFull };
enum class Optimizer { kAdam, kLamb };
enum class Precision { kBf16, kFp16 };
enum class Schedule { kGpipe, kOneFOneB, kInterleaved, kZeroBubble };
// How job ranks are laid out on the placement's GPUs, innermost first (Megatron-Core's
// RankGenerator orders, expert parallelism left out): TP, CP, DP, PP is Megatron-LM's default;
// TP, CP, PP, DP puts a pipeline on consecutive GPUs and data parallelism outermost
// (Megatron-Core's --use-tp-pp-dp-mapping; Llama 3's [TP, CP, PP, DP], The Llama 3 Herd of
// Models, section 3.3.2). workload::placement_slot maps a rank to its place.
enum class RankOrder { kTpCpDpPp, kTpCpPpDp };

struct ParallelPlan {
  int tp = 1;
  bool sequence_parallel = false;
  int pp = 1;
  int vpp = 1;  // model chunks per pipeline stage (interleaved 1F1B when > 1)
  int dp = 1;
  // Context parallelism (Megatron-Core's --context-parallel-size): each of cp ranks holds
  // seq / cp tokens of every sequence (two load-balanced chunks of seq / 2cp), exchanges K and
  // V with the others for attention, and joins the gradient reduction, which spans dp × cp.
  int cp = 1;
  int micro_batch = 1;
  std::int64_t global_batch = 1;  // sequences per optimizer step
  Recompute recompute = Recompute::kNone;
  bool distributed_optimizer = false;  // ZeRO-1: optimizer states sharded over DP
  bool zero2 = false;  // ZeRO-2: gradients sharded too (with distributed_optimizer)
  bool zero3 = false;  // ZeRO-3 / FSDP: parameters and gradients sharded too
  // ZeRO-3 / FSDP: the DP ranks one shard spans (consecutive ranks; 0 = all of DP, full shard).
  // Fewer than dp is FSDP's HYBRID_SHARD: parameters gathered and gradients reduce-scattered
  // within the shard group, the shard's gradients all-reduced across the dp / shard_group
  // replicas once per step.
  int shard_group = 0;
  Optimizer optimizer = Optimizer::kAdam;
  Precision precision = Precision::kBf16;
  // Gradients accumulated, kept and reduced in fp32 (Megatron-LM's accumulate_allreduce_grads_
  // in_fp32, forced with bf16), or in the training dtype (fp16 runs; bf16 with PyTorch FSDP's
  // reduce_dtype=bf16). The scenario's default follows the precision: fp32 with bf16.
  bool fp32_gradients = true;
  // FP8 GEMMs as Transformer Engine runs them under Megatron-Core (--fp8-format hybrid, delayed
  // scaling): the layers' four linear layers (QKV, attention output, fc1, fc2) take FP8 inputs
  // (E4M3 forward, E5M2 gradients) and write the training dtype; attention, the norms, the
  // activation and the logits head stay in it. Weights, gradients and optimizer states keep
  // their usual dtypes, beside an FP8 copy of each linear weight and its transpose.
  bool fp8 = false;
  // With fp8: the linear weights are kept in FP8 only (Megatron-Core's --fp8-param-gather,
  // NeMo's fp8_params): no 16-bit copy, the distributed optimizer all-gathers them in FP8,
  // and TE transposes each once a step (the optimizer's write of them is priced at 16 bits).
  bool fp8_params = false;
  Schedule schedule = Schedule::kOneFOneB;
  // Interleaved schedule: micro-batches each model chunk runs in a row before the next chunk
  // (0 = pp, Megatron-LM's). Megatron-Core's --microbatch-group-size-per-virtual-pipeline-stage
  // and Llama 3's tunable N (The Llama 3 Herd of Models, section 3.3.2, Figure 6): fewer than
  // pp holds fewer micro-batches in flight at the cost of waiting for the pipeline.
  int microbatch_group = 0;
  // Layers per virtual stage in model order (pp entries, or pp × vpp when interleaved) when
  // uneven; empty = even. The first and last may be 0: a chunk with only the embedding, or
  // only the output layer and loss (Llama 3's first and last model chunks).
  std::vector<int> layer_split;
  RankOrder rank_order = RankOrder::kTpCpDpPp;

  std::int64_t gpus() const { return static_cast<std::int64_t>(tp) * cp * pp * dp; }
  // The ranks that hold the same model shard and reduce its gradients: dp × cp.
  int dp_cp() const { return dp * cp; }
  int shard_ranks() const { return shard_group > 0 ? shard_group : dp; }
  bool hybrid_shard() const { return zero3 && shard_ranks() < dp; }
  int group() const { return microbatch_group > 0 ? microbatch_group : pp; }
  std::int64_t micro_batches() const {
    return global_batch / (static_cast<std::int64_t>(dp) * micro_batch);
  }
};

// Bytes per gradient element in the gradient buffers and the DP reductions.
inline double gradient_bytes(const ParallelPlan& p) {
  return p.fp32_gradients ? 4.0 : 2.0;
}

// Throws InputError when the plan cannot run the model: heads % tp, kv_heads vs tp, ffn and
// sequence divisibility, layers into pp × vpp (or the explicit layer_split), global_batch %
// (dp × micro_batch), micro-batches % pp for the interleaved schedule (Megatron's rule).
void validate_plan(const ModelSpec& m, const ParallelPlan& p);

// The plan's degrees and batch sizes by their scenario key (tp, cp, pp, vpp, dp, micro_batch,
// global_batch): what validate_plan holds above 0 and what validate holds a published run's
// stated plan to.
struct PlanCount {
  const char* key;
  std::int64_t value;
};
std::vector<PlanCount> plan_counts(const ParallelPlan& p);

// The layers one model chunk of one pipeline stage holds: [first, first + count).
struct LayerRange {
  int first = 0;
  int count = 0;
};
// Megatron-LM's assignment: chunk c of stage i holds layers starting at
// c·(L/vpp) + i·(L/(pp·vpp)); with layer_split, virtual stage c·pp + i (model order) holds
// layer_split[c·pp + i] layers, so an interleaved plan can be uneven too (Llama 3's first and
// last virtual stages hold one layer fewer).
LayerRange chunk_layers(const ModelSpec& m, const ParallelPlan& p, int stage, int chunk);
int stage_layers(const ModelSpec& m, const ParallelPlan& p, int stage);

// Megatron-LM's interleaved schedule (forward_backward_pipelining_with_interleaving), the one
// order the step executor runs and the memory model counts. Micro-batches are taken in groups
// of `group` per chunk (pp in Megatron-LM; Megatron-Core's microbatch_group_size_per_vp_stage,
// Llama 3's N). The forward chunk-passes stage `stage` runs before its first backward: all
// m·v when the step is a single group of at most pp (Megatron's `num_microbatches ==
// pipeline_parallel_size` rule, and Llama 3's group under pp, which must hold the step; a
// single group over pp exists only in Megatron-Core 0.10+, which dropped that rule and caps
// the warm-up as for any step), else (pp − stage − 1)·2 + (v − 1)·group, at most m·v.
int interleaved_warmup(int pp, int v, int group, int stage, std::int64_t m);
// The model chunk of a stage's k-th forward chunk-pass, (k mod group·v) div group; a
// backward chunk-pass runs the mirror chunk, v − 1 − that.
int interleaved_chunk(int k, int group, int v, bool backward);

const char* to_string(Recompute r);
const char* to_string(Optimizer o);
const char* to_string(Precision p);
const char* to_string(Schedule s);
const char* to_string(RankOrder o);

}  // namespace megasim::workload
