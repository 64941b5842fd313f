// Launchers of the memory-bound kernels in memory_kernels.cu (host-callable, no CUDA syntax).
#pragma once

#include <cstddef>

#include <cuda_runtime.h>

namespace megasim::gpu {

// bf16 GeLU over n elements: reads 2n bytes, writes 2n.
void launch_gelu(const void* in, void* out, std::size_t n, cudaStream_t s);
// Adam step over n fp32 parameters: reads p, g, m, v (16n bytes), writes p, m, v (12n).
void launch_adam(float* p, const float* g, float* m, float* v, std::size_t n, cudaStream_t s);

// bf16 row softmax over rows × cols scores: reads and writes 2·rows·cols bytes each.
void launch_softmax(const void* in, void* out, std::size_t rows, int cols, cudaStream_t s);
// bf16 SwiGLU silu(gate)·up over n elements: reads 4n bytes, writes 2n.
void launch_swiglu(const void* gate, const void* up, void* out, std::size_t n, cudaStream_t s);
// bf16 residual + dropout(x, p = 0.1): reads 4n bytes, writes 2n.
void launch_dropout_residual(const void* x, const void* residual, void* out, std::size_t n,
                             cudaStream_t s);
// bf16 LayerNorm or RMSNorm over rows × hidden: reads 2·rows·hidden (+ weight), writes the same.
void launch_norm(const void* in, const void* weight, void* out, std::size_t rows, int hidden,
                 bool layernorm, cudaStream_t s);
// LAMB step over n fp32 parameters, two passes: reads 16n + 8n bytes, writes 12n + 4n.
// `u` holds n floats of scratch, `norms` two.
void launch_lamb(float* p, const float* g, float* m, float* v, float* u, float* norms,
                 std::size_t n, cudaStream_t s);

}  // namespace megasim::gpu
