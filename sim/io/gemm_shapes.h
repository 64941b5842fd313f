// Shape lists: the GEMMs a scenario runs, as a JSON file that `megasim calibrate shapes`
// writes and the CUDA measuring tool reads (`--shapes FILE`), so that a calibration measures
// exactly the shapes the simulation will price.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "hw/kernel.h"
#include "io/json_reader.h"

namespace megasim::io {

// {"source": ..., "gemm_shapes": [{"m", "n", "k", "batch", "dtype", "transpose_a",
// "transpose_b"}, ...]}
Json gemm_shapes_to_json(const std::vector<hw::GemmShape>& shapes, const std::string& source);
std::vector<hw::GemmShape> read_gemm_shapes(const std::filesystem::path& file);

}  // namespace megasim::io
