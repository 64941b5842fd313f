#include "hw/kernel.h"

#include <algorithm>
#include <cstdio>

namespace megasim::hw {

std::size_t dtype_bytes(DType t) {
  switch (t) {
    case DType::kFp32:
    case DType::kTf32: return 4;
    case DType::kBf16:
    case DType::kFp16: return 2;
    case DType::kFp8: return 1;
  }
  return 0;
}

const char* to_string(DType t) {
  switch (t) {
    case DType::kFp32: return "fp32";
    case DType::kTf32: return "tf32";
    case DType::kBf16: return "bf16";
    case DType::kFp16: return "fp16";
    case DType::kFp8: return "fp8";
  }
  return "?";
}

Flops GemmShape::flops() const {
  return Flops(2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) *
               static_cast<double>(batch));
}

Bytes GemmShape::bytes_moved() const {
  const double e = static_cast<double>(dtype_bytes(dtype));
  // FP8 GEMMs write a 16-bit result (cuBLASLt's FP8 kernels as Transformer Engine calls them:
  // bf16 output, fp32 accumulation).
  const double out = dtype == DType::kFp8 ? 2.0 : e;
  const double mm = static_cast<double>(m), nn = static_cast<double>(n),
               kk = static_cast<double>(k);
  return Bytes(static_cast<double>(batch) * (e * (mm * kk + kk * nn) + out * mm * nn));
}

double AttentionShape::attended_pairs() const {
  const double s = static_cast<double>(seq);
  double pairs = causal ? s * (s + 1) / 2.0 : s * s;
  if (window > 0 && window < seq) {
    // Each query sees min(i+1, window) keys (causal) or min(s, ...) otherwise.
    const double w = static_cast<double>(window);
    pairs = causal ? w * (w + 1) / 2.0 + (s - w) * w : s * std::min(s, 2.0 * w + 1.0);
  }
  return pairs / static_cast<double>(cp);
}

Flops AttentionShape::flops() const {
  const double fwd = 4.0 * static_cast<double>(batch) * static_cast<double>(heads) *
                     attended_pairs() * static_cast<double>(head_dim);
  return Flops(backward ? 2.0 * fwd : fwd);
}

Bytes AttentionShape::bytes_moved() const {
  const double e = static_cast<double>(dtype_bytes(dtype));
  const double b = static_cast<double>(batch), s = static_cast<double>(seq),
               d = static_cast<double>(head_dim);
  // Q in, O out: this rank's seq / cp queries; K and V: all seq keys.
  const double q_o = 2.0 * b * static_cast<double>(heads) * s / static_cast<double>(cp) * d;
  const double kv = 2.0 * b * static_cast<double>(kv_heads) * s * d;
  double bytes = e * (q_o + kv);
  if (backward) bytes *= 2.0;  // read dO, O, Q, K, V; write dQ, dK, dV
  if (!fused) {
    // The unfused path writes and reads the score matrix (b·h·s·s) twice per pass.
    bytes += 4.0 * e * b * static_cast<double>(heads) * s * s;
  }
  return Bytes(bytes);
}

const char* to_string(MemoryKernel k) {
  switch (k) {
    case MemoryKernel::kCopy: return "copy";
    case MemoryKernel::kLayerNorm: return "layernorm";
    case MemoryKernel::kRmsNorm: return "rmsnorm";
    case MemoryKernel::kGelu: return "gelu";
    case MemoryKernel::kSwiglu: return "swiglu";
    case MemoryKernel::kDropoutResidual: return "dropout_residual";
    case MemoryKernel::kBiasDropoutResidual: return "bias_dropout_residual";
    case MemoryKernel::kSoftmax: return "softmax";
    case MemoryKernel::kRotary: return "rotary";
    case MemoryKernel::kEmbedding: return "embedding";
    case MemoryKernel::kCrossEntropy: return "cross_entropy";
    case MemoryKernel::kAdam: return "adam";
    case MemoryKernel::kLamb: return "lamb";
  }
  return "?";
}

Flops kernel_flops(const KernelShape& k) {
  return std::visit(
      [](const auto& s) -> Flops {
        using T = std::decay_t<decltype(s)>;
        if constexpr (std::is_same_v<T, MemoryShape>) return s.flops;
        else return s.flops();
      },
      k);
}

Bytes kernel_bytes(const KernelShape& k) {
  return std::visit(
      [](const auto& s) -> Bytes {
        using T = std::decay_t<decltype(s)>;
        if constexpr (std::is_same_v<T, MemoryShape>) return s.bytes_read + s.bytes_written;
        else return s.bytes_moved();
      },
      k);
}

std::string describe(const KernelShape& k) {
  char buf[160];
  if (const auto* g = std::get_if<GemmShape>(&k)) {
    std::snprintf(buf, sizeof buf, "gemm %lldx%lldx%lld%s %s%s", static_cast<long long>(g->m),
                  static_cast<long long>(g->n), static_cast<long long>(g->k),
                  g->batch > 1 ? (" x" + std::to_string(g->batch)).c_str() : "",
                  to_string(g->dtype), g->fast_accum ? " fast-accum" : "");
  } else if (const auto* a = std::get_if<AttentionShape>(&k)) {
    std::snprintf(buf, sizeof buf, "attention %s %s b%lld h%lld s%lld d%lld%s",
                  a->fused ? "fused" : "unfused", a->backward ? "bwd" : "fwd",
                  static_cast<long long>(a->batch), static_cast<long long>(a->heads),
                  static_cast<long long>(a->seq), static_cast<long long>(a->head_dim),
                  a->window > 0 ? (" w" + std::to_string(a->window)).c_str() : "");
  } else {
    const auto& m = std::get<MemoryShape>(k);
    std::snprintf(buf, sizeof buf, "%s %.3g MB", to_string(m.kind),
                  (m.bytes_read + m.bytes_written).value() / 1e6);
  }
  return buf;
}

}  // namespace megasim::hw
