// `megasim calibrate shapes`: every distinct GEMM the scenario's plan runs on any stage
// (forward, recompute, backward), in order of first appearance: the shapes a calibration
// should measure for it, taken from the same assembly `simulate` prices.
#pragma once

#include <vector>

#include "hw/kernel.h"
#include "io/inputs.h"

namespace megasim::plan {

std::vector<hw::GemmShape> calibration_gemm_shapes(const io::Inputs& inputs);

}  // namespace megasim::plan
