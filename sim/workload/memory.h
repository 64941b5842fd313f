// Memory one GPU of a pipeline stage needs at its peak, by part: weights, gradients and
// optimizer states (Megatron-LM's mixed-precision layout, with and without the distributed
// optimizer or ZeRO-3), activations of the micro-batches the schedule holds in flight
// (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models",
// arXiv 2205.05198, Table 2, generalised to GQA and SwiGLU), the embedding/logits buffers,
// and a stated workspace overhead. Values in bytes; plain functions.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/units.h"
#include "workload/model_spec.h"
#include "workload/parallel_plan.h"

namespace megasim::workload {

// Megatron-LM's bytes per parameter (docs, distributed optimizer): bf16 or fp16 weights (2),
// and fp32 master weights with two moments (12; LAMB keeps the same two moments as Adam).
// Gradients: 4 bytes in fp32 (ParallelPlan::fp32_gradients, the default with bf16), else 2
// plus an fp32 main gradient of 4 beside the optimizer states (set in memory.cpp).
inline constexpr double kWeightBytes = 2.0;
inline constexpr double kMasterAndMomentsBytes = 12.0;

struct MemoryOptions {
  // Flash-style attention stores no s² score matrices (Korthikanti's 5as/h term is then 0
  // even without recomputation). Default: Megatron's unfused attention, as in the paper.
  bool fused_attention = false;
  // With plan.zero3: what a rank holds unsharded beside its shards, as the framework's
  // gathers and reductions run (step::SystemOptions::Sharding, the same keys the program
  // follows). The gathered units are the one computing and the `prefetch` after it, in forward
  // order; a unit is a layer or, per_sub_module, one of its sub-modules (SubModule). With
  // per_tensor, tensors of fewer than persistence_threshold elements stay gathered on every
  // layer. Gradients: a layer's, or with reduce_bucket_elements DeepSpeed's reduce buffer of
  // that many elements (allocated whole, torch.empty(reduce_bucket_size)) and the largest
  // tensor above it, which is reduced alone from its own .grad. The defaults are FSDP's (a
  // layer, one prefetched); step::memory_options sets every field from the preset.
  struct Sharded {
    bool per_tensor = false;
    bool per_sub_module = false;
    int prefetch = 1;
    std::int64_t persistence_threshold = 0;
    std::int64_t reduce_bucket_elements = 0;
    // With full recompute: the sub-modules reused within this many elements stay gathered from
    // the recompute to their backward (workload::kept_for_backward; 0: none).
    std::int64_t max_reuse_distance = 0;
    // A shard group of one rank runs unsharded, its whole parameters and gradients held once
    // with nothing gathered beside them (step::SystemOptions::Sharding::no_shard_at_one_rank).
    bool whole_at_one_rank = false;
  } sharded;
  // ZeRO-2 (plan.zero2) with its reduce-scatters overlapped (step::SystemOptions::dp_overlap):
  // they go out bucket by bucket as the backward produces the gradients (the workload's DP
  // buckets, dp_bucket_elements), so a rank holds the bucket being filled and the one in
  // flight, not its chunk's whole gradients, as long as the DP line keeps pace; without it the
  // chunk's, reduced when its pass ends.
  bool zero2_bucketed = false;
  // DeepSpeed's BF16_Optimizer (GeneratorOptions::pipe_bf16_optimizer, where
  // bf16_optimizer_applies): beside its flat fp32 gradients (plan.fp32_gradients) every
  // parameter keeps its bf16 .grad from one backward to the next (update_hp_grads with
  // clear_lp_grads=False; the engine clears them at the next backward's start): 2 B more.
  bool pipe_bf16_optimizer = false;
  // Gradients kept in 16 bits (plan.fp32_gradients false) are cast to an fp32 main gradient for
  // the optimizer: made at the optimizer step and freed before the next forward, when the
  // activations are gone (Megatron's and DeepSpeed's ZeRO optimizers), so the stage's peak is
  // the larger of the two (MemoryEstimate::main_gradient_at_step); or held beside the optimizer
  // states from the backward on (FSDP, and the default).
  bool main_gradient_at_step = false;
  // Assumption, not a measurement: CUDA context, cuBLAS workspaces and NCCL channel buffers
  // take about 2 GiB per GPU in a Megatron-LM job; override per device when measured.
  Bytes reserved = Bytes(2.0 * 1024 * 1024 * 1024);
  // Assumption: PyTorch's caching allocator loses about 5% of the tensor bytes to
  // fragmentation at the peak. A margin, not a need: plans published to have run on 80 GB
  // H100s leave less than it (README, Memory), so a plan that fits only without it is tight,
  // not refused (fit()).
  double fragmentation = 0.05;
};

struct MemoryEstimate {
  int stage = 0;
  Bytes weights, gradients, optimizer_states;
  Bytes activations;                   // all micro-batches in flight, peak
  Bytes activations_per_micro_batch;   // one micro-batch through all the stage's layers
  double micro_batches_in_flight = 0;  // stored, in units of a whole stage's layers
  // ZB-H1's deferred weight-gradient passes held at the peak, and what they keep (a part of
  // `activations`: their layers' linear inputs).
  double pending_weight_grads = 0;
  Bytes pending_weight_grad_bytes;
  Bytes embedding_logits;              // embedding dropout masks, logits and loss buffers
  // The fp32 main gradient made only for the optimizer step (MemoryOptions::
  // main_gradient_at_step), when activations and buffers are freed: 0 when held throughout
  // (then a part of optimizer_states) or when the gradients are fp32 already.
  Bytes main_gradient_at_step;
  Bytes workspace;                     // MemoryOptions::reserved + fragmentation
  Bytes fragmentation;                 // the fragmentation margin, a part of workspace
  // The bytes the plan's tensors take at their peak, before the reserve and the margin: the
  // forward and backward's, or the optimizer step's with its fp32 main gradient.
  Bytes tensors() const {
    const Bytes states = weights + gradients + optimizer_states;
    const Bytes passes = activations + embedding_logits;
    return states + (main_gradient_at_step > passes ? main_gradient_at_step : passes);
  }
  Bytes total() const { return tensors() + workspace; }
  // What must fit: total() without the fragmentation margin.
  Bytes required() const { return total() - fragmentation; }
};

// kTight: required() fits the capacity but total() does not, so the plan runs only if the
// allocator loses less than the margin to fragmentation (an expandable-segments allocator).
enum class Fit { kFits, kTight, kDoesNotFit };
Fit fit(const MemoryEstimate& e, Bytes capacity);
// The worst stage's fit (kFits for no stage): a plan is over the device when one stage is.
Fit worst_fit(const std::vector<MemoryEstimate>& stages, Bytes capacity);

// Bytes per token of the tensors one layer saves for its backward (memory.cpp derives each
// term): `replicated` outside the TP region (norm inputs and outputs, dropout masks: split
// over TP only with sequence parallelism), `tp_split` inside it, and `per_key` per token and
// attended key (an unfused kernel's softmax output and dropout; 0 with a fused kernel).
// A GPT layer: 10·h, 24·h and 5·a, Korthikanti et al.'s 34·h + 5·a·s.
// `attention_output`: under FP8 with a fused kernel, the 16-bit attention output the kernel
// keeps beside the out-projection's FP8 copy, TP-split, gone when the core is recomputed.
struct LayerActivationTerms {
  double replicated = 0, tp_split = 0, per_key = 0, attention_output = 0;
};
// `fp8`: the plan runs FP8 GEMMs (ParallelPlan::fp8), whose linear layers save 1-byte inputs.
LayerActivationTerms layer_activation_terms(const ModelSpec& m, const MemoryOptions& opts = {},
                                            bool fp8 = false);

// Activation bytes one transformer layer stores for one micro-batch on one rank: s/cp tokens
// of layer_activation_terms, the per-key term over all s keys unless recomputed (selective),
// only the layer input with full recompute.
Bytes activation_bytes_per_layer(const ModelSpec& m, const ParallelPlan& p,
                                 const MemoryOptions& opts = {});
// Micro-batches (in whole-stage units) the schedule holds at stage `stage`'s peak: 1F1B holds
// pp − stage; interleaved holds ((pp − stage − 1)·2 + (vpp − 1)·pp + 1) chunks, Megatron-LM's
// warm-up count plus one; GPipe holds them all; ZB-H1 holds 1F1B's (and its deferred weight
// gradients, below). Never more than the micro-batches per step.
double micro_batches_in_flight(const ParallelPlan& p, int stage);
// ZB-H1's weight-gradient passes deferred at stage `stage`'s peak: up to `stage` (the step's
// ZB-H1 order, step/pipeline_schedule.cpp), within the micro-batches 1F1B's in flight leave;
// 0 for every other schedule.
double pending_weight_grads(const ParallelPlan& p, int stage);
// What one deferred weight-gradient pass keeps of one layer: the inputs of its linears, 32/34
// of the layer's activations without recomputation and without the s² scores (32·s·b·h/t for
// GPT with SP), whatever the plan's recomputation (a W pass needs them all).
Bytes pending_weight_grad_bytes_per_layer(const ModelSpec& m, const ParallelPlan& p,
                                          const MemoryOptions& opts = {});
// Passes of each model chunk of stage `stage` held (forward run, backward not) when the bytes
// held peak, a pass of chunk c holding pass_bytes[c] (p.vpp entries). Interleaved: Megatron's
// order (forward pass k runs chunk (k mod g·vpp) div g, backward pass k the mirror chunk, g
// the micro-batch group), held after each steady-state forward; so an uneven layer_split
// counts the layers of the chunks actually in flight. Otherwise every chunk holds
// micro_batches_in_flight.
std::vector<double> passes_held_at_peak(const ParallelPlan& p, int stage,
                                        const std::vector<double>& pass_bytes);

// The plan must be valid for the model (validate_plan; io::load_inputs checks it once).
MemoryEstimate estimate_memory(const ModelSpec& m, const ParallelPlan& p, int stage,
                               const MemoryOptions& opts = {});
// A full checkpoint: the weights with the fp32 master weights and optimizer moments of every
// parameter (14 B/param), what Megatron-LM's distributed checkpoint writes.
Bytes checkpoint_bytes(const ModelSpec& m);

// Throws OutOfMemoryError naming the stage, every part and the capacity when required() does
// not fit (fit() is kDoesNotFit); a tight plan passes.
void check_fits(const MemoryEstimate& e, Bytes capacity);

}  // namespace megasim::workload
