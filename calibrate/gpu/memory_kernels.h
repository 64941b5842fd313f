// Launchers of the memory-bound kernels in memory_kernels.cu (host-callable, no CUDA syntax).
#pragma once

#include <cstddef>

#include <cuda_runtime.h>

namespace megasim::gpu {

// What a buffer is filled with: uniform values in [-1, 1) of the element type ([0, 1) for
// kFp32Positive, e.g. Adam's second moment), never zeros (tensor cores run faster and draw
// less power on zeros: an 8192^3 bf16 GEMM on an H200, 894 against 788 TFLOP/s).
enum class Fill { kBf16, kFp16, kFp8E4m3, kFp32, kFp32Positive };
// Fills n elements of `kind` at `p`, different values for each seed.
void launch_fill(void* p, std::size_t n, Fill kind, unsigned int seed, cudaStream_t s);
// Keeps the GPU busy for about `microseconds`, so that what the host queues next (the start
// event, the kernel, the stop event) runs back to back and no launch latency is timed.
void launch_spin(double microseconds, cudaStream_t s);

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
