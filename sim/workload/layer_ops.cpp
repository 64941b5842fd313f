#include "workload/layer_ops.h"

#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "workload/op_builders.h"

namespace megasim::workload::detail {
namespace {

// An unfused attention GEMM computes every score, a window only masking some: its hardware
// FLOPs are half the core's over all s keys (workload/flops.h, `every_score`).
void every_score(const LayerContext& c, Op& op) {
  op.hardware_flops = Flops(2.0 * d(c.tokens) * d(c.s) * d(c.q_r));
}

double attention_convention_fwd(const LayerContext& c) {
  // 4·b·(s/cp)·keys·(heads/t)·d: QKᵀ and PV of this rank's queries over the keys the MFU
  // convention charges.
  return 4.0 * d(c.tokens) * d(c.model.attended_keys()) * d(c.q_r);
}

// Context parallelism: the K and V of the whole sequence, this TP rank's KV heads, that every
// CP rank needs for its queries' attention (nccl-tests' all-gather size: the gathered output).
double context_kv_bytes(const LayerContext& c) {
  return d(c.b) * d(c.s) * 2.0 * d(c.kv_r) * c.elem;
}

// The activation's element-wise kernel and its op name. ReLU reads and writes the same bytes as
// GeLU; both are memory-bound, so ReLU is priced as the GeLU kernel of the same size.
hw::MemoryKernel activation_kernel(const LayerContext& c) {
  return c.model.activation == Activation::kSwiglu ? hw::MemoryKernel::kSwiglu
                                                   : hw::MemoryKernel::kGelu;
}
std::string activation_op(const LayerContext& c) {
  return std::string("mlp ") + to_string(c.model.activation);
}

void mlp_forward(const LayerContext& c, std::vector<Op>& out, int layer, Phase phase) {
  const bool swiglu = c.model.activation == Activation::kSwiglu;
  const std::int64_t fc1_n = swiglu ? 2 * c.f_r : c.f_r;
  fetch_sub_module(c, layer, phase, SubModule::kFc1, out);
  linear_forward(c, out, layer, "mlp fc1", phase, Linear::kColumn, fc1_n, c.h,
                 2.0 * d(c.tokens) * d(c.h) * d(fc1_n));
  const double act_in = d(c.tokens) * d(fc1_n) * c.elem;
  add_memory(out, layer, activation_op(c), phase, activation_kernel(c), act_in,
             d(c.tokens) * d(c.f_r) * c.elem);
  fetch_sub_module(c, layer, phase, SubModule::kFc2, out);
  linear_forward(c, out, layer, "mlp fc2", phase, Linear::kRow, c.h, c.f_r,
                 2.0 * d(c.tokens) * d(c.f_r) * d(c.h));
}

void attention_forward(const LayerContext& c, std::vector<Op>& out, int layer, Phase phase) {
  const std::int64_t qkv_n = c.q_r + 2 * c.kv_r;
  const double qkv_exact =
      2.0 * d(c.tokens) * d(c.h) * d(c.model.q_dim() + 2 * c.model.kv_dim()) / d(c.t);
  fetch_sub_module(c, layer, phase, SubModule::kQkv, out);
  linear_forward(c, out, layer, "attention qkv", phase, Linear::kColumn, qkv_n, c.h,
                 qkv_exact);
  if (c.model.position == Position::kRotary) {
    const double qk = d(c.tokens) * d(c.q_r + c.kv_r) * c.elem;
    add_memory(out, layer, "attention rotary", phase, hw::MemoryKernel::kRotary, qk, qk);
  }
  append_attention_core(c, layer, phase, out);
  fetch_sub_module(c, layer, phase, SubModule::kAttentionOut, out);
  linear_forward(c, out, layer, "attention out", phase, Linear::kRow, c.h, c.q_r,
                 2.0 * d(c.tokens) * d(c.q_r) * d(c.h));
}

// A layer norm's output, read by the column-parallel linear after it (FP8 under plan.fp8).
double norm_output_bytes(const LayerContext& c) {
  return column_input_bytes(c, c.sp_tokens, Linear::kColumn);
}

// The residual after a branch ("attention", "mlp", or "" for the parallel block's one).
std::string residual_name(const LayerContext& c, const std::string& branch) {
  const std::string kind = c.model.dropout ? "dropout residual" : "residual";
  return branch.empty() ? kind : branch + " " + kind;
}

void residual(const LayerContext& c, std::vector<Op>& out, int layer, const std::string& branch,
              Phase phase) {
  const double x = norm_bytes(c);
  if (!c.model.dropout) {
    // A plain add: reads the branch output and the residual, writes the sum (the access
    // pattern calibration measures for the dropout-residual kernel, without its mask).
    add_memory(out, layer, residual_name(c, branch), phase, hw::MemoryKernel::kDropoutResidual,
               2.0 * x, x);
    return;
  }
  // Reads the branch output and the residual, writes the sum and a 1-byte dropout mask.
  add_memory(out, layer, residual_name(c, branch), phase, hw::MemoryKernel::kDropoutResidual,
             2.0 * x, x + d(c.sp_tokens) * d(c.h));
}

}  // namespace

LayerContext::LayerContext(const ModelSpec& m, const ParallelPlan& p, const GeneratorOptions& o)
    : model(m), plan(p), opts(o), b(p.micro_batch), s(m.seq), h(m.hidden), t(p.tp) {
  tokens = b * s / p.cp;  // a context-parallel rank holds seq / cp tokens of each sequence
  sp_tokens = p.sequence_parallel ? tokens / t : tokens;
  head_dim = m.head_dim();
  heads_r = m.heads / t;
  kv_heads_r = m.kv_heads / t;  // validate_plan: tp divides kv_heads
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
  a.cp = c.plan.cp;
  a.head_dim = c.head_dim;
  a.causal = true;
  // A window of the whole sequence or more is none: it would key the kernel apart from the
  // same kernel's measured rows (a step priced from the fitted model until 2026-12-08).
  a.window = c.model.attention_window < c.model.seq ? c.model.attention_window : 0;
  a.backward = backward;
  a.fused = true;
  a.dtype = c.dtype;
  return a;
}

void append_attention_core(const LayerContext& c, int layer, Phase phase, std::vector<Op>& out) {
  const double conv = attention_convention_fwd(c);
  if (c.opts.fused_attention) {
    if (c.plan.cp > 1) {
      // Megatron-Core / Transformer Engine pass K and V around the CP ring, step by step beside
      // the attention of the chunk already received (AttnFuncWithCPAndKVP2P); Llama 3
      // all-gathers them first. Either way each rank receives the other ranks' K and V.
      add_comm(out, layer, "attention context kv all-gather", phase, CollectiveOp::kAllGather,
               Group::kCp, context_kv_bytes(c), true);
    }
    add_kernel(out, layer, "attention core", phase, fused_attention(c, false), Flops(conv));
    return;
  }
  // Unfused (Megatron's default at MegaScale's commit): two batched GEMMs over all s² scores
  // (a window is applied as a mask), with the fused scale-mask-softmax and dropout between.
  const std::int64_t bh = c.b * c.heads_r;
  const double scores = d(bh) * d(c.s) * d(c.s) * c.elem;
  add_kernel(out, layer, "attention scores qk", phase,
             gemm(c, c.s, c.s, c.head_dim, false, true, bh), Flops(conv / 2.0));
  every_score(c, out.back());
  add_memory(out, layer, "attention softmax", phase, hw::MemoryKernel::kSoftmax, scores, scores);
  if (c.model.dropout) {
    add_memory(out, layer, "attention dropout", phase, hw::MemoryKernel::kCopy, scores,
               scores + scores / c.elem);
  }
  add_kernel(out, layer, "attention context pv", phase,
             gemm(c, c.s, c.head_dim, c.s, false, false, bh), Flops(conv / 2.0));
  every_score(c, out.back());
}

void append_layer_forward(const LayerContext& c, int layer, Phase phase, std::vector<Op>& out) {
  const hw::MemoryKernel nk = norm_kind(c);
  if (c.model.parallel_block) {
    // y = x + attention(norm(x)) + mlp(norm(x)): one norm, one gather, one reduce.
    fetch_sub_module(c, layer, phase, SubModule::kInputNorm, out);
    add_memory(out, layer, "input norm", phase, nk, norm_bytes(c), norm_output_bytes(c));
    tp_enter_forward(c, out, layer, "input", phase, Linear::kColumn);
    attention_forward(c, out, layer, phase);
    mlp_forward(c, out, layer, phase);
    tp_exit_forward(c, out, layer, "output", phase);
    residual(c, out, layer, "", phase);
    return;
  }
  fetch_sub_module(c, layer, phase, SubModule::kInputNorm, out);
  add_memory(out, layer, "input norm", phase, nk, norm_bytes(c), norm_output_bytes(c));
  tp_enter_forward(c, out, layer, "attention input", phase, Linear::kColumn);
  attention_forward(c, out, layer, phase);
  tp_exit_forward(c, out, layer, "attention output", phase);
  residual(c, out, layer, "attention", phase);
  fetch_sub_module(c, layer, phase, SubModule::kPostNorm, out);
  add_memory(out, layer, "post-attention norm", phase, nk, norm_bytes(c),
             norm_output_bytes(c));
  tp_enter_forward(c, out, layer, "mlp input", phase, Linear::kColumn);
  mlp_forward(c, out, layer, phase);
  tp_exit_forward(c, out, layer, "mlp output", phase);
  residual(c, out, layer, "mlp", phase);
}

namespace {

void residual_backward(const LayerContext& c, std::vector<Op>& out, int layer,
                       const std::string& branch) {
  const double x = norm_bytes(c);
  if (!c.model.dropout) {
    // The add passes its gradient on untouched; where the residual stream forks (after the
    // norm's backward, charged here, once per residual), autograd sums the branch's and the
    // skip's gradients: reads both, writes one.
    add_memory(out, layer, residual_name(c, branch), Phase::kBackward,
               hw::MemoryKernel::kDropoutResidual, 2.0 * x, x);
    return;
  }
  add_memory(out, layer, residual_name(c, branch), Phase::kBackward,
             hw::MemoryKernel::kDropoutResidual, x + d(c.sp_tokens) * d(c.h), 2.0 * x);
}

void attention_core_backward(const LayerContext& c, std::vector<Op>& out, int layer) {
  const double conv = attention_convention_fwd(c);
  if (c.opts.fused_attention) {
    if (c.plan.cp > 1) {
      // The backward needs the other ranks' K and V again and returns their gradients.
      add_comm(out, layer, "attention context kv all-gather", Phase::kBackward,
               CollectiveOp::kAllGather, Group::kCp, context_kv_bytes(c), true);
    }
    add_kernel(out, layer, "attention core", Phase::kBackward, fused_attention(c, true),
               Flops(2.0 * conv));
    if (c.plan.cp > 1) {
      add_comm(out, layer, "attention context dkv reduce-scatter", Phase::kBackward,
               CollectiveOp::kReduceScatter, Group::kCp, context_kv_bytes(c), true);
    }
    return;
  }
  const std::int64_t bh = c.b * c.heads_r;
  const double scores = d(bh) * d(c.s) * d(c.s) * c.elem;
  const Phase bw = Phase::kBackward;
  add_kernel(out, layer, "attention pv dgrad-v", bw, gemm(c, c.s, c.head_dim, c.s, true, false, bh),
             Flops(conv / 2.0));
  every_score(c, out.back());
  add_kernel(out, layer, "attention pv dgrad-p", bw, gemm(c, c.s, c.s, c.head_dim, false, true, bh),
             Flops(conv / 2.0));
  every_score(c, out.back());
  if (c.model.dropout) {
    add_memory(out, layer, "attention dropout", bw, hw::MemoryKernel::kCopy,
               scores + scores / c.elem, scores);
  }
  add_memory(out, layer, "attention softmax", bw, hw::MemoryKernel::kSoftmax, 2.0 * scores, scores);
  add_kernel(out, layer, "attention qk dgrad-q", bw,
             gemm(c, c.s, c.head_dim, c.s, false, false, bh), Flops(conv / 2.0));
  every_score(c, out.back());
  add_kernel(out, layer, "attention qk dgrad-k", bw, gemm(c, c.s, c.head_dim, c.s, true, false, bh),
             Flops(conv / 2.0));
  every_score(c, out.back());
}

void mlp_backward_to_activation(const LayerContext& c, std::vector<Op>& out, int layer) {
  const bool swiglu = c.model.activation == Activation::kSwiglu;
  const std::int64_t fc1_n = swiglu ? 2 * c.f_r : c.f_r;
  fetch_sub_module(c, layer, Phase::kBackward, SubModule::kFc2, out);
  linear_backward(c, out, layer, "mlp fc2", Linear::kRow, c.h, c.f_r,
                  2.0 * d(c.tokens) * d(c.f_r) * d(c.h));
  add_memory(out, layer, activation_op(c), Phase::kBackward, activation_kernel(c),
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
  fetch_sub_module(c, layer, Phase::kBackward, SubModule::kAttentionOut, out);
  linear_backward(c, out, layer, "attention out", Linear::kRow, c.h, c.q_r,
                  2.0 * d(c.tokens) * d(c.q_r) * d(c.h));
  attention_core_backward(c, out, layer);
  if (c.model.position == Position::kRotary) {
    const double qk = d(c.tokens) * d(c.q_r + c.kv_r) * c.elem;
    add_memory(out, layer, "attention rotary", Phase::kBackward, hw::MemoryKernel::kRotary, qk, qk);
  }
}

}  // namespace

void append_layer_backward(const LayerContext& c, int layer, std::vector<Op>& out) {
  const std::int64_t qkv_n = c.q_r + 2 * c.kv_r;
  if (c.model.parallel_block) {
    residual_backward(c, out, layer, "");
    tp_exit_backward(c, out, layer, "output");
    mlp_backward_to_activation(c, out, layer);
    attention_backward_to_core(c, out, layer);
    tp_regather_input(c, out, layer, "input", Linear::kColumn);
    fetch_sub_module(c, layer, Phase::kBackward, SubModule::kFc1, out);
    dgrad_only(c, out, layer, "mlp fc1", Linear::kColumn, fc1_n(c), c.h, fc1_exact(c));
    fetch_sub_module(c, layer, Phase::kBackward, SubModule::kQkv, out);
    dgrad_only(c, out, layer, "attention qkv", Linear::kColumn, qkv_n, c.h, qkv_exact(c));
    tp_enter_backward(c, out, layer, "input");
    wgrad_only(c, out, layer, "mlp fc1", Linear::kColumn, fc1_n(c), c.h, fc1_exact(c));
    wgrad_only(c, out, layer, "attention qkv", Linear::kColumn, qkv_n, c.h, qkv_exact(c));
    fetch_sub_module(c, layer, Phase::kBackward, SubModule::kInputNorm, out);
    norm_backward(c, out, layer, "input norm");
    return;
  }
  residual_backward(c, out, layer, "mlp");
  tp_exit_backward(c, out, layer, "mlp output");
  mlp_backward_to_activation(c, out, layer);
  tp_regather_input(c, out, layer, "mlp", Linear::kColumn);
  fetch_sub_module(c, layer, Phase::kBackward, SubModule::kFc1, out);
  dgrad_only(c, out, layer, "mlp fc1", Linear::kColumn, fc1_n(c), c.h, fc1_exact(c));
  tp_enter_backward(c, out, layer, "mlp input");
  wgrad_only(c, out, layer, "mlp fc1", Linear::kColumn, fc1_n(c), c.h, fc1_exact(c));
  fetch_sub_module(c, layer, Phase::kBackward, SubModule::kPostNorm, out);
  norm_backward(c, out, layer, "post-attention norm");
  residual_backward(c, out, layer, "attention");
  tp_exit_backward(c, out, layer, "attention output");
  attention_backward_to_core(c, out, layer);
  tp_regather_input(c, out, layer, "attention", Linear::kColumn);
  fetch_sub_module(c, layer, Phase::kBackward, SubModule::kQkv, out);
  dgrad_only(c, out, layer, "attention qkv", Linear::kColumn, qkv_n, c.h, qkv_exact(c));
  tp_enter_backward(c, out, layer, "attention input");
  wgrad_only(c, out, layer, "attention qkv", Linear::kColumn, qkv_n, c.h, qkv_exact(c));
  fetch_sub_module(c, layer, Phase::kBackward, SubModule::kInputNorm, out);
  norm_backward(c, out, layer, "input norm");
}

}  // namespace megasim::workload::detail
