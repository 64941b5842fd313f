// What a GPU kernel is, as far as pricing it goes: the exact per-rank shape of a GEMM, an
// attention core, or a memory-bound kernel, with its data type. The workload generator emits
// these (inside its ops); the kernel cost model of a device profile prices them. Plain value
// types; FLOP and byte counts are derived here once so every caller agrees on them.
#pragma once

#include <cstdint>
#include <string>
#include <variant>

#include "engine/units.h"

namespace megasim::hw {

enum class DType { kFp32, kTf32, kBf16, kFp16, kFp8 };

std::size_t dtype_bytes(DType t);
const char* to_string(DType t);

// C[m×n] = A[m×k] · B[k×n], `batch` independent products. Layout flags follow BLAS (a
// transposed operand is stored k-major), as cuBLASLt is called.
struct GemmShape {
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t batch = 1;
  DType dtype = DType::kBf16;
  bool transpose_a = false, transpose_b = false;
  // FP8 only: cuBLASLt's fast accumulation (CUBLASLT_MATMUL_DESC_FAST_ACCUM), which Transformer
  // Engine's forward GEMMs take; its dgrad and wgrad GEMMs take the split accumulation (false).
  bool fast_accum = false;

  Flops flops() const;        // 2·m·n·k·batch
  Bytes bytes_moved() const;  // read A and B once, write C once
  bool operator==(const GemmShape&) const = default;
};

// The attention core softmax(Q·Kᵀ/√d)·V of one layer on one rank, forward or backward.
// `window` > 0 restricts each query to the last `window` keys (sliding-window attention).
// Fused (flash-style, one kernel) or unfused (two batched GEMMs around a softmax).
struct AttentionShape {
  std::int64_t batch = 1, heads = 1, kv_heads = 1, seq = 1, head_dim = 64;
  // Context-parallel ranks the sequence is split over: this rank's queries are seq / cp (two
  // load-balanced chunks) against all seq keys, so it computes 1/cp of the pairs.
  std::int64_t cp = 1;
  bool causal = true;
  std::int64_t window = 0;
  bool backward = false;
  bool fused = true;
  // Generation of the fused kernel: 1 = FlashAttention (Dao et al. 2022), 2 = FlashAttention-2.
  int flash_version = 2;
  DType dtype = DType::kBf16;

  // Query-key pairs actually computed by this rank (causal halves them; a window caps them;
  // context parallelism divides them over cp ranks).
  double attended_pairs() const;
  // Useful FLOPs: 4·b·h·pairs·d forward (QKᵀ and PV), 2× that backward. The fused backward
  // also recomputes QKᵀ (2.5× in all): hardware work, which the cost model adds, not model work.
  Flops flops() const;
  Bytes bytes_moved() const;
  bool operator==(const AttentionShape&) const = default;
};

enum class MemoryKernel {
  kCopy,
  kLayerNorm,
  kRmsNorm,
  kGelu,
  kSwiglu,
  kDropoutResidual,
  kBiasDropoutResidual,
  kSoftmax,
  kRotary,
  kEmbedding,
  kCrossEntropy,
  kAdam,
  kLamb,
};
const char* to_string(MemoryKernel k);

// A kernel bound by memory bandwidth: the bytes it reads and writes, and its (minor) FLOPs.
struct MemoryShape {
  MemoryKernel kind = MemoryKernel::kCopy;
  Bytes bytes_read{0.0};
  Bytes bytes_written{0.0};
  Flops flops{0.0};
};

using KernelShape = std::variant<GemmShape, AttentionShape, MemoryShape>;

Flops kernel_flops(const KernelShape& k);
Bytes kernel_bytes(const KernelShape& k);
std::string describe(const KernelShape& k);  // "gemm 4096x12288x1536 bf16"

}  // namespace megasim::hw
