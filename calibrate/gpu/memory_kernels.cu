// Memory-bound kernels for measuring achieved bandwidth, written as frameworks' fused kernels
// are (PyTorch's vectorised elementwise loops, Megatron's and Transformer Engine's norms):
// 16-byte loads and stores of eight bf16 values a thread, grid-stride loops, one block per row
// for the norms and the softmax. Until 2026-12-05 they moved one 2-byte value a thread a load,
// which kept too little in flight to use HBM: on the H200 of 2026-12-04, GeLU reached 1.79 TB/s
// against a copy's 4.24, and the simulator priced those kernels from those rows. Bf16 GeLU,
// SwiGLU, dropout + residual, LayerNorm and RMSNorm, softmax, and the Adam and LAMB updates on
// fp32 parameters with fp32 moments (four bytes a value already).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "calibrate/gpu/memory_kernels.h"

namespace megasim::gpu {
namespace {

// Eight bf16 values as floats, one 16-byte load or store (p aligned to 16 bytes: cudaMalloc's
// buffers, rows of a multiple of eight values).
struct Eight {
  float x[8];
};

__device__ Eight load8(const __nv_bfloat16* p) {
  const uint4 raw = *reinterpret_cast<const uint4*>(p);
  const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&raw);
  Eight e;
  for (int k = 0; k < 4; ++k) {
    const float2 f = __bfloat1622float2(h[k]);
    e.x[2 * k] = f.x;
    e.x[2 * k + 1] = f.y;
  }
  return e;
}

__device__ void store8(__nv_bfloat16* p, const Eight& e) {
  uint4 raw;
  __nv_bfloat162* h = reinterpret_cast<__nv_bfloat162*>(&raw);
  for (int k = 0; k < 4; ++k) h[k] = __floats2bfloat162_rn(e.x[2 * k], e.x[2 * k + 1]);
  *reinterpret_cast<uint4*>(p) = raw;
}

__device__ std::size_t thread_index() {
  return blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
}
__device__ std::size_t thread_count() { return static_cast<std::size_t>(gridDim.x) * blockDim.x; }

// tanh approximation, as Megatron's fused bias-GeLU uses.
__device__ float gelu(float x) {
  return 0.5f * x * (1.0f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x)));
}

// Elementwise kernels: eight values a thread a pass over n / 8, then the last n % 8 one by one.
__global__ void gelu_kernel(const __nv_bfloat16* in, __nv_bfloat16* out, std::size_t n) {
  const std::size_t vectors = n / 8;
  for (std::size_t i = thread_index(); i < vectors; i += thread_count()) {
    Eight e = load8(in + 8 * i);
    for (float& x : e.x) x = gelu(x);
    store8(out + 8 * i, e);
  }
  for (std::size_t i = 8 * vectors + thread_index(); i < n; i += thread_count()) {
    out[i] = __float2bfloat16(gelu(__bfloat162float(in[i])));
  }
}

// Adam's moment updates for one element (m and v updated in place) and its step direction
// m / (√v + ε), shared by the Adam and LAMB kernels.
__device__ float adam_step(float g, float& m, float& v, float b1, float b2, float eps) {
  m = b1 * m + (1.0f - b1) * g;
  v = b2 * v + (1.0f - b2) * g * g;
  return m / (sqrtf(v) + eps);
}

__global__ void adam_kernel(float* p, const float* g, float* m, float* v, std::size_t n,
                            float lr, float b1, float b2, float eps) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    p[i] -= lr * adam_step(g[i], m[i], v[i], b1, b2, eps);
  }
}

// Counter-based hash for dropout masks (no RNG state to read or write).
__device__ unsigned int mix(unsigned long long i) {
  unsigned long long z = i + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return static_cast<unsigned int>(z ^ (z >> 31));
}

__device__ float swiglu(float g, float u) { return g / (1.0f + __expf(-g)) * u; }

__global__ void swiglu_kernel(const __nv_bfloat16* gate, const __nv_bfloat16* up,
                              __nv_bfloat16* out, std::size_t n) {
  const std::size_t vectors = n / 8;
  for (std::size_t i = thread_index(); i < vectors; i += thread_count()) {
    Eight g = load8(gate + 8 * i);
    const Eight u = load8(up + 8 * i);
    for (int k = 0; k < 8; ++k) g.x[k] = swiglu(g.x[k], u.x[k]);
    store8(out + 8 * i, g);
  }
  for (std::size_t i = 8 * vectors + thread_index(); i < n; i += thread_count()) {
    out[i] = __float2bfloat16(swiglu(__bfloat162float(gate[i]), __bfloat162float(up[i])));
  }
}

__global__ void dropout_residual_kernel(const __nv_bfloat16* x, const __nv_bfloat16* residual,
                                        __nv_bfloat16* out, std::size_t n, float p) {
  const unsigned int threshold = static_cast<unsigned int>(p * 4294967295.0f);
  const float scale = 1.0f / (1.0f - p);
  const auto one = [&](float xi, float ri, std::size_t i) {
    return ri + (mix(i) >= threshold ? xi * scale : 0.0f);
  };
  const std::size_t vectors = n / 8;
  for (std::size_t i = thread_index(); i < vectors; i += thread_count()) {
    Eight e = load8(x + 8 * i);
    const Eight r = load8(residual + 8 * i);
    for (int k = 0; k < 8; ++k) e.x[k] = one(e.x[k], r.x[k], 8 * i + k);
    store8(out + 8 * i, e);
  }
  for (std::size_t i = 8 * vectors + thread_index(); i < n; i += thread_count()) {
    out[i] = __float2bfloat16(one(__bfloat162float(x[i]), __bfloat162float(residual[i]), i));
  }
}

// Block-wide sum (blockDim.x a multiple of 32, at most 1024).
__device__ float block_sum(float v) {
  __shared__ float partial[32];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = threadIdx.x < blockDim.x / 32 ? partial[lane] : 0.0f;
  if (warp == 0) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (lane == 0) partial[0] = v;
  }
  __syncthreads();
  const float total = partial[0];
  __syncthreads();
  return total;
}

// One block per row of `hidden` bf16 values (eight at a time where hidden is a multiple of
// eight, so every row starts 16-byte aligned); LayerNorm subtracts the mean, RMSNorm does not.
__global__ void norm_kernel(const __nv_bfloat16* in, const __nv_bfloat16* weight,
                            __nv_bfloat16* out, int hidden, bool layernorm) {
  const __nv_bfloat16* row = in + static_cast<std::size_t>(blockIdx.x) * hidden;
  __nv_bfloat16* dst = out + static_cast<std::size_t>(blockIdx.x) * hidden;
  const int vectors = hidden % 8 == 0 ? hidden / 8 : 0;
  float sum = 0.0f, sq = 0.0f;
  for (int i = threadIdx.x; i < vectors; i += blockDim.x) {
    for (const float x : load8(row + 8 * i).x) {
      sum += x;
      sq += x * x;
    }
  }
  for (int i = 8 * vectors + threadIdx.x; i < hidden; i += blockDim.x) {
    const float x = __bfloat162float(row[i]);
    sum += x;
    sq += x * x;
  }
  const float mean = layernorm ? block_sum(sum) / hidden : 0.0f;
  const float var = block_sum(sq) / hidden - mean * mean;
  const float inv = rsqrtf(var + 1e-5f);
  for (int i = threadIdx.x; i < vectors; i += blockDim.x) {
    Eight e = load8(row + 8 * i);
    const Eight w = load8(weight + 8 * i);
    for (int k = 0; k < 8; ++k) e.x[k] = (e.x[k] - mean) * inv * w.x[k];
    store8(dst + 8 * i, e);
  }
  for (int i = 8 * vectors + threadIdx.x; i < hidden; i += blockDim.x) {
    const float x = __bfloat162float(row[i]);
    dst[i] = __float2bfloat16((x - mean) * inv * __bfloat162float(weight[i]));
  }
}

// LAMB, pass 1: Adam moments and the raw update u, with ‖p‖² and ‖u‖² summed into norms[0..1].
__global__ void lamb_update_kernel(const float* p, const float* g, float* m, float* v, float* u,
                                   std::size_t n, float b1, float b2, float eps, float wd,
                                   float* norms) {
  float pp = 0.0f, uu = 0.0f;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const float ui = adam_step(g[i], m[i], v[i], b1, b2, eps) + wd * p[i];
    u[i] = ui;
    pp += p[i] * p[i];
    uu += ui * ui;
  }
  pp = block_sum(pp);
  uu = block_sum(uu);
  if (threadIdx.x == 0) {
    atomicAdd(&norms[0], pp);
    atomicAdd(&norms[1], uu);
  }
}

// LAMB, pass 2: p -= lr · (‖p‖ / ‖u‖) · u.
__global__ void lamb_apply_kernel(float* p, const float* u, std::size_t n, float lr,
                                  const float* norms) {
  const float pn = sqrtf(norms[0]), un = sqrtf(norms[1]);
  const float trust = pn > 0.0f && un > 0.0f ? pn / un : 1.0f;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    p[i] -= lr * trust * u[i];
  }
}

// Row softmax of bf16 attention scores (one block per row of `cols`, eight at a time where
// cols is a multiple of eight), as the unfused path runs between Q·Kᵀ and P·V.
__global__ void softmax_kernel(const __nv_bfloat16* in, __nv_bfloat16* out, int cols) {
  const __nv_bfloat16* row = in + static_cast<std::size_t>(blockIdx.x) * cols;
  __nv_bfloat16* dst = out + static_cast<std::size_t>(blockIdx.x) * cols;
  const int vectors = cols % 8 == 0 ? cols / 8 : 0;
  float mx = -INFINITY;
  for (int i = threadIdx.x; i < vectors; i += blockDim.x) {
    for (const float x : load8(row + 8 * i).x) mx = fmaxf(mx, x);
  }
  for (int i = 8 * vectors + threadIdx.x; i < cols; i += blockDim.x) {
    mx = fmaxf(mx, __bfloat162float(row[i]));
  }
  // Block-wide max: warp shuffles, then across warps through shared memory.
  __shared__ float shared_max[32];
  for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
  if (threadIdx.x % 32 == 0) shared_max[threadIdx.x / 32] = mx;
  __syncthreads();
  mx = -INFINITY;
  for (int w = 0; w < static_cast<int>(blockDim.x / 32); ++w) mx = fmaxf(mx, shared_max[w]);
  float sum = 0.0f;
  for (int i = threadIdx.x; i < vectors; i += blockDim.x) {
    for (const float x : load8(row + 8 * i).x) sum += __expf(x - mx);
  }
  for (int i = 8 * vectors + threadIdx.x; i < cols; i += blockDim.x) {
    sum += __expf(__bfloat162float(row[i]) - mx);
  }
  const float inv = 1.0f / block_sum(sum);
  for (int i = threadIdx.x; i < vectors; i += blockDim.x) {
    Eight e = load8(row + 8 * i);
    for (float& x : e.x) x = __expf(x - mx) * inv;
    store8(dst + 8 * i, e);
  }
  for (int i = 8 * vectors + threadIdx.x; i < cols; i += blockDim.x) {
    dst[i] = __float2bfloat16(__expf(__bfloat162float(row[i]) - mx) * inv);
  }
}

// Uniform in [lo, hi) from element i's hash (no RNG state).
__device__ float uniform(std::size_t i, unsigned int seed, float lo, float hi) {
  const unsigned int bits = mix((static_cast<unsigned long long>(seed) << 40) ^ i);
  return lo + (hi - lo) * (static_cast<float>(bits >> 8) * (1.0f / 16777216.0f));
}

__global__ void fill_kernel(void* p, std::size_t n, int kind, unsigned int seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const float lo = kind == static_cast<int>(Fill::kFp32Positive) ? 0.0f : -1.0f;
    const float x = uniform(i, seed, lo, 1.0f);
    switch (static_cast<Fill>(kind)) {
      case Fill::kBf16:
        static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16(x);
        break;
      case Fill::kFp16:
        static_cast<__half*>(p)[i] = __float2half(x);
        break;
      case Fill::kFp8E4m3:
        static_cast<__nv_fp8_e4m3*>(p)[i] = __nv_fp8_e4m3(x);
        break;
      case Fill::kFp32:
      case Fill::kFp32Positive:
        static_cast<float*>(p)[i] = x;
        break;
    }
  }
}

// Spins for `cycles` SM clock cycles on one thread: the GPU stays busy while the host queues
// what is timed behind it.
__global__ void spin_kernel(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

constexpr int kThreads = 256;

// Blocks for `n` items of work a thread each; the 8-wide kernels (GeLU, SwiGLU, dropout +
// residual) pass their vectors, (n + 7) / 8: sized by elements until 2026-12-06, a 1 MiB row
// launched eight times the blocks it had work for, the idle ones inside the timed window.
int blocks_for(std::size_t n) {
  int sms = 0, dev = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  const std::size_t want = (n + kThreads - 1) / kThreads;
  const std::size_t cap = static_cast<std::size_t>(sms) * 32;
  return static_cast<int>(want < cap ? want : cap);
}

}  // namespace

void launch_fill(void* p, std::size_t n, Fill kind, unsigned int seed, cudaStream_t s) {
  if (n == 0) return;
  fill_kernel<<<blocks_for(n), kThreads, 0, s>>>(p, n, static_cast<int>(kind), seed);
}

void launch_spin(double microseconds, cudaStream_t s) {
  int khz = 0, dev = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, dev);
  // At the boost clock; a lower clock spins longer, which only queues more.
  spin_kernel<<<1, 1, 0, s>>>(static_cast<long long>(microseconds * 1e-3 * khz));
}

void launch_gelu(const void* in, void* out, std::size_t n, cudaStream_t s) {
  gelu_kernel<<<blocks_for((n + 7) / 8), kThreads, 0, s>>>(static_cast<const __nv_bfloat16*>(in),
                                                           static_cast<__nv_bfloat16*>(out), n);
}

void launch_adam(float* p, const float* g, float* m, float* v, std::size_t n, cudaStream_t s) {
  adam_kernel<<<blocks_for(n), kThreads, 0, s>>>(p, g, m, v, n, 1e-4f, 0.9f, 0.95f, 1e-8f);
}

void launch_softmax(const void* in, void* out, std::size_t rows, int cols, cudaStream_t s) {
  softmax_kernel<<<static_cast<unsigned int>(rows), kThreads, 0, s>>>(
      static_cast<const __nv_bfloat16*>(in), static_cast<__nv_bfloat16*>(out), cols);
}

void launch_swiglu(const void* gate, const void* up, void* out, std::size_t n, cudaStream_t s) {
  swiglu_kernel<<<blocks_for((n + 7) / 8), kThreads, 0, s>>>(
      static_cast<const __nv_bfloat16*>(gate), static_cast<const __nv_bfloat16*>(up),
      static_cast<__nv_bfloat16*>(out), n);
}

void launch_dropout_residual(const void* x, const void* residual, void* out, std::size_t n,
                             cudaStream_t s) {
  dropout_residual_kernel<<<blocks_for((n + 7) / 8), kThreads, 0, s>>>(
      static_cast<const __nv_bfloat16*>(x), static_cast<const __nv_bfloat16*>(residual),
      static_cast<__nv_bfloat16*>(out), n, 0.1f);
}

void launch_norm(const void* in, const void* weight, void* out, std::size_t rows, int hidden,
                 bool layernorm, cudaStream_t s) {
  norm_kernel<<<static_cast<unsigned int>(rows), kThreads, 0, s>>>(
      static_cast<const __nv_bfloat16*>(in), static_cast<const __nv_bfloat16*>(weight),
      static_cast<__nv_bfloat16*>(out), hidden, layernorm);
}

void launch_lamb(float* p, const float* g, float* m, float* v, float* u, float* norms,
                 std::size_t n, cudaStream_t s) {
  cudaMemsetAsync(norms, 0, 2 * sizeof(float), s);
  lamb_update_kernel<<<blocks_for(n), kThreads, 0, s>>>(p, g, m, v, u, n, 0.9f, 0.999f, 1e-6f,
                                                         0.01f, norms);
  lamb_apply_kernel<<<blocks_for(n), kThreads, 0, s>>>(p, u, n, 1e-3f, norms);
}

}  // namespace megasim::gpu
