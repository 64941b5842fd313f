// The calibration tests' toy GPU: 100 TFLOP/s bf16, 1 TB/s HBM at full efficiency, 8 SMs, two
// tile shapes and three GEMM size classes of 50 %, no launch overhead, so that the fits'
// arithmetic is easy to follow.
#pragma once

#include "hw/device_profile.h"

namespace megasim::test {

inline hw::DeviceProfile toy_profile() {
  hw::DeviceProfile p;
  p.name = "toy";
  p.peak[hw::DType::kBf16] = tflop_per_s(100.0);
  p.hbm_bandwidth = gbyte_per_s(1000.0);
  p.sm_count = 8;
  p.gemm.tiles = {{128, 128}, {128, 256}};
  // Three classes: up to 1 GFLOP, up to 30 GFLOP, larger.
  p.gemm.classes = {{Flops(1e9), 0.5}, {Flops(30e9), 0.5}, {Flops(1e30), 0.5}};
  p.memory_model.bandwidth_efficiency = 1.0;
  return p;
}

}  // namespace megasim::test
