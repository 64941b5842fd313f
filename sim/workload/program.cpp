#include "workload/program.h"

#include <algorithm>
#include <cassert>
#include <numeric>

#include <fmt/format.h>

#include "engine/error.h"
#include "workload/layer_ops.h"
#include "workload/op_builders.h"
#include "workload/pipe_engine_ops.h"

namespace megasim::workload {
namespace {

double d(std::int64_t v) {
  return static_cast<double>(v);
}

// Bytes per gradient element as reduced over DP (ParallelPlan::fp32_gradients).
double grad_bytes(const ParallelPlan& p) {
  return gradient_bytes(p);
}

Op comm_op(const std::string& name, Phase phase, CollectiveOp kind, Group group, double bytes) {
  Op op;
  op.name = name;
  op.phase = phase;
  op.work = CommOp{kind, group, Bytes(bytes)};
  return op;
}

Op memory_op(const std::string& name, hw::MemoryKernel kind, double read, double written,
             double flops) {
  Op op;
  op.name = name;
  op.phase = Phase::kOptimizer;
  op.work = hw::KernelShape{hw::MemoryShape{kind, Bytes(read), Bytes(written), Flops(flops)}};
  return op;
}

// Splits `elements` into DP buckets of Megatron-LM's size, each one collective.
void add_buckets(std::vector<Op>& out, const std::string& what, CollectiveOp kind,
                 std::int64_t elements, std::int64_t bucket, double bytes_per_element,
                 Group group = Group::kDp) {
  int i = 0;
  for (std::int64_t left = elements; left > 0; left -= bucket, ++i) {
    const std::int64_t n = std::min(left, bucket);
    out.push_back(comm_op(fmt::format("{} bucket {}", what, i), Phase::kOptimizer, kind, group,
                          d(n) * bytes_per_element));
  }
}

// FP8 delayed scaling: Transformer Engine all-reduces the amax of every FP8 tensor of its
// global buffer, one fp32 value each, for every FP8 module of the rank (`rank_layers` layers
// of four GEMMs, all chunks), at each fp8_autocast exit (a chunk's forward: input, weight and
// output) and at the end of each chunk's backward (output and input gradients), over
// Megatron-Core's amax reduction group
// (get_amax_reduction_group: the stage's TP × DP × CP ranks). The DP group stands in for it
// (the same nodes, with TP inside one), or the TP group without DP; not in the recompute.
void add_amax_reductions(const detail::LayerContext& c, int rank_layers, ChunkProgram& ch) {
  const ParallelPlan& p = c.plan;
  if (ch.layers.count == 0 || (p.dp_cp() == 1 && p.tp == 1)) return;
  const Group group = p.dp_cp() > 1 ? Group::kDp : Group::kTp;
  // TE's global amax buffer holds every FP8 module of the rank (all its chunks' layers).
  const double gemms = 4.0 * rank_layers;
  ch.forward.push_back(comm_op("fp8 amax all-reduce fwd", Phase::kForward,
                               CollectiveOp::kAllReduce, group, gemms * 3.0 * 4.0));
  ch.backward.push_back(comm_op("fp8 amax all-reduce bwd", Phase::kBackward,
                                CollectiveOp::kAllReduce, group, gemms * 2.0 * 4.0));
}

// With GeneratorOptions::grad_accumulation_pass: the micro-batch's weight gradients (training
// dtype) read and added into the accumulation buffer (fp32 with fp32_gradients), as Megatron-LM
// did before gradient-accumulation fusion (main_grad.add_ in its backward hook) and PyTorch's
// AccumulateGrad does; none under ZeRO-3, whose gradients leave by reduce-scatter. Under ZeRO-2
// each backward pass's gradients are reduced first and added into the rank's shard only
// (DeepSpeed stage 2's partitioned accumulation): 1/(DP × CP) of them.
void add_grad_accumulation(const detail::LayerContext& c, int layer, std::int64_t params,
                           std::vector<Op>& out) {
  if (!c.opts.grad_accumulation_pass || c.plan.zero3 || params <= 0) return;
  const double acc = c.plan.fp32_gradients ? 4.0 : c.elem;
  const double shards = c.plan.zero2 ? static_cast<double>(c.plan.dp_cp()) : 1.0;
  const double n = static_cast<double>(params) / shards;
  detail::add_memory(out, layer, "weight gradient accumulation", Phase::kBackward,
                     hw::MemoryKernel::kCopy, n * (c.elem + acc), n * acc);
  // It follows the weight-gradient GEMMs: a split backward (zero bubble) runs it in their pass.
  out.back().gemm_role = GemmRole::kWeightGrad;
}

// The parameters a rank holds in its stage's layers, all chunks together.
std::int64_t stage_layer_parameters(const StageProgram& sp, const ModelSpec& m,
                                    const ParallelPlan& p) {
  std::int64_t layers = 0;
  for (const ChunkProgram& ch : sp.chunks) layers += ch.layers.count;
  return layers * rank_layer_parameters(m, p.tp);
}

// ZeRO-2 whose parameters are gathered before every forward pass (FSDP's SHARD_GRAD_OP).
bool regathers_zero2(const detail::LayerContext& c) {
  return c.plan.zero2 && !c.plan.zero3 && c.opts.zero2_reshard_after_backward && c.plan.dp_cp() > 1;
}

// A distributed optimizer's all-gather of the updated parameters, after the optimizer.
void add_parameter_gather(const detail::LayerContext& c, double linear, std::int64_t bucket,
                          StageProgram& sp) {
  const ParallelPlan& p = c.plan;
  if (!p.distributed_optimizer || p.zero3 || p.dp_cp() <= 1) return;
  const std::int64_t params = sp.parameters_per_rank;
  // With FP8 weights the linear weights are gathered in one byte, the rest in 16 bits.
  const double bytes = p.fp8_params ? (c.elem * (d(params) - linear) + linear) / d(params) : c.elem;
  // FSDP's SHARD_GRAD_OP gathers the layers' before each forward pass (build_chunk): the rest
  // here.
  const std::int64_t gathered =
      regathers_zero2(c) ? params - stage_layer_parameters(sp, c.model, p) : params;
  if (gathered > 0) {
    add_buckets(sp.dp_param_comm, "parameter all-gather", CollectiveOp::kAllGather, gathered,
                bucket, bytes);
  }
}

void build_chunk(const detail::LayerContext& c, int rank_layers, ChunkProgram& ch) {
  const ParallelPlan& p = c.plan;
  const int first = ch.layers.first, last = ch.layers.first + ch.layers.count;
  // Gathered layer by layer here, or sub-module by sub-module inside the layer's ops.
  const bool layer_gathers = p.zero3 && !c.opts.shard_per_sub_module;
  if (ch.has_embedding) detail::append_embedding_forward(c, ch.forward);
  for (int l = first; l < last; ++l) {
    if (layer_gathers || regathers_zero2(c)) {
      detail::append_zero3_gathers(c, l, Phase::kForward, ch.forward);
    }
    detail::append_layer_forward(c, l, Phase::kForward, ch.forward);
  }
  if (ch.has_logits) detail::append_logits_forward(c, ch.forward);

  // The backward as autograd runs a checkpointed model: the logits', then each layer's from
  // the last, its recompute right before it (Megatron-LM's and DeepSpeed's CheckpointFunction
  // re-runs a block's forward in the block's backward). Until 2026-12-07 every layer's recompute
  // opened the chunk's backward: the same kernels, but a ZeRO-3 pass's gathers met other
  // compute, and the trace drew the order no framework runs.
  if (ch.has_logits) {
    detail::append_logits_backward(c, ch.backward);
    add_grad_accumulation(c, -1, c.vocab_r * c.h, ch.backward);
  }
  for (int l = last - 1; l >= first; --l) {
    if (p.recompute == Recompute::kFull) {
      if (layer_gathers) detail::append_zero3_gathers(c, l, Phase::kRecompute, ch.backward);
      detail::append_layer_forward(c, l, Phase::kRecompute, ch.backward);
    } else if (p.recompute == Recompute::kSelective) {
      detail::append_attention_core(c, l, Phase::kRecompute, ch.backward);
    }
    // With full recompute the parameters gathered for the recompute may still be held.
    if (layer_gathers && detail::zero3_gathers_for_backward(c)) {
      detail::append_zero3_gathers(c, l, Phase::kBackward, ch.backward);
    }
    detail::append_layer_backward(c, l, ch.backward);
    add_grad_accumulation(c, l, rank_layer_parameters(c.model, p.tp), ch.backward);
    if (p.zero3) detail::append_zero3_scatters(c, l, ch.backward);
  }
  if (ch.has_embedding) {
    detail::append_embedding_backward(c, ch.backward);
    // The word embedding's shard (unless the logits' add took it: one stage holding a tied
    // pair) and the learned positions.
    const bool taken = c.model.tied_embeddings && ch.has_logits;
    const bool learned = c.model.position == Position::kLearned;
    add_grad_accumulation(c, -1, (taken ? 0 : c.vocab_r * c.h) + (learned ? c.s * c.h : 0),
                          ch.backward);
  }
  if (p.fp8) add_amax_reductions(c, rank_layers, ch);
}

// The pipeline engine's own work around the chunk's passes (pipe_engine_ops.h).
void add_pipe_engine_work(const detail::LayerContext& c, detail::PipePosition at,
                          std::int64_t parameters, ChunkProgram& ch) {
  std::vector<Op> entry;
  detail::append_pipe_forward_entry(c, at, entry);
  ch.forward.insert(ch.forward.begin(), entry.begin(), entry.end());
  detail::append_pipe_forward_exit(c, at, ch.forward);
  entry.clear();
  detail::append_pipe_backward_entry(c, at, entry);
  ch.backward.insert(ch.backward.begin(), entry.begin(), entry.end());
  detail::append_pipe_backward_exit(c, at, parameters, ch.backward);
}

// FP8: the once-a-step work on the stage's `linear` weights (stage_linear_weights_per_rank).
void add_fp8_weight_work(const ParallelPlan& p, double linear, std::vector<Op>& out) {
  if (!p.fp8_params) {
    // Transformer Engine casts each linear weight to FP8 with its transpose once a step, in
    // the step's first forward (is_first_microbatch), and keeps both for the other micro-
    // batches (fp8_cast_transpose_fused: 2 B read, 2 B written an element); charged here, at
    // the step's boundary, with the same bytes.
    out.push_back(memory_op("fp8 weight cast-transpose", hw::MemoryKernel::kCopy, 2.0 * linear,
                            2.0 * linear, 0.0));
  } else {
    // FP8 weights: only the transpose, once a step (1 B read, 1 B written an element). The
    // optimizer's write of them is still priced at 16 bits (add_optimizer_step).
    out.push_back(memory_op("fp8 weight transpose", hw::MemoryKernel::kCopy, linear, linear, 0.0));
  }
}

}  // namespace

std::vector<SubModule> fetch_order(const ModelSpec& m, bool backward) {
  using S = SubModule;
  // As layer_ops.cpp fetches them: a parallel block has no post-attention norm and runs its
  // backward fc2, attention output, fc1, QKV, norm.
  if (m.parallel_block) {
    return backward ? std::vector<S>{S::kFc2, S::kAttentionOut, S::kFc1, S::kQkv, S::kInputNorm}
                    : std::vector<S>{S::kInputNorm, S::kQkv, S::kAttentionOut, S::kFc1, S::kFc2};
  }
  const std::vector<S> forward{S::kInputNorm, S::kQkv, S::kAttentionOut,
                               S::kPostNorm,  S::kFc1, S::kFc2};
  return backward ? std::vector<S>(forward.rbegin(), forward.rend()) : forward;
}

std::vector<SubModule> kept_for_backward(const ModelSpec& m, int tp,
                                         std::int64_t max_reuse_distance) {
  using S = SubModule;
  const std::vector<S> forward = fetch_order(m, false), backward = fetch_order(m, true);
  const auto elements = [&](S s) {
    std::int64_t n = 0;
    for (const std::int64_t t : sub_module_tensors(m, tp, s)) n += t;
    return n;
  };
  std::vector<S> kept;
  if (max_reuse_distance <= 0) return kept;
  for (std::size_t i = 0; i < forward.size(); ++i) {
    std::int64_t distance = 0;
    for (std::size_t j = i + 1; j < forward.size(); ++j) distance += elements(forward[j]);
    for (const S b : backward) {
      if (b == forward[i]) break;
      distance += elements(b);
    }
    if (distance < max_reuse_distance) kept.push_back(forward[i]);
  }
  return kept;
}

std::vector<std::int64_t> sub_module_tensors(const ModelSpec& m, int tp, SubModule s) {
  const std::int64_t t = tp, h = m.hidden, d_head = m.head_dim();
  const std::int64_t q_r = static_cast<std::int64_t>(m.heads / tp) * d_head;
  const std::int64_t kv_r = static_cast<std::int64_t>(m.kv_heads / tp) * d_head;
  const std::int64_t f_r = m.ffn_hidden / t;
  const std::int64_t fc1 = (m.activation == Activation::kSwiglu ? 2 : 1) * f_r;
  const auto linear = [&](std::int64_t weights, std::int64_t bias) {
    return m.bias ? std::vector<std::int64_t>{weights, bias} : std::vector<std::int64_t>{weights};
  };
  switch (s) {
    case SubModule::kInputNorm:
    case SubModule::kPostNorm:
      if (s == SubModule::kPostNorm && m.parallel_block) return {};
      return m.norm == Norm::kLayerNorm ? std::vector<std::int64_t>{h, h}
                                        : std::vector<std::int64_t>{h};
    case SubModule::kQkv: return linear(h * (q_r + 2 * kv_r), q_r + 2 * kv_r);
    case SubModule::kAttentionOut: return linear(q_r * h, h);
    case SubModule::kFc1: return linear(h * fc1, fc1);
    case SubModule::kFc2: return linear(f_r * h, h);
  }
  return {};
}

std::vector<std::int64_t> rank_layer_parameter_tensors(const ModelSpec& m, int tp) {
  std::vector<std::int64_t> out;
  for (const SubModule s : {SubModule::kInputNorm, SubModule::kQkv, SubModule::kAttentionOut,
                            SubModule::kPostNorm, SubModule::kFc1, SubModule::kFc2}) {
    const auto tensors = sub_module_tensors(m, tp, s);
    out.insert(out.end(), tensors.begin(), tensors.end());
  }
  return out;
}

std::int64_t rank_layer_parameters(const ModelSpec& m, int tp) {
  const auto tensors = rank_layer_parameter_tensors(m, tp);
  return std::accumulate(tensors.begin(), tensors.end(), std::int64_t{0});
}

std::int64_t stage_linear_weights_per_rank(const ModelSpec& m, const ParallelPlan& p,
                                           int stage) {
  std::int64_t per_layer = 0;
  for (const SubModule s :
       {SubModule::kQkv, SubModule::kAttentionOut, SubModule::kFc1, SubModule::kFc2}) {
    per_layer += sub_module_tensors(m, p.tp, s).front();  // the weight; the bias stays 16-bit
  }
  return stage_layers(m, p, stage) * per_layer;
}

std::int64_t parameters_per_rank(const ModelSpec& m, const ParallelPlan& p, int layers,
                                 bool embedding, bool head) {
  const std::int64_t vocab_r = (m.vocab + p.tp - 1) / p.tp;
  std::int64_t n = layers * rank_layer_parameters(m, p.tp);
  if (embedding) {
    n += vocab_r * m.hidden + (m.position == Position::kLearned ? m.seq * m.hidden : 0);
  }
  if (head) {
    n += norm_parameters(m);
    // Untied: the output projection. Tied on more than one stage: Megatron keeps a copy of
    // the word embedding on the last stage and all-reduces its gradient with the first.
    if (!m.tied_embeddings || p.pp > 1) n += vocab_r * m.hidden;
  }
  return n;
}

std::int64_t stage_parameters_per_rank(const ModelSpec& m, const ParallelPlan& p, int stage) {
  return parameters_per_rank(m, p, stage_layers(m, p, stage), stage == 0, stage == p.pp - 1);
}

// Optimizer step over the `owned` parameters this rank updates. Bytes per parameter: Adam reads
// the fp32 gradient, master weight and two moments (16 B) and writes master, moments and
// the bf16 weight (14 B); LAMB adds a second pass for the layer-wise trust ratio that
// writes then rereads an fp32 update (+8 B read, +4 B written). Global-norm clipping first
// reads `normed` gradients once. FLOPs per parameter are counted from the update equations
// (Adam: moment updates 7, bias-corrected step 5, weight decay and update 4).
void add_optimizer_step(const detail::LayerContext& c, double owned, double normed,
                        std::vector<Op>& out) {
  const double gb = grad_bytes(c.plan);
  out.push_back(memory_op("gradient norm", hw::MemoryKernel::kCopy, normed * gb, 0.0, 2.0 * normed));
  if (c.plan.optimizer == Optimizer::kAdam) {
    out.push_back(memory_op("adam", hw::MemoryKernel::kAdam, owned * (gb + 12.0),
                            owned * (12.0 + c.elem), 16.0 * owned));
  } else {
    out.push_back(memory_op("lamb update", hw::MemoryKernel::kLamb, owned * (gb + 12.0),
                            owned * 12.0, 16.0 * owned));
    out.push_back(memory_op("lamb trust-ratio apply", hw::MemoryKernel::kLamb, owned * 8.0,
                            owned * (4.0 + c.elem), 6.0 * owned));
  }
}

std::int64_t dp_bucket_elements(const ParallelPlan& p, const GeneratorOptions& opts) {
  return std::max(opts.dp_bucket_min_elements, opts.dp_bucket_elements_per_rank * p.dp_cp());
}

StageProgram build_stage(const ModelSpec& m, const ParallelPlan& p, int stage,
                         const GeneratorOptions& opts) {
  // The plan was checked against the model once, at the edge (io::load_inputs).
  assert(stage >= 0 && stage < p.pp && "stage index out of the plan's pipeline");
  const detail::LayerContext c(m, p, opts);
  StageProgram sp;
  sp.stage = stage;
  // Each TP rank sends 1/tp of the activation: with sequence parallelism it only holds that
  // shard; without it Megatron-LM's scatter-gather optimisation (Narayanan et al. SC'21 §4.1)
  // sends a 1/tp slice and all-gathers it over TP on the receiver (pipe_engine_ops.h prices
  // that gather; until 2026-12-07 it was free), as DeepSpeed's partitioned transfers do;
  // Megatron-Core sends the whole tensor from every TP rank.
  const bool whole = pp_transfer(p, opts.pp_scatter_gather, opts.pipe_partitioned_transfers) ==
                     PpTransfer::kWholeFromEveryTpRank;
  sp.pp_send_bytes = Bytes(d(c.tokens) * d(m.hidden) * c.elem / (whole ? 1.0 : d(p.tp)));
  sp.parameters_per_rank = stage_parameters_per_rank(m, p, stage);
  for (int chunk = 0; chunk < p.vpp; ++chunk) {
    ChunkProgram ch;
    ch.chunk = chunk;
    ch.layers = chunk_layers(m, p, stage, chunk);
    ch.has_embedding = stage == 0 && chunk == 0;
    ch.has_logits = stage == p.pp - 1 && chunk == p.vpp - 1;
    ch.parameters = parameters_per_rank(m, p, ch.layers.count, ch.has_embedding, ch.has_logits);
    build_chunk(c, stage_layers(m, p, stage), ch);
    // BF16_Optimizer's fp32 gradient update runs once a micro-batch, over the stage's
    // parameters, after the stage's last backward of it: chunk 0's (backward runs the chunks
    // in reverse).
    add_pipe_engine_work(c, {stage == 0 && chunk == 0, stage == p.pp - 1 && chunk == p.vpp - 1},
                         chunk == 0 ? sp.parameters_per_rank : 0, ch);
    sp.chunks.push_back(std::move(ch));
  }

  // DP gradient synchronisation, in buckets, once per step.
  const std::int64_t bucket = dp_bucket_elements(p, opts);
  const std::int64_t params = sp.parameters_per_rank;
  const bool sharded = p.distributed_optimizer || p.zero3;
  // DeepSpeed's BF16_Optimizer behind the pipeline engine all-reduces instead.
  const bool bf16_engine = detail::runs_bf16_optimizer(c);
  if (p.dp_cp() > 1 && bf16_engine) {
    detail::append_bf16_gradient_all_reduce(c, params, sp.dp_gradient_comm);
  } else if (p.dp_cp() > 1 && !p.zero3) {
    add_buckets(
        sp.dp_gradient_comm,
        p.distributed_optimizer ? "gradient reduce-scatter" : "gradient all-reduce",
        p.distributed_optimizer ? CollectiveOp::kReduceScatter : CollectiveOp::kAllReduce,
        params, bucket, grad_bytes(p));
  }
  if (p.hybrid_shard()) {
    // HYBRID_SHARD: each replica's shard of the gradients, all-reduced across the replicas. A
    // layer's goes with its reduce-scatter, every backward pass (detail::append_zero3_scatters);
    // the rest (embedding, final norm: FSDP's root unit) once a step, after the backward.
    const std::int64_t rest = params - stage_layer_parameters(sp, m, p);
    if (rest > 0) {
      add_buckets(sp.dp_gradient_comm, "shard gradient all-reduce", CollectiveOp::kAllReduce,
                  rest / p.shard_ranks(), bucket, grad_bytes(p), Group::kDpReplica);
    }
  }
  if (m.tied_embeddings && p.pp > 1 && (stage == 0 || stage == p.pp - 1)) {
    sp.dp_gradient_comm.push_back(comm_op("tied embedding gradient all-reduce", Phase::kOptimizer,
                                          CollectiveOp::kAllReduce, Group::kPp,
                                          d(c.vocab_r * m.hidden) * grad_bytes(p)));
  }

  const double owned = p.zero3 ? d(params) / d(p.shard_ranks())
                       : sharded ? d(params) / d(p.dp_cp())
                                 : d(params);
  if (bf16_engine) detail::append_bf16_gradient_casts(params, sp.optimizer);
  // BF16_Optimizer.step takes the norm of every fp32 gradient the stage holds, not its shard.
  add_optimizer_step(c, owned, bf16_engine ? d(params) : owned, sp.optimizer);
  const double linear = d(stage_linear_weights_per_rank(m, p, stage));
  if (p.fp8) add_fp8_weight_work(p, linear, sp.optimizer);
  add_parameter_gather(c, linear, bucket, sp);
  return sp;
}

std::vector<StageProgram> build_program(const ModelSpec& m, const ParallelPlan& p,
                                        const GeneratorOptions& opts) {
  std::vector<StageProgram> stages;
  stages.reserve(static_cast<std::size_t>(p.pp));
  for (int s = 0; s < p.pp; ++s) stages.push_back(build_stage(m, p, s, opts));
  return stages;
}

}  // namespace megasim::workload
