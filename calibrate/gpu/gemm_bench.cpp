#include "calibrate/gpu/gemm_bench.h"

#include <cstdint>
#include <utility>

#include <cublasLt.h>

namespace megasim::gpu {
namespace {

// cuBLASLt may use this much scratch; 32 MiB is what PyTorch gives it on Hopper.
constexpr std::size_t kWorkspaceBytes = 32u << 20;

void check_lt(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    throw GpuError(std::string(what) + " failed with cuBLAS status " + std::to_string(s));
  }
}

cudaDataType_t cuda_type(hw::DType t) {
  switch (t) {
    case hw::DType::kBf16: return CUDA_R_16BF;
    case hw::DType::kFp16: return CUDA_R_16F;
    case hw::DType::kFp8: return CUDA_R_8F_E4M3;
    case hw::DType::kTf32:
    case hw::DType::kFp32: return CUDA_R_32F;
  }
  return CUDA_R_32F;
}

// Owns the device buffers and descriptors of one GEMM; frees them however the timing ends.
class LtGemm {
 public:
  LtGemm(cublasLtHandle_t lt, const hw::GemmShape& g, cudaStream_t stream)
      : lt_(lt), stream_(stream) {
    // A shape refused part-way (no algorithm, a heuristic error) frees what it took: the
    // destructor does not run after a throwing constructor (a failed 8192 x 8192 x 2048 fp8
    // shape kept its 190 MiB until 2026-12-06).
    try {
      set_up(g);
    } catch (...) {
      release();
      throw;
    }
  }
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;
  ~LtGemm() { release(); }

  void launch() {
    const float alpha = 1.0f, beta = 0.0f;
    check_lt(cublasLtMatmul(lt_, desc_, &alpha, a_, la_, b_, lb_, &beta, c_, lc_, c_, lc_,
                            &heur_.algo, workspace_, kWorkspaceBytes, stream_),
             "cublasLtMatmul");
  }

 private:
  void set_up(const hw::GemmShape& g) {
    cudaStream_t stream = stream_;
    const cudaDataType_t in = cuda_type(g.dtype);
    // fp8 GEMMs write bf16, as Transformer Engine's do; others write their input type.
    const cudaDataType_t out = g.dtype == hw::DType::kFp8 ? CUDA_R_16BF : in;
    const std::size_t ein = hw::dtype_bytes(g.dtype);
    const std::size_t eout = g.dtype == hw::DType::kFp8 ? 2 : ein;
    const auto m = static_cast<std::uint64_t>(g.m), n = static_cast<std::uint64_t>(g.n),
               k = static_cast<std::uint64_t>(g.k);
    const auto batch = static_cast<std::uint64_t>(g.batch);
    MEGASIM_CUDA_CHECK(cudaMalloc(&a_, batch * m * k * ein));
    MEGASIM_CUDA_CHECK(cudaMalloc(&b_, batch * k * n * ein));
    MEGASIM_CUDA_CHECK(cudaMalloc(&c_, batch * m * n * eout));
    MEGASIM_CUDA_CHECK(cudaMalloc(&workspace_, kWorkspaceBytes));
    // Operands of uniform values, never zeros (memory_kernels.h: Fill).
    const Fill fill = g.dtype == hw::DType::kFp8    ? Fill::kFp8E4m3
                      : g.dtype == hw::DType::kFp16 ? Fill::kFp16
                      : g.dtype == hw::DType::kBf16 ? Fill::kBf16
                                                    : Fill::kFp32;  // tf32 and fp32 read fp32
    launch_fill(a_, batch * m * k, fill, 1, stream);
    launch_fill(b_, batch * k * n, fill, 2, stream);
    MEGASIM_CUDA_CHECK(cudaGetLastError());
    MEGASIM_CUDA_CHECK(cudaStreamSynchronize(stream));
    const cublasComputeType_t compute =
        g.dtype == hw::DType::kTf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    check_lt(cublasLtMatmulDescCreate(&desc_, compute, CUDA_R_32F), "cublasLtMatmulDescCreate");
    const cublasOperation_t ta = g.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t tb = g.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    check_lt(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta),
             "set TRANSA");
    check_lt(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb),
             "set TRANSB");
    if (g.fast_accum) {
      // Transformer Engine's forward FP8 GEMMs; the default (0) is its dgrad's and wgrad's.
      const std::int8_t fast = 1;
      check_lt(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast,
                                              sizeof fast),
               "set FAST_ACCUM");
    }
    // Column-major: op(A) is m×k, op(B) is k×n, C is m×n.
    check_lt(cublasLtMatrixLayoutCreate(&la_, in, g.transpose_a ? k : m, g.transpose_a ? m : k,
                                        static_cast<std::int64_t>(g.transpose_a ? k : m)),
             "layout A");
    check_lt(cublasLtMatrixLayoutCreate(&lb_, in, g.transpose_b ? n : k, g.transpose_b ? k : n,
                                        static_cast<std::int64_t>(g.transpose_b ? n : k)),
             "layout B");
    check_lt(cublasLtMatrixLayoutCreate(&lc_, out, m, n, static_cast<std::int64_t>(m)),
             "layout C");
    if (g.batch > 1) {
      // Strided batches, as attention's per-head products are laid out.
      const std::int32_t count = static_cast<std::int32_t>(g.batch);
      const std::int64_t strides[3] = {static_cast<std::int64_t>(m * k),
                                       static_cast<std::int64_t>(k * n),
                                       static_cast<std::int64_t>(m * n)};
      const cublasLtMatrixLayout_t layouts[3] = {la_, lb_, lc_};
      for (int i = 0; i < 3; ++i) {
        check_lt(cublasLtMatrixLayoutSetAttribute(layouts[i], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                  &count, sizeof count),
                 "batch count");
        check_lt(cublasLtMatrixLayoutSetAttribute(layouts[i],
                                                  CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                  &strides[i], sizeof strides[i]),
                 "batch stride");
      }
    }
    check_lt(cublasLtMatmulPreferenceCreate(&pref_), "preference");
    const std::size_t ws = kWorkspaceBytes;
    check_lt(cublasLtMatmulPreferenceSetAttribute(pref_, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                  &ws, sizeof ws),
             "workspace preference");
    int found = 0;
    check_lt(cublasLtMatmulAlgoGetHeuristic(lt_, desc_, la_, lb_, lc_, lc_, pref_, 1, &heur_,
                                            &found),
             "cublasLtMatmulAlgoGetHeuristic");
    if (found == 0) throw GpuError("cuBLASLt has no algorithm for " + hw::describe(g));
  }
  void release() noexcept {
    if (pref_) cublasLtMatmulPreferenceDestroy(pref_);
    if (lc_) cublasLtMatrixLayoutDestroy(lc_);
    if (lb_) cublasLtMatrixLayoutDestroy(lb_);
    if (la_) cublasLtMatrixLayoutDestroy(la_);
    if (desc_) cublasLtMatmulDescDestroy(desc_);
    cudaFree(workspace_);
    cudaFree(c_);
    cudaFree(b_);
    cudaFree(a_);
  }

  cublasLtHandle_t lt_;
  cudaStream_t stream_;
  void *a_ = nullptr, *b_ = nullptr, *c_ = nullptr, *workspace_ = nullptr;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t la_ = nullptr, lb_ = nullptr, lc_ = nullptr;
  cublasLtMatmulPreference_t pref_ = nullptr;
  cublasLtMatmulHeuristicResult_t heur_{};
};

}  // namespace

std::vector<hw::GemmShape> default_gemm_grid(bool quick, bool fp8) {
  // --quick keeps 256 and 1024: with 512, 2048 and 8192 alone one shape (512^3) was at most
  // 1 GFLOP, the smallest size class, whose efficiency one shape cannot tell from the launch
  // overhead (calibrate/gemm_fit.cpp). 124 cubes a type, a few seconds on an H200.
  std::vector<std::int64_t> sizes =
      quick ? std::vector<std::int64_t>{256, 512, 1024, 2048, 8192}
            : std::vector<std::int64_t>{256, 512, 1024, 2048, 4096, 8192, 16384};
  std::vector<hw::GemmShape> out;
  // Each type once; fp8 twice, with the split accumulation (Transformer Engine's dgrad and
  // wgrad) and the fast one (its forward GEMMs).
  std::vector<std::pair<hw::DType, bool>> types = {{hw::DType::kBf16, false}};
  if (!quick) types.emplace_back(hw::DType::kFp16, false);
  if (fp8) {
    types.emplace_back(hw::DType::kFp8, false);
    types.emplace_back(hw::DType::kFp8, true);
  }
  for (const auto& [t, fast] : types) {
    for (std::int64_t m : sizes) {
      for (std::int64_t n : sizes) {
        for (std::int64_t k : sizes) {
          // Keep the grid within minutes: skip the largest cubes outside the full run.
          if (quick && m * n * k > (std::int64_t{8192} * 8192 * 2048)) continue;
          out.push_back({m, n, k, 1, t, true, false, fast});
        }
      }
    }
    // Transformer layers, 2048 or 4096 tokens per micro-batch: GPT-3 175B (h 12288) on TP 8
    // (QKV 4608, proj, MLP 6144) and Llama-2 70B (h 8192, MLP 28672) on TP 8.
    for (std::int64_t tokens : {2048, 4096}) {
      const std::vector<std::pair<std::int64_t, std::int64_t>> layers = {
          {4608, 12288}, {12288, 1536}, {6144, 12288}, {12288, 6144},
          {1280, 8192},  {8192, 1024},  {3584, 8192},  {8192, 3584}};
      for (const auto& [n, k] : layers) {
        out.push_back({tokens, n, k, 1, t, true, false, fast});
      }
    }
  }
  // The batched products of unfused attention, in the shapes and layouts
  // hw::KernelCostModel prices them with (so a measured row matches exactly): head dim 128,
  // 16 or 32 heads per rank, forward Q·Kᵀ and P·V, backward dV, dP, dQ, dK.
  for (std::int64_t seq : quick ? std::vector<std::int64_t>{2048}
                                : std::vector<std::int64_t>{1024, 2048, 4096}) {
    for (std::int64_t bh : {16, 32}) {
      const std::int64_t d = 128;
      const hw::DType t = hw::DType::kBf16;
      out.push_back({seq, seq, d, bh, t, false, true});   // Q·Kᵀ, dP = dO·Vᵀ
      out.push_back({seq, d, seq, bh, t, false, false});  // P·V, dQ = dS·K
      out.push_back({seq, d, seq, bh, t, true, false});   // dV = Pᵀ·dO, dK = dSᵀ·Q
    }
  }
  return out;
}

void measure_gemms(const std::vector<hw::GemmShape>& shapes, const Budget& budget,
                   const std::function<void(const hw::GemmMeasurement&)>& on_result,
                   const std::function<void(const std::string&)>& on_error) {
  cublasLtHandle_t lt = nullptr;
  check_lt(cublasLtCreate(&lt), "cublasLtCreate");
  cudaStream_t stream = nullptr;
  MEGASIM_CUDA_CHECK(cudaStreamCreate(&stream));
  for (const auto& g : shapes) {
    try {
      LtGemm gemm(lt, g, stream);
      const double s = median_seconds(stream, budget, [&] { gemm.launch(); });
      on_result({g, Time::from_seconds(s)});
    } catch (const GpuError& e) {
      // Cleared first: an on_error that throws (interference, power) must not leave it set.
      (void)cudaGetLastError();
      on_error(hw::describe(g) + ": " + e.what());
    }
  }
  cudaStreamDestroy(stream);
  cublasLtDestroy(lt);
}

}  // namespace megasim::gpu
