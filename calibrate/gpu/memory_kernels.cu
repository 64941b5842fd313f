// Memory-bound kernels for measuring achieved bandwidth, written the plain way a framework's
// elementwise kernels are (grid-stride loops): GeLU on bf16 and the Adam update on fp32
// parameters with fp32 moments.
#include <cuda_bf16.h>

#include "calibrate/gpu/memory_kernels.h"

namespace megasim::gpu {
namespace {

__global__ void gelu_kernel(const __nv_bfloat16* in, __nv_bfloat16* out, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const float x = __bfloat162float(in[i]);
    // tanh approximation, as Megatron's fused bias-GeLU uses.
    const float y = 0.5f * x * (1.0f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x)));
    out[i] = __float2bfloat16(y);
  }
}

__global__ void adam_kernel(float* p, const float* g, float* m, float* v, std::size_t n,
                            float lr, float b1, float b2, float eps) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const float gi = g[i];
    const float mi = b1 * m[i] + (1.0f - b1) * gi;
    const float vi = b2 * v[i] + (1.0f - b2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    p[i] -= lr * mi / (sqrtf(vi) + eps);
  }
}

constexpr int kThreads = 256;

int blocks_for(std::size_t n) {
  int sms = 0, dev = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  const std::size_t want = (n + kThreads - 1) / kThreads;
  const std::size_t cap = static_cast<std::size_t>(sms) * 32;
  return static_cast<int>(want < cap ? want : cap);
}

}  // namespace

void launch_gelu(const void* in, void* out, std::size_t n, cudaStream_t s) {
  gelu_kernel<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const __nv_bfloat16*>(in),
                                                  static_cast<__nv_bfloat16*>(out), n);
}

void launch_adam(float* p, const float* g, float* m, float* v, std::size_t n, cudaStream_t s) {
  adam_kernel<<<blocks_for(n), kThreads, 0, s>>>(p, g, m, v, n, 1e-4f, 0.9f, 0.95f, 1e-8f);
}

}  // namespace megasim::gpu
