#include "workload/layer_ops.h"

#include <algorithm>
#include <string>

#include <fmt/format.h>

namespace megasim::workload::detail {
namespace {

double d(std::int64_t v) {
  return static_cast<double>(v);
}

const char* suffix(Phase p) {
  switch (p) {
    case Phase::kForward:
      return "fwd";
    case Phase::kBackward:
      return "bwd";
    case Phase::kRecompute:
      return "recompute";
    case Phase::kOptimizer:
      return "step";
  }
  return "?";
}

std::string name_of(int layer, const std::string& what, Phase p) {
  if (layer < 0) return fmt::format("{} {}", what, suffix(p));
  return fmt::format("layer {} {} {}", layer, what, suffix(p));
}

// Adds a compute op; `convention` is the FLOPs the MFU/HFU conventions charge it.
void add_kernel(std::vector<Op>& out, int layer, const std::string& what, Phase phase,
                hw::KernelShape shape, Flops convention) {
  Op op;
  op.name = name_of(layer, what, phase);
  op.phase = phase;
  op.work = std::move(shape);
  op.model_flops = phase == Phase::kRecompute ? Flops(0.0) : convention;
  op.hardware_flops = convention;
  op.layer = layer;
  out.push_back(std::move(op));
}

void add_memory(std::vector<Op>& out, int layer, const std::string& what, Phase phase,
                hw::MemoryKernel kind, double read_bytes, double write_bytes) {
  hw::MemoryShape m{kind, Bytes(read_bytes), Bytes(write_bytes), Flops(0.0)};
  add_kernel(out, layer, what, phase, m, Flops(0.0));
}

void add_comm(std::vector<Op>& out, int layer, const std::string& what, Phase phase,
              CollectiveKind kind, Group group, double bytes, bool overlappable) {
  Op op;
  op.name = name_of(layer, what, phase);
  op.phase = phase;
  op.work = CommOp{kind, group, Bytes(bytes)};
  op.tp_overlappable = overlappable;
  op.layer = layer;
  out.push_back(std::move(op));
}

hw::GemmShape gemm(const LayerContext& c, std::int64_t m, std::int64_t n, std::int64_t k,
                   bool ta = false, bool tb = false, std::int64_t batch = 1) {
  hw::GemmShape g;
  g.m = m;
  g.n = n;
  g.k = k;
  g.batch = batch;
  g.dtype = c.dtype;
  g.transpose_a = ta;
  g.transpose_b = tb;
  return g;
}

// A linear layer Y[tokens × n] = X[tokens × k]·W. `exact` is the exact share of the model's
// FLOPs for this rank (differs from the shape's only when work is replicated or padded).
void linear_forward(const LayerContext& c, std::vector<Op>& out, int layer, const std::string& what,
                    Phase phase, std::int64_t n, std::int64_t k, double exact) {
  add_kernel(out, layer, what, phase, gemm(c, c.tokens, n, k), Flops(exact));
}

// dgrad dX = dY·Wᵀ then wgrad dW = Xᵀ·dY, each as many FLOPs as the forward.
void linear_backward(const LayerContext& c, std::vector<Op>& out, int layer,
                     const std::string& what, std::int64_t n, std::int64_t k, double exact) {
  add_kernel(out, layer, what + " dgrad", Phase::kBackward, gemm(c, c.tokens, k, n, false, true),
             Flops(exact));
  add_kernel(out, layer, what + " wgrad", Phase::kBackward, gemm(c, k, n, c.tokens, true, false),
             Flops(exact));
}

double hidden_bytes(const LayerContext& c, std::int64_t tokens) {
  return d(tokens) * d(c.h) * c.elem;
}

// The TP collective at the entry of a column-parallel region (forward): an all-gather of the
// sequence shards with SP, nothing without (Megatron's f is the identity forward).
void tp_enter_forward(const LayerContext& c, std::vector<Op>& out, int layer,
                      const std::string& what, Phase phase) {
  if (c.t > 1 && c.plan.sequence_parallel) {
    add_comm(out, layer, what + " all-gather", phase, CollectiveKind::kAllGather, Group::kTp,
             hidden_bytes(c, c.tokens), true);
  }
}

// The TP collective at the exit of a row-parallel region (forward): a reduce-scatter with SP
// (fusable into the GEMM before it), else a blocking all-reduce.
void tp_exit_forward(const LayerContext& c, std::vector<Op>& out, int layer,
                     const std::string& what, Phase phase) {
  if (c.t == 1) return;
  if (c.plan.sequence_parallel) {
    add_comm(out, layer, what + " reduce-scatter", phase, CollectiveKind::kReduceScatter,
             Group::kTp, hidden_bytes(c, c.tokens), true);
  } else {
    add_comm(out, layer, what + " all-reduce", phase, CollectiveKind::kAllReduce, Group::kTp,
             hidden_bytes(c, c.tokens), false);
  }
}

double norm_bytes(const LayerContext& c) {
  return hidden_bytes(c, c.sp_tokens);
}

hw::MemoryKernel norm_kind(const LayerContext& c) {
  return c.model.norm == Norm::kLayerNorm ? hw::MemoryKernel::kLayerNorm
                                          : hw::MemoryKernel::kRmsNorm;
}

double attention_convention_fwd(const LayerContext& c) {
  // 4·b·s·keys·(heads/t)·d: QKᵀ and PV over the keys the MFU convention charges.
  return 4.0 * d(c.b) * d(c.s) * d(c.model.attended_keys()) * d(c.q_r);
}

void mlp_forward(const LayerContext& c, std::vector<Op>& out, int layer, Phase phase) {
  const bool swiglu = c.model.activation == Activation::kSwiglu;
  const std::int64_t fc1_n = swiglu ? 2 * c.f_r : c.f_r;
  linear_forward(c, out, layer, "mlp fc1", phase, fc1_n, c.h,
                 2.0 * d(c.tokens) * d(c.h) * d(fc1_n));
  const double act_in = d(c.tokens) * d(fc1_n) * c.elem;
  add_memory(out, layer, swiglu ? "mlp swiglu" : "mlp gelu", phase,
             swiglu ? hw::MemoryKernel::kSwiglu : hw::MemoryKernel::kGelu, act_in,
             d(c.tokens) * d(c.f_r) * c.elem);
  linear_forward(c, out, layer, "mlp fc2", phase, c.h, c.f_r,
                 2.0 * d(c.tokens) * d(c.f_r) * d(c.h));
}

void attention_forward(const LayerContext& c, std::vector<Op>& out, int layer, Phase phase) {
  const std::int64_t qkv_n = c.q_r + 2 * c.kv_r;
  const double qkv_exact =
      2.0 * d(c.tokens) * d(c.h) * d(c.model.q_dim() + 2 * c.model.kv_dim()) / d(c.t);
  linear_forward(c, out, layer, "attention qkv", phase, qkv_n, c.h, qkv_exact);
  if (c.model.position == Position::kRotary) {
    const double qk = d(c.tokens) * d(c.q_r + c.kv_r) * c.elem;
    add_memory(out, layer, "attention rotary", phase, hw::MemoryKernel::kRotary, qk, qk);
  }
  append_attention_core(c, layer, phase, out);
  linear_forward(c, out, layer, "attention out", phase, c.h, c.q_r,
                 2.0 * d(c.tokens) * d(c.q_r) * d(c.h));
}

void residual(const LayerContext& c, std::vector<Op>& out, int layer, const std::string& what,
              Phase phase) {
  // Reads the branch output and the residual, writes the sum and a 1-byte dropout mask.
  const double x = norm_bytes(c);
  add_memory(out, layer, what, phase, hw::MemoryKernel::kDropoutResidual, 2.0 * x,
             x + d(c.sp_tokens) * d(c.h));
}

}  // namespace

LayerContext::LayerContext(const ModelSpec& m, const ParallelPlan& p, const GeneratorOptions& o)
    : model(m), plan(p), opts(o), b(p.micro_batch), s(m.seq), h(m.hidden), t(p.tp) {
  tokens = b * s;
  sp_tokens = p.sequence_parallel ? tokens / t : tokens;
  head_dim = m.head_dim();
  heads_r = m.heads / t;
  kv_heads_r = std::max<std::int64_t>(1, m.kv_heads / t);
  q_r = heads_r * head_dim;
  kv_r = kv_heads_r * head_dim;
  f_r = m.ffn_hidden / t;
  vocab_r = (m.vocab + t - 1) / t;
  dtype = p.precision == Precision::kBf16 ? hw::DType::kBf16 : hw::DType::kFp16;
  elem = static_cast<double>(hw::dtype_bytes(dtype));
}

// The fused (flash-style) attention kernel of one layer on one rank.
hw::AttentionShape fused_attention(const LayerContext& c, bool backward) {
  hw::AttentionShape a;
  a.batch = c.b;
  a.heads = c.heads_r;
  a.kv_heads = c.kv_heads_r;
  a.seq = c.s;
  a.head_dim = c.head_dim;
  a.causal = true;
  a.window = c.model.attention_window;
  a.backward = backward;
  a.fused = true;
  a.dtype = c.dtype;
  return a;
}

void append_attention_core(const LayerContext& c, int layer, Phase phase, std::vector<Op>& out) {
  const double conv = attention_convention_fwd(c);
  if (c.opts.fused_attention) {
    add_kernel(out, layer, "attention core", phase, fused_attention(c, false), Flops(conv));
    return;
  }
  // Unfused (Megatron's default at MegaScale's commit): two batched GEMMs over all s² scores
  // (a window is applied as a mask), with the fused scale-mask-softmax and dropout between.
  const std::int64_t bh = c.b * c.heads_r;
  const double scores = d(bh) * d(c.s) * d(c.s) * c.elem;
  add_kernel(out, layer, "attention scores qk", phase,
             gemm(c, c.s, c.s, c.head_dim, false, true, bh), Flops(conv / 2.0));
  add_memory(out, layer, "attention softmax", phase, hw::MemoryKernel::kSoftmax, scores, scores);
  add_memory(out, layer, "attention dropout", phase, hw::MemoryKernel::kCopy, scores,
             scores + scores / c.elem);
  add_kernel(out, layer, "attention context pv", phase,
             gemm(c, c.s, c.head_dim, c.s, false, false, bh), Flops(conv / 2.0));
}

void append_layer_forward(const LayerContext& c, int layer, Phase phase, std::vector<Op>& out) {
  const hw::MemoryKernel nk = norm_kind(c);
  if (c.model.parallel_block) {
    // y = x + attention(norm(x)) + mlp(norm(x)): one norm, one gather, one reduce.
    add_memory(out, layer, "input norm", phase, nk, norm_bytes(c), norm_bytes(c));
    tp_enter_forward(c, out, layer, "input", phase);
    attention_forward(c, out, layer, phase);
    mlp_forward(c, out, layer, phase);
    tp_exit_forward(c, out, layer, "output", phase);
    residual(c, out, layer, "dropout residual", phase);
    return;
  }
  add_memory(out, layer, "input norm", phase, nk, norm_bytes(c), norm_bytes(c));
  tp_enter_forward(c, out, layer, "attention input", phase);
  attention_forward(c, out, layer, phase);
  tp_exit_forward(c, out, layer, "attention output", phase);
  residual(c, out, layer, "attention dropout residual", phase);
  add_memory(out, layer, "post-attention norm", phase, nk, norm_bytes(c), norm_bytes(c));
  tp_enter_forward(c, out, layer, "mlp input", phase);
  mlp_forward(c, out, layer, phase);
  tp_exit_forward(c, out, layer, "mlp output", phase);
  residual(c, out, layer, "mlp dropout residual", phase);
}

namespace {

void residual_backward(const LayerContext& c, std::vector<Op>& out, int layer,
                       const std::string& what) {
  const double x = norm_bytes(c);
  add_memory(out, layer, what, Phase::kBackward, hw::MemoryKernel::kDropoutResidual,
             x + d(c.sp_tokens) * d(c.h), 2.0 * x);
}

void norm_backward(const LayerContext& c, std::vector<Op>& out, int layer,
                   const std::string& what) {
  add_memory(out, layer, what, Phase::kBackward, norm_kind(c), 2.0 * norm_bytes(c), norm_bytes(c));
}

// Backward of a row-parallel exit: with SP the output gradient is all-gathered again;
// without SP Megatron's g is the identity backward.
void tp_exit_backward(const LayerContext& c, std::vector<Op>& out, int layer,
                      const std::string& what) {
  if (c.t > 1 && c.plan.sequence_parallel) {
    add_comm(out, layer, what + " grad all-gather", Phase::kBackward, CollectiveKind::kAllGather,
             Group::kTp, hidden_bytes(c, c.tokens), true);
  }
}

// With SP Megatron keeps only the sequence shard of a column-parallel GEMM's input and
// all-gathers it again for the weight gradient, overlapped with dgrad.
void tp_regather_input(const LayerContext& c, std::vector<Op>& out, int layer,
                       const std::string& what) {
  if (c.t > 1 && c.plan.sequence_parallel) {
    add_comm(out, layer, what + " input all-gather", Phase::kBackward, CollectiveKind::kAllGather,
             Group::kTp, hidden_bytes(c, c.tokens), true);
  }
}

// Backward of a column-parallel entry: the input gradient is reduce-scattered (SP) or
// all-reduced, asynchronously next to the wgrad GEMM in Megatron-LM.
void tp_enter_backward(const LayerContext& c, std::vector<Op>& out, int layer,
                       const std::string& what) {
  if (c.t == 1) return;
  if (c.plan.sequence_parallel) {
    add_comm(out, layer, what + " grad reduce-scatter", Phase::kBackward,
             CollectiveKind::kReduceScatter, Group::kTp, hidden_bytes(c, c.tokens), true);
  } else {
    add_comm(out, layer, what + " grad all-reduce", Phase::kBackward, CollectiveKind::kAllReduce,
             Group::kTp, hidden_bytes(c, c.tokens), true);
  }
}

void attention_core_backward(const LayerContext& c, std::vector<Op>& out, int layer) {
  const double conv = attention_convention_fwd(c);
  if (c.opts.fused_attention) {
    add_kernel(out, layer, "attention core", Phase::kBackward, fused_attention(c, true),
               Flops(2.0 * conv));
    return;
  }
  const std::int64_t bh = c.b * c.heads_r;
  const double scores = d(bh) * d(c.s) * d(c.s) * c.elem;
  const Phase bw = Phase::kBackward;
  add_kernel(out, layer, "attention pv dgrad-v", bw, gemm(c, c.s, c.head_dim, c.s, true, false, bh),
             Flops(conv / 2.0));
  add_kernel(out, layer, "attention pv dgrad-p", bw, gemm(c, c.s, c.s, c.head_dim, false, true, bh),
             Flops(conv / 2.0));
  add_memory(out, layer, "attention dropout", bw, hw::MemoryKernel::kCopy, scores + scores / c.elem,
             scores);
  add_memory(out, layer, "attention softmax", bw, hw::MemoryKernel::kSoftmax, 2.0 * scores, scores);
  add_kernel(out, layer, "attention qk dgrad-q", bw,
             gemm(c, c.s, c.head_dim, c.s, false, false, bh), Flops(conv / 2.0));
  add_kernel(out, layer, "attention qk dgrad-k", bw, gemm(c, c.s, c.head_dim, c.s, true, false, bh),
             Flops(conv / 2.0));
}

void mlp_backward_to_activation(const LayerContext& c, std::vector<Op>& out, int layer) {
  const bool swiglu = c.model.activation == Activation::kSwiglu;
  const std::int64_t fc1_n = swiglu ? 2 * c.f_r : c.f_r;
  linear_backward(c, out, layer, "mlp fc2", c.h, c.f_r, 2.0 * d(c.tokens) * d(c.f_r) * d(c.h));
  add_memory(out, layer, swiglu ? "mlp swiglu" : "mlp gelu", Phase::kBackward,
             swiglu ? hw::MemoryKernel::kSwiglu : hw::MemoryKernel::kGelu,
             d(c.tokens) * d(fc1_n + c.f_r) * c.elem, d(c.tokens) * d(fc1_n) * c.elem);
}

double fc1_exact(const LayerContext& c) {
  const std::int64_t fc1_n = c.model.activation == Activation::kSwiglu ? 2 * c.f_r : c.f_r;
  return 2.0 * d(c.tokens) * d(c.h) * d(fc1_n);
}

std::int64_t fc1_n(const LayerContext& c) {
  return c.model.activation == Activation::kSwiglu ? 2 * c.f_r : c.f_r;
}

double qkv_exact(const LayerContext& c) {
  return 2.0 * d(c.tokens) * d(c.h) * d(c.model.q_dim() + 2 * c.model.kv_dim()) / d(c.t);
}

void attention_backward_to_core(const LayerContext& c, std::vector<Op>& out, int layer) {
  linear_backward(c, out, layer, "attention out", c.h, c.q_r,
                  2.0 * d(c.tokens) * d(c.q_r) * d(c.h));
  attention_core_backward(c, out, layer);
  if (c.model.position == Position::kRotary) {
    const double qk = d(c.tokens) * d(c.q_r + c.kv_r) * c.elem;
    add_memory(out, layer, "attention rotary", Phase::kBackward, hw::MemoryKernel::kRotary, qk, qk);
  }
}

void dgrad_only(const LayerContext& c, std::vector<Op>& out, int layer, const std::string& what,
                std::int64_t n, std::int64_t k, double exact) {
  add_kernel(out, layer, what + " dgrad", Phase::kBackward, gemm(c, c.tokens, k, n, false, true),
             Flops(exact));
}

void wgrad_only(const LayerContext& c, std::vector<Op>& out, int layer, const std::string& what,
                std::int64_t n, std::int64_t k, double exact) {
  add_kernel(out, layer, what + " wgrad", Phase::kBackward, gemm(c, k, n, c.tokens, true, false),
             Flops(exact));
}

}  // namespace

void append_layer_backward(const LayerContext& c, int layer, std::vector<Op>& out) {
  const std::int64_t qkv_n = c.q_r + 2 * c.kv_r;
  if (c.model.parallel_block) {
    residual_backward(c, out, layer, "dropout residual");
    tp_exit_backward(c, out, layer, "output");
    mlp_backward_to_activation(c, out, layer);
    attention_backward_to_core(c, out, layer);
    tp_regather_input(c, out, layer, "input");
    dgrad_only(c, out, layer, "mlp fc1", fc1_n(c), c.h, fc1_exact(c));
    dgrad_only(c, out, layer, "attention qkv", qkv_n, c.h, qkv_exact(c));
    tp_enter_backward(c, out, layer, "input");
    wgrad_only(c, out, layer, "mlp fc1", fc1_n(c), c.h, fc1_exact(c));
    wgrad_only(c, out, layer, "attention qkv", qkv_n, c.h, qkv_exact(c));
    norm_backward(c, out, layer, "input norm");
    return;
  }
  residual_backward(c, out, layer, "mlp dropout residual");
  tp_exit_backward(c, out, layer, "mlp output");
  mlp_backward_to_activation(c, out, layer);
  tp_regather_input(c, out, layer, "mlp");
  dgrad_only(c, out, layer, "mlp fc1", fc1_n(c), c.h, fc1_exact(c));
  tp_enter_backward(c, out, layer, "mlp input");
  wgrad_only(c, out, layer, "mlp fc1", fc1_n(c), c.h, fc1_exact(c));
  norm_backward(c, out, layer, "post-attention norm");
  residual_backward(c, out, layer, "attention dropout residual");
  tp_exit_backward(c, out, layer, "attention output");
  attention_backward_to_core(c, out, layer);
  tp_regather_input(c, out, layer, "attention");
  dgrad_only(c, out, layer, "attention qkv", qkv_n, c.h, qkv_exact(c));
  tp_enter_backward(c, out, layer, "attention input");
  wgrad_only(c, out, layer, "attention qkv", qkv_n, c.h, qkv_exact(c));
  norm_backward(c, out, layer, "input norm");
}

void append_embedding_forward(const LayerContext& c, std::vector<Op>& out) {
  const double full = hidden_bytes(c, c.tokens);
  add_memory(out, -1, "embedding lookup", Phase::kForward, hw::MemoryKernel::kEmbedding, full,
             full);
  // Vocab-parallel embedding: each rank holds a vocabulary shard, partial rows are summed.
  if (c.t > 1) {
    add_comm(out, -1,
             c.plan.sequence_parallel ? "embedding reduce-scatter" : "embedding all-reduce",
             Phase::kForward,
             c.plan.sequence_parallel ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce,
             Group::kTp, full, false);
  }
  if (c.model.position == Position::kLearned) {
    add_memory(out, -1, "position embedding add", Phase::kForward, hw::MemoryKernel::kCopy,
               2.0 * norm_bytes(c), norm_bytes(c));
  }
  add_memory(out, -1, "embedding dropout", Phase::kForward, hw::MemoryKernel::kCopy, norm_bytes(c),
             norm_bytes(c) + d(c.sp_tokens) * d(c.h));
}

void append_embedding_backward(const LayerContext& c, std::vector<Op>& out) {
  add_memory(out, -1, "embedding dropout", Phase::kBackward, hw::MemoryKernel::kCopy,
             norm_bytes(c) + d(c.sp_tokens) * d(c.h), norm_bytes(c));
  if (c.t > 1 && c.plan.sequence_parallel) {
    add_comm(out, -1, "embedding grad all-gather", Phase::kBackward, CollectiveKind::kAllGather,
             Group::kTp, hidden_bytes(c, c.tokens), false);
  }
  // Scatter-add of the row gradients into the fp32 gradient of the vocabulary shard.
  const double grads = d(c.tokens) * d(c.h);
  add_memory(out, -1, "embedding grad scatter-add", Phase::kBackward, hw::MemoryKernel::kEmbedding,
             grads * (c.elem + 4.0), grads * 4.0);
}

void append_logits_forward(const LayerContext& c, std::vector<Op>& out) {
  add_memory(out, -1, "final norm", Phase::kForward, norm_kind(c), norm_bytes(c), norm_bytes(c));
  tp_enter_forward(c, out, -1, "logits input", Phase::kForward);
  const double exact = 2.0 * d(c.tokens) * d(c.h) * d(c.model.vocab) / d(c.t);
  linear_forward(c, out, -1, "logits", Phase::kForward, c.vocab_r, c.h, exact);
  const double logits = d(c.tokens) * d(c.vocab_r) * c.elem;
  add_memory(out, -1, "cross entropy", Phase::kForward, hw::MemoryKernel::kCrossEntropy, logits,
             d(c.tokens) * 4.0);
  if (c.t > 1) {
    // Vocab-parallel cross entropy: all-reduces of the row max, the sum of exponentials and
    // the target logit (fp32, one value per token each).
    for (const char* what : {"cross entropy max", "cross entropy sum", "cross entropy target"}) {
      add_comm(out, -1, fmt::format("{} all-reduce", what), Phase::kForward,
               CollectiveKind::kAllReduce, Group::kTp, d(c.tokens) * 4.0, false);
    }
  }
}

void append_logits_backward(const LayerContext& c, std::vector<Op>& out) {
  const double logits = d(c.tokens) * d(c.vocab_r) * c.elem;
  add_memory(out, -1, "cross entropy", Phase::kBackward, hw::MemoryKernel::kCrossEntropy, logits,
             logits);
  const double exact = 2.0 * d(c.tokens) * d(c.h) * d(c.model.vocab) / d(c.t);
  tp_regather_input(c, out, -1, "logits");
  dgrad_only(c, out, -1, "logits", c.vocab_r, c.h, exact);
  tp_enter_backward(c, out, -1, "logits input");
  wgrad_only(c, out, -1, "logits", c.vocab_r, c.h, exact);
  norm_backward(c, out, -1, "final norm");
}

Op zero3_param_gather(const LayerContext& c, int layer, Phase phase) {
  std::vector<Op> one;
  add_comm(one, layer, "zero3 parameter all-gather", phase, CollectiveKind::kAllGather, Group::kDp,
           d(rank_layer_parameters(c.model, static_cast<int>(c.t))) * c.elem, false);
  return one.front();
}

Op zero3_grad_scatter(const LayerContext& c, int layer) {
  std::vector<Op> one;
  const double grad_bytes = c.plan.precision == Precision::kBf16 ? 4.0 : c.elem;
  add_comm(one, layer, "zero3 gradient reduce-scatter", Phase::kBackward,
           CollectiveKind::kReduceScatter, Group::kDp,
           d(rank_layer_parameters(c.model, static_cast<int>(c.t))) * grad_bytes, false);
  return one.front();
}

}  // namespace megasim::workload::detail
