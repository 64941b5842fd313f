// Fused attention timing through cuDNN's scaled-dot-product-attention (flash) engines, driven
// through the graph (backend) API as the operation graphs cudnn_frontend builds for its SDPA
// node on cuDNN 9 before 9.21 (its "composite" lowering), which the fused engines recognise:
//
//   forward   S = Q·Kᵀ; S·scale; causal mask (row and column indices, row ≥ col, select −inf)
//             and, for a sliding window, col + window > row likewise; softmax as max, sub,
//             exp, sum, div, with Stats = max + log(sum) written in fp32 for the backward;
//             O = P·V (P in bf16)
//   backward  D = rowsum(dO∘O); P = exp(scale·Q·Kᵀ − Stats) masked as above; dV = Pᵀ·dO;
//             dS = P∘(dO·Vᵀ − D)·scale; dK = dSᵀ·Q; dQ = dS·K accumulated in fp32
//
// bf16 Q, K, V, O in BHSD layout, batch 1, head dim 128, causal. Each pass is timed with CUDA
// events, warm-up and median of repeats (gpu_common.h), and reported as a row whose shape is
// the hw::AttentionShape the cost model prices (FLOPs counted as AttentionShape::flops()).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "calibrate/gpu/gpu_common.h"
#include "hw/device_profile.h"

namespace megasim::gpu {

// Forward shapes of the default grid (each is measured forward, then backward): 12 and 16
// heads per rank (and 32 outside --quick) at 2k and 4k tokens (and 8k outside --quick), plus
// a 1024-token sliding window at 16 heads.
std::vector<hw::AttentionShape> default_attention_grid(bool quick);

// Times each shape's forward and backward pass on the current device. A pass whose cuDNN
// graph, plan or run fails is reported through `on_error` and skipped; `on_result` is called
// after each measured pass.
void measure_attention(const std::vector<hw::AttentionShape>& shapes, const Budget& budget,
                       const std::function<void(const hw::AttentionMeasurement&)>& on_result,
                       const std::function<void(const std::string&)>& on_error);

}  // namespace megasim::gpu
