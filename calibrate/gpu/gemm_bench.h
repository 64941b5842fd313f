// GEMM timing through cuBLASLt in the layout training uses for weights (A transposed, "TN"),
// bf16 and fp16 everywhere, fp8 (e4m3 in, bf16 out) on GPUs of compute capability 8.9 and up.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "calibrate/gpu/gpu_common.h"
#include "hw/device_profile.h"

namespace megasim::gpu {

// The default grid: powers of two and the transformer shapes of GPT-3 175B / Llama on TP 1–8.
std::vector<hw::GemmShape> default_gemm_grid(bool quick, bool fp8);

// Times each shape on the current device; a shape whose cuBLASLt call fails is reported
// through `on_error` and skipped. `on_result` is called after each measured shape.
void measure_gemms(const std::vector<hw::GemmShape>& shapes, const Budget& budget,
                   const std::function<void(const hw::GemmMeasurement&)>& on_result,
                   const std::function<void(const std::string&)>& on_error);

}  // namespace megasim::gpu
