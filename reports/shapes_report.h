// `megasim calibrate shapes`'s text: one line per distinct GEMM a scenario runs (m, n, k,
// batch, dtype, transposes), the list the CUDA tool measures; the JSON is io::gemm_shapes_to_json.
#pragma once

#include <string>
#include <vector>

#include "hw/kernel.h"

namespace megasim::reports {

std::string gemm_shapes_text(const std::vector<hw::GemmShape>& shapes, const std::string& name);

}  // namespace megasim::reports
