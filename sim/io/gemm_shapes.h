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
// "transpose_b", and "fast_accum" where true}, ...]}
Json gemm_shapes_to_json(const std::vector<hw::GemmShape>& shapes, const std::string& source);
std::vector<hw::GemmShape> read_gemm_shapes(const std::filesystem::path& file);

// `g.fast_accum` from `r`'s optional "fast_accum" (a shape list's or a measured table's row,
// `g.dtype` already read): true only on an fp8 GEMM, else an InputError at the key.
void read_fast_accum(JsonReader& r, hw::GemmShape& g);

}  // namespace megasim::io
