// Launchers of the memory-bound kernels in memory_kernels.cu (host-callable, no CUDA syntax).
#pragma once

#include <cstddef>

#include <cuda_runtime.h>

namespace megasim::gpu {

// bf16 GeLU over n elements: reads 2n bytes, writes 2n.
void launch_gelu(const void* in, void* out, std::size_t n, cudaStream_t s);
// Adam step over n fp32 parameters: reads p, g, m, v (16n bytes), writes p, m, v (12n).
void launch_adam(float* p, const float* g, float* m, float* v, std::size_t n, cudaStream_t s);

}  // namespace megasim::gpu
