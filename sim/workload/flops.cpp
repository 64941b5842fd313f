#include "workload/flops.h"

namespace megasim::workload {
namespace {

double d(std::int64_t v) {
  return static_cast<double>(v);
}

// Query-key pairs per query of a causal kernel, averaged over the sequence (hw::AttentionShape
// counts the same pairs).
double causal_keys_per_query(const ModelSpec& m) {
  const double s = d(m.seq);
  if (m.attention_window > 0 && m.attention_window < m.seq) {
    const double w = d(m.attention_window);
    return (w * (w + 1) / 2.0 + (s - w) * w) / s;
  }
  return (s + 1) / 2.0;
}

}  // namespace

LayerFlops layer_forward_flops_per_token(const ModelSpec& m) {
  const double h = d(m.hidden), q = d(m.q_dim()), kv = d(m.kv_dim()), f = d(m.ffn_hidden);
  LayerFlops lf;
  lf.qkv = Flops(2.0 * h * (q + 2.0 * kv));
  lf.attention_core = Flops(4.0 * d(m.attended_keys()) * q);  // QKᵀ and PV
  lf.attention_out = Flops(2.0 * q * h);
  lf.mlp = Flops((m.activation == Activation::kSwiglu ? 6.0 : 4.0) * h * f);
  return lf;
}

Flops logits_forward_flops_per_token(const ModelSpec& m) {
  return Flops(2.0 * d(m.hidden) * d(m.vocab));
}

FlopsPerToken flops_per_token(const ModelSpec& m, Recompute recompute, bool every_score) {
  const LayerFlops lf = layer_forward_flops_per_token(m);
  const double l = m.layers;
  const Flops layers_fwd = lf.total() * l;
  const Flops logits_fwd = logits_forward_flops_per_token(m);
  FlopsPerToken r;
  // Three passes (forward, backward = 2 × forward) of every GEMM.
  r.model = layers_fwd * 3.0 + logits_fwd * 3.0;
  switch (recompute) {
    case Recompute::kNone:
      r.hardware = r.model;
      break;
    case Recompute::kSelective:
      r.hardware = r.model + lf.attention_core * l;
      break;
    case Recompute::kFull:
      r.hardware = r.model + layers_fwd;
      break;
  }
  r.hardware_published =
      recompute == Recompute::kSelective ? r.model + lf.attention_core * (3.0 * l) : r.hardware;
  if (every_score) {
    // The scores a window masks are computed all the same: s keys a query, every pass of the
    // core (three, and a fourth where it is recomputed).
    const Flops masked = Flops(4.0 * d(m.seq) * d(m.q_dim())) - lf.attention_core;
    r.hardware += masked * (l * (recompute == Recompute::kNone ? 3.0 : 4.0));
  }
  const Flops causal_core(4.0 * causal_keys_per_query(m) * d(m.q_dim()));
  r.useful = (layers_fwd - lf.attention_core * l + causal_core * l) * 3.0 + logits_fwd * 3.0;
  return r;
}

Flops model_flops_per_token(const ModelSpec& m) {
  return flops_per_token(m).model;
}

Flops hardware_flops_per_token(const ModelSpec& m, Recompute recompute, bool every_score) {
  return flops_per_token(m, recompute, every_score).hardware;
}

hw::DType mfu_peak_dtype(const ParallelPlan& p) {
  return p.precision == Precision::kFp16 ? hw::DType::kFp16 : hw::DType::kBf16;
}

}  // namespace megasim::workload
