#include "workload/model_spec.h"

namespace megasim::workload {

std::int64_t norm_parameters(const ModelSpec& m) {
  return m.norm == Norm::kLayerNorm ? 2 * m.hidden : m.hidden;
}

std::int64_t layer_parameters(const ModelSpec& m) {
  const std::int64_t h = m.hidden, q = m.q_dim(), kv = m.kv_dim(), f = m.ffn_hidden;
  std::int64_t p = h * (q + 2 * kv) + q * h;  // QKV and attention output projections
  p += m.activation == Activation::kSwiglu ? 3 * h * f : 2 * h * f;
  if (m.bias) {
    p += (q + 2 * kv) + h;  // QKV and attention-output biases
    p += (m.activation == Activation::kSwiglu ? 2 * f : f) + h;
  }
  // A parallel block normalises once: attention and MLP read the same norm output.
  p += (m.parallel_block ? 1 : 2) * norm_parameters(m);
  return p;
}

std::int64_t embedding_parameters(const ModelSpec& m) {
  return m.vocab * m.hidden + (m.position == Position::kLearned ? m.seq * m.hidden : 0);
}

std::int64_t head_parameters(const ModelSpec& m) {
  return (m.tied_embeddings ? 0 : m.vocab * m.hidden) + norm_parameters(m);
}

std::int64_t total_parameters(const ModelSpec& m) {
  return m.layers * layer_parameters(m) + embedding_parameters(m) + head_parameters(m);
}

const char* to_string(Activation a) {
  switch (a) {
    case Activation::kGelu: return "gelu";
    case Activation::kSwiglu: return "swiglu";
    case Activation::kRelu: return "relu";
  }
  return "?";
}
const char* to_string(Norm n) {
  return n == Norm::kLayerNorm ? "layernorm" : "rmsnorm";
}
const char* to_string(Position p) {
  switch (p) {
    case Position::kLearned:
      return "learned";
    case Position::kRotary:
      return "rotary";
    case Position::kAlibi:
      return "alibi";
  }
  return "?";
}

}  // namespace megasim::workload
