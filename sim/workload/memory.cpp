#include "workload/memory.h"

#include <algorithm>
#include <cassert>

#include <fmt/format.h>

#include "engine/error.h"
#include "workload/pipe_engine_ops.h"
#include "workload/program.h"

namespace megasim::workload {
namespace {

double d(std::int64_t v) {
  return static_cast<double>(v);
}
double gib(Bytes b) {
  return b / kGiB;
}

// Parameters (elements) a rank holds unsharded at a time under ZeRO-3 / FSDP, beside its
// shards: gathered weights and gradients awaiting their reduction.
struct ShardedUnsharded {
  double gathered = 0.0, gradients = 0.0;
};

ShardedUnsharded sharded_unsharded(const ModelSpec& m, const ParallelPlan& p, int stage,
                                   const MemoryOptions::Sharded& o) {
  // A layer's fetch units in forward order; with per_tensor the small tensors stay gathered.
  std::vector<double> units;
  double persistent = 0.0, largest = 0.0, layer_unit = 0.0;
  for (const SubModule sub : {SubModule::kInputNorm, SubModule::kQkv, SubModule::kAttentionOut,
                              SubModule::kPostNorm, SubModule::kFc1, SubModule::kFc2}) {
    double unit = 0.0;
    for (const std::int64_t n : sub_module_tensors(m, p.tp, sub)) {
      largest = std::max(largest, d(n));
      if (o.per_tensor && n < o.persistence_threshold) {
        persistent += d(n);
      } else {
        unit += d(n);
      }
    }
    if (o.per_sub_module && unit > 0.0) units.push_back(unit);
    layer_unit += unit;
  }
  if (!o.per_sub_module) units.push_back(layer_unit);
  const int layers = stage_layers(m, p, stage);
  // The largest run of 1 + prefetch consecutive units (across layer boundaries).
  const std::size_t run =
      std::min<std::size_t>(static_cast<std::size_t>(1 + std::max(o.prefetch, 0)),
                            units.size() * static_cast<std::size_t>(layers));
  double gathered = 0.0;
  for (std::size_t i = 0; i < units.size(); ++i) {
    double sum = 0.0;
    for (std::size_t k = 0; k < run; ++k) sum += units[(i + k) % units.size()];
    gathered = std::max(gathered, sum);
  }
  // Sub-modules kept from the recompute to their backward are all gathered at the backward's
  // start, beside the next unit's prefetch: the first the backward gathers again, or with the
  // whole layer kept the next layer's first (its recompute's).
  if (p.recompute == Recompute::kFull && o.per_sub_module) {
    const auto gathered_of = [&](SubModule sub) {
      double n = 0.0;
      for (const std::int64_t t : sub_module_tensors(m, p.tp, sub)) {
        if (!(o.per_tensor && t < o.persistence_threshold)) n += d(t);
      }
      return n;
    };
    const std::vector<SubModule> held = kept_for_backward(m, p.tp, o.max_reuse_distance);
    double kept = 0.0, next = 0.0;
    for (const SubModule sub : held) kept += gathered_of(sub);
    for (const bool backward : {true, false}) {
      for (const SubModule sub : fetch_order(m, backward)) {
        const bool is_kept = std::find(held.begin(), held.end(), sub) != held.end();
        if (next == 0.0 && (!backward || !is_kept)) next = gathered_of(sub);
      }
    }
    if (kept > 0.0) gathered = std::max(gathered, kept + (o.prefetch > 0 ? next : 0.0));
  }
  ShardedUnsharded u;
  u.gathered = gathered + persistent * layers;
  const double bucket = d(o.reduce_bucket_elements);
  u.gradients = bucket > 0.0 ? bucket + (largest > bucket ? largest : 0.0)
                             : d(rank_layer_parameters(m, p.tp));
  return u;
}

// ZeRO-2's gradients not yet reduced, at most: DeepSpeed's reduce bucket (as ZeRO-3 counts
// it); as the step executor reduce-scatters them, two of the workload's DP buckets (the one
// filling, the one in flight) when they go out during the backward (zero2_bucketed), else the
// largest chunk's with the stage's embedding or head, reduced when a chunk's backward pass
// ends; never more than that chunk. (One layer's, as first written on 2026-12-03, undercounted
// a 12-layer chunk of 175B by 10 GiB; the chunk's alone, until 2026-12-06, held a stage without
// a pipeline whole, more than ZeRO-1's gradients.)
double zero2_unreduced(const ModelSpec& m, const ParallelPlan& p, int stage,
                       const MemoryOptions& opts) {
  if (opts.sharded.reduce_bucket_elements > 0)
    return sharded_unsharded(m, p, stage, opts.sharded).gradients;
  const double layer = d(rank_layer_parameters(m, p.tp));
  int largest = 0;
  for (int c = 0; c < p.vpp; ++c) largest = std::max(largest, chunk_layers(m, p, stage, c).count);
  const double edges =
      d(stage_parameters_per_rank(m, p, stage)) - layer * stage_layers(m, p, stage);
  const double chunk = layer * largest + edges;
  return opts.zero2_bucketed ? std::min(chunk, 2.0 * d(dp_bucket_elements(p))) : chunk;
}

}  // namespace

LayerActivationTerms layer_activation_terms(const ModelSpec& m, const MemoryOptions& opts,
                                            bool fp8) {
  // Bytes per token of the tensors one layer saves for its backward, 2-byte activations and
  // 1-byte dropout masks, derived as Korthikanti et al. 2022 (arXiv 2205.05198) section 4.1 do
  // for a GPT layer (11·h + 5·a·s attention, 19·h MLP, 4·h norms: 34·h + 5·a·s), generalised
  // to what a Llama layer holds.
  const double h = d(m.hidden), q = d(m.q_dim()), kv = d(m.kv_dim()), f = d(m.ffn_hidden);
  const double mask = m.dropout ? 1.0 : 0.0;  // a dropout mask, 1 byte per element
  LayerActivationTerms t;
  // Outside the TP region, replicated unless SP: the input of each norm (2·h; a norm's fp32
  // per-token statistics, 4–8 B, are left out as the paper does), the norm output that the
  // column-parallel GEMMs read (2·h: QKV's and fc1's, one with a parallel block), and the
  // mask of each residual dropout (h). GPT: 4h + 4h + 2h = 10·h; Llama (no dropout): 8·h.
  // A parallel block has one norm and one dropout over its summed branches: 5·h.
  // Under FP8 (ParallelPlan::fp8) Transformer Engine's LayerNormLinear saves the norm output
  // it wrote in FP8 (h), and each row-parallel Linear saves its own FP8 cast of its input (the
  // attention output: q; fc2's input: f) beside the 16-bit tensor the kernel before it keeps,
  // which fc2's bf16 input no longer is for GeLU and SwiGLU (their backward reads their own
  // input, not their output).
  const double norm_out = fp8 ? 1.0 : 2.0;
  const double norms = m.parallel_block ? 1.0 : 2.0;
  t.replicated = norms * (2.0 * h + norm_out * h + mask * h);
  // Inside the TP region, split over TP. Attention: Q and K for QKᵀ (2·q + 2·kv), V for the
  // PV product (2·kv), the out-projection's input (2·q: the attention output; with a fused
  // kernel the same tensor is the output FlashAttention keeps). GQA shrinks K and V to kv_dim.
  // Under FP8 the out-projection keeps only its FP8 cast (q); the 16-bit output is then kept
  // only by a fused kernel run with autograd (attention_output: not when recomputed).
  const double attention = 2.0 * q + 4.0 * kv + (fp8 ? q : 2.0 * q);
  if (fp8 && opts.fused_attention) t.attention_output = 2.0 * q;
  // MLP: GeLU keeps its input (2·f) and fc2's input (2·f): 16·h at f = 4h. SwiGLU keeps the
  // fc1 output, gate and up (4·f), for the SiLU and the product's backward (Megatron-LM's fused
  // bias_swiglu saves only them), and their product, fc2's input (2·f): 6·f, 19.5·h at Llama
  // 3's f = 3.25·h.
  // ReLU (OPT) saves only its output, which is fc2's input too: 2·f.
  // Under FP8 fc2 keeps its 1-byte cast: GeLU 2·f + f, SwiGLU 4·f + f, ReLU (whose backward
  // reads its output) 2·f + f.
  const double fc2_input = fp8 ? f : 2.0 * f;
  const double mlp = m.activation == Activation::kSwiglu ? 4.0 * f + fc2_input
                     : m.activation == Activation::kRelu ? 2.0 * f + (fp8 ? f : 0.0)
                                                         : 2.0 * f + fc2_input;
  t.tp_split = attention + mlp;
  if (opts.fused_attention) {
    // FlashAttention stores no s² tensor; beside its output it keeps the log-sum-exp of each
    // query's scores, fp32 per head (Dao et al. 2022, section 3.1; flash_attn's softmax_lse).
    t.tp_split += 4.0 * d(m.heads);
  } else {
    // Unfused: the softmax output (2 B) per head and key, and with attention dropout its mask
    // (1 B) and output (2 B), which the PV product reads: 5·a·s with dropout, 2·a·s without.
    t.per_key = d(m.heads) * (2.0 + 3.0 * mask);
  }
  return t;
}

Bytes activation_bytes_per_layer(const ModelSpec& m, const ParallelPlan& p,
                                 const MemoryOptions& opts) {
  // Each context-parallel rank holds seq / cp tokens of each sequence (Megatron-Core's context
  // parallelism keeps only its own chunks' activations; the K and V it receives are not saved).
  const double tokens = d(m.seq) / p.cp * d(p.micro_batch), t = d(p.tp);
  const double sp_div = p.sequence_parallel ? t : 1.0;
  if (p.recompute == Recompute::kFull) {
    // Only the layer input is kept (2·s·b·h; Megatron keeps the sequence shard with SP).
    return Bytes(2.0 * tokens * d(m.hidden) / sp_div);
  }
  const LayerActivationTerms terms = layer_activation_terms(m, opts, p.fp8);
  // The s² terms go with selective recompute (the attention core is recomputed).
  const double scores = p.recompute == Recompute::kNone ? terms.per_key * d(m.seq) : 0.0;
  const double kept_output = p.recompute == Recompute::kSelective ? 0.0 : terms.attention_output;
  return Bytes(tokens *
               (terms.replicated / sp_div + (terms.tp_split + kept_output) / t + scores / t));
}

// Of a layer's activations (as stored without recomputation, the attention scores left out),
// the share a deferred weight-gradient pass keeps: the inputs of the layer's linears, 32 of the
// 34·s·b·h bytes a GPT forward stores (the ZB authors' runtime, sail-sg
// zero-bubble-pipeline-parallelism, zerobubble/runtime.py).
constexpr double kPendingWeightGradShare = 32.0 / 34.0;

double pending_weight_grads(const ParallelPlan& p, int stage) {
  if (p.schedule != Schedule::kZeroBubble) return 0.0;
  const double m = d(p.micro_batches());
  return std::min(d(stage), m - std::min(d(p.pp - stage), m));
}

Bytes pending_weight_grad_bytes_per_layer(const ModelSpec& m, const ParallelPlan& p,
                                          const MemoryOptions& opts) {
  // Whatever the recomputation, the W pass needs the linears' inputs (recomputed, if they were
  // dropped, before its B), and never the s² scores.
  const LayerActivationTerms terms = layer_activation_terms(m, opts, p.fp8);
  const double tokens = d(m.seq) / p.cp * d(p.micro_batch), t = d(p.tp);
  const double sp_div = p.sequence_parallel ? t : 1.0;
  return Bytes(kPendingWeightGradShare * tokens *
               (terms.replicated / sp_div + (terms.tp_split + terms.attention_output) / t));
}

double micro_batches_in_flight(const ParallelPlan& p, int stage) {
  const double m = d(p.micro_batches());
  switch (p.schedule) {
    case Schedule::kGpipe:
      return m;
    case Schedule::kInterleaved: {
      // Micro-batches taken in groups of p.group() per chunk (pp in Megatron-LM). A step of a
      // single group of at most pp runs every forward first (step::interleaved_warmup,
      // Megatron-LM's rule for micro-batches == pp), so every chunk of every micro-batch is in
      // flight at once; a single group over pp has Megatron-Core 0.10's capped warm-up.
      const int warmup = interleaved_warmup(p.pp, p.vpp, p.group(), stage, p.micro_batches());
      return std::min(warmup + 1.0, m * p.vpp) / p.vpp;
    }
    case Schedule::kOneFOneB:
      return std::min(d(p.pp - stage), m);
    case Schedule::kZeroBubble:
      // 1F1B's (pp − s) between F and B; those between B and W (pending_weight_grads) keep
      // less (pending_weight_grad_bytes_per_layer).
      return std::min(d(p.pp - stage), m);
  }
  return m;
}

std::vector<double> passes_held_at_peak(const ParallelPlan& p, int stage,
                                        const std::vector<double>& pass_bytes) {
  if (p.schedule != Schedule::kInterleaved) {
    return std::vector<double>(pass_bytes.size(), micro_batches_in_flight(p, stage));
  }
  const int v = static_cast<int>(pass_bytes.size()), g = p.group();
  const std::int64_t total = p.micro_batches() * v;
  // Held after each forward from the warm-up's last on: forward n − 1 + j, before backward j.
  const int n = static_cast<int>(
      std::min<std::int64_t>(interleaved_warmup(p.pp, v, g, stage, p.micro_batches()) + 1, total));
  std::vector<double> held(pass_bytes.size(), 0.0);
  for (int k = 0; k < n; ++k) held[interleaved_chunk(k, g, v, false)] += 1.0;
  const auto bytes = [&] {
    double sum = 0.0;
    for (int c = 0; c < v; ++c) sum += held[c] * pass_bytes[c];
    return sum;
  };
  std::vector<double> peak = held;
  double peak_bytes = bytes();
  // The same every g·v passes, so one period of the steady state finds the peak.
  const int period = static_cast<int>(std::min<std::int64_t>(total - n, g * v));
  for (int j = 1; j <= period; ++j) {
    held[interleaved_chunk(j - 1, g, v, true)] -= 1.0;
    held[interleaved_chunk(n - 1 + j, g, v, false)] += 1.0;
    if (bytes() > peak_bytes) {
      peak_bytes = bytes();
      peak = held;
    }
  }
  return peak;
}

namespace {

// What one pass of each model chunk holds beside its layers' activations: the embedding's
// dropout mask on the first chunk of the first stage, and on the last chunk of the last the
// final norm's input and output (the logits GEMM's input, which the embedding's weight gradient
// reads; 2 B each) and the fp32 logits the vocab-parallel cross entropy keeps: Korthikanti et
// al.'s 4·s·b·h/t·(1 + v/h), sequence parallelism's t (the norm's output was left out until
// 2026-12-06, though each layer's norm output feeding a GEMM is counted).
std::vector<double> chunk_buffers(const ModelSpec& m, const ParallelPlan& p, int stage) {
  const double s = d(m.seq) / p.cp, b = d(p.micro_batch), h = d(m.hidden), t = d(p.tp);
  const double sp_div = p.sequence_parallel ? t : 1.0;
  std::vector<double> buffers(static_cast<std::size_t>(p.vpp), 0.0);
  if (stage == 0 && m.dropout) buffers.front() += s * b * h / sp_div;
  if (stage == p.pp - 1) buffers.back() += 4.0 * s * b * h / sp_div + 4.0 * s * b * d(m.vocab) / t;
  return buffers;
}

// The stage's weights, gradients, optimizer states and fp32 main gradient, by the plan's
// sharding (ZeRO-1/2/3, the distributed optimizer) and precision.
void set_model_states(MemoryEstimate& e, const ModelSpec& m, const ParallelPlan& p, int stage,
                      const MemoryOptions& opts) {
  const double params = d(stage_parameters_per_rank(m, p, stage));
  const double dp = p.dp_cp();  // the distributed optimizer shards over DP × CP (Megatron-Core)
  const double shard = p.shard_ranks();  // ZeRO-3 / FSDP: the ranks one shard spans
  const double w = kWeightBytes, g = gradient_bytes(p);
  // Gradients kept in 16 bits (fp16 runs, FSDP's bf16 reduction) are cast to an fp32 main
  // gradient for the optimizer: made at the optimizer step only (MemoryOptions::
  // main_gradient_at_step), or held beside the master weights and moments.
  const double main = p.fp32_gradients ? 0.0 : 4.0;
  const double step_only = opts.main_gradient_at_step ? main : 0.0;
  const double o = kMasterAndMomentsBytes + main - step_only;
  if (p.zero3) {
    // Sharded over DP, plus what is gathered and reduced unsharded at a time; a shard of one
    // rank is the whole, where the framework then gathers nothing (FSDP's NO_SHARD clamp).
    const bool whole = shard == 1.0 && opts.sharded.whole_at_one_rank;
    const ShardedUnsharded u =
        whole ? ShardedUnsharded{} : sharded_unsharded(m, p, stage, opts.sharded);
    e.weights = Bytes(params / shard * w + u.gathered * w);
    e.gradients = Bytes(params / shard * g + u.gradients * g);
    e.optimizer_states = Bytes(params / shard * o);
    e.main_gradient_at_step = Bytes(params / shard * step_only);
  } else {
    // Under FP8 Transformer Engine keeps each linear weight's FP8 copy and its transpose: 2 B
    // beside the 16-bit weight; with FP8 weights (fp8_params) the two take its place.
    const bool copies = p.fp8 && !p.fp8_params;
    const double fp8_copies = copies ? 2.0 * d(stage_linear_weights_per_rank(m, p, stage)) : 0.0;
    e.weights = Bytes(params * w + fp8_copies);
    // ZeRO-2: its shard and what a backward pass has not yet reduced (until 2026-12-03 the
    // shard alone). BF16_Optimizer: a bf16 .grad too.
    const double lp_grads = bf16_optimizer_applies(opts.pipe_bf16_optimizer, p) ? 2.0 : 0.0;
    const double unreduced = p.zero2 ? zero2_unreduced(m, p, stage, opts) : 0.0;
    e.gradients = Bytes(params * g / (p.zero2 ? dp : 1.0) + unreduced * g + params * lp_grads);
    e.optimizer_states = Bytes(params * o / (p.distributed_optimizer ? dp : 1.0));
    e.main_gradient_at_step = Bytes(params * step_only / (p.distributed_optimizer ? dp : 1.0));
  }
}

}  // namespace

MemoryEstimate estimate_memory(const ModelSpec& m, const ParallelPlan& p, int stage,
                               const MemoryOptions& opts) {
  // The plan was checked against the model once, at the edge (io::load_inputs).
  assert(stage >= 0 && stage < p.pp && "stage index out of the plan's pipeline");
  MemoryEstimate e;
  e.stage = stage;
  set_model_states(e, m, p, stage, opts);

  const Bytes per_layer = activation_bytes_per_layer(m, p, opts);
  e.activations_per_micro_batch = per_layer * stage_layers(m, p, stage);
  // What one pass of each model chunk holds: its layers' activations and its buffers.
  const std::vector<double> buffers = chunk_buffers(m, p, stage);
  std::vector<double> layers_bytes(buffers.size()), pass_bytes(buffers.size());
  for (int c = 0; c < p.vpp; ++c) {
    layers_bytes[c] = per_layer.value() * chunk_layers(m, p, stage, c).count;
    pass_bytes[c] = layers_bytes[c] + buffers[c];
  }
  const std::vector<double> held = passes_held_at_peak(p, stage, pass_bytes);
  double activations = 0.0, held_buffers = 0.0;
  for (std::size_t c = 0; c < held.size(); ++c) {
    activations += held[c] * layers_bytes[c];
    held_buffers += held[c] * buffers[c];
  }
  e.micro_batches_in_flight = e.activations_per_micro_batch.value() > 0.0
                                  ? activations / e.activations_per_micro_batch.value()
                                  : held.front();
  // ZB-H1's deferred weight gradients keep their layers' linear inputs (no logits buffers).
  e.pending_weight_grads = pending_weight_grads(p, stage);
  e.pending_weight_grad_bytes = pending_weight_grad_bytes_per_layer(m, p, opts) *
                                (e.pending_weight_grads * stage_layers(m, p, stage));
  activations += e.pending_weight_grad_bytes.value();
  e.activations = Bytes(activations);
  if (p.recompute != Recompute::kNone && e.activations_per_micro_batch.value() > 0.0) {
    // The layer being recomputed (on a stage that has one) holds what it recomputes during its
    // backward: with full recompute all its activations, with selective the attention core's
    // (an unfused kernel's s² scores, 5·a·s²·b/t for GPT; nothing more with a fused kernel),
    // in place of what it stored for the pass: its full activations take its stored input as
    // theirs (Megatron's checkpoint hands the saved input to the recomputed forward). Until
    // 2026-12-07 full recompute counted that input twice, a one-layer stage then holding more
    // than with no recompute (a helper's trial).
    ParallelPlan stored = p;
    stored.recompute = Recompute::kNone;
    e.activations += activation_bytes_per_layer(m, stored, opts);
    e.activations -= per_layer;
  }
  e.embedding_logits = Bytes(held_buffers);
  e.fragmentation = e.tensors() * opts.fragmentation;
  e.workspace = opts.reserved + e.fragmentation;
  return e;
}

Bytes checkpoint_bytes(const ModelSpec& m) {
  return Bytes((kWeightBytes + kMasterAndMomentsBytes) * d(total_parameters(m)));
}

Fit fit(const MemoryEstimate& e, Bytes capacity) {
  if (e.total() <= capacity) return Fit::kFits;
  return e.required() <= capacity ? Fit::kTight : Fit::kDoesNotFit;
}

Fit worst_fit(const std::vector<MemoryEstimate>& stages, Bytes capacity) {
  Fit worst = Fit::kFits;
  for (const auto& e : stages) worst = std::max(worst, fit(e, capacity));
  return worst;
}

void check_fits(const MemoryEstimate& e, Bytes capacity) {
  if (fit(e, capacity) != Fit::kDoesNotFit) return;
  throw OutOfMemoryError(fmt::format(
      "pipeline stage {} needs {:.1f} GiB per GPU ({:.1f} with the fragmentation margin) but the "
      "device has {:.1f} GiB: weights {:.1f}, gradients {:.1f}, optimizer states {:.1f}, "
      "activations {:.1f} ({:.2f} micro-batches in flight × {:.2f}{}), embedding/logits {:.1f}{}, "
      "workspace {:.1f} (of it fragmentation margin {:.1f})",
      e.stage, gib(e.required()), gib(e.total()), gib(capacity), gib(e.weights), gib(e.gradients),
      gib(e.optimizer_states), gib(e.activations), e.micro_batches_in_flight,
      gib(e.activations_per_micro_batch),
      e.pending_weight_grads > 0
          ? fmt::format(", and {:.0f} deferred weight-gradient passes keeping {:.2f}",
                        e.pending_weight_grads, gib(e.pending_weight_grad_bytes))
          : "",
      gib(e.embedding_logits),
      e.main_gradient_at_step > e.activations + e.embedding_logits
          ? fmt::format("; at the optimizer step, when those are freed, the fp32 gradient "
                        "copy {:.1f} in their place",
                        gib(e.main_gradient_at_step))
      : e.main_gradient_at_step > Bytes(0.0)
          ? fmt::format(" (the optimizer step's fp32 gradient copy, {:.1f}, takes their place "
                        "after the passes)",
                        gib(e.main_gradient_at_step))
          : "",
      gib(e.workspace), gib(e.fragmentation)));
}

}  // namespace megasim::workload
