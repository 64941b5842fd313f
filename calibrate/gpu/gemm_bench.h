// GEMM timing through cuBLASLt, bf16 and fp16 everywhere, fp8 (e4m3 in, bf16 out, "TN" only)
// on GPUs of compute capability 8.9 and up. The default grid's transformer shapes are timed
// "TN" (A transposed); megasim's bf16 forward GEMMs are "NN" and its dgrad "NT", which the
// grid prices by interpolation; a scenario's shapes (--shapes) are timed in their own layouts.
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
