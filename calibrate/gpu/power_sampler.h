// Board power by activity through NVML: device 0's power is sampled every 20 ms while the
// GPUs sit idle, run GEMMs back to back, run copies back to back, and run all-reduces only;
// the mean of each phase goes to power.{idle,gemm,memory,communication}_w and the enforced
// power limit to power.tdp_w (the SM clock under the GEMM load goes into power.source).
//
// NVML is loaded at run time from libnvidia-ml.so.1, which the NVIDIA driver installs, so the
// tool builds without nvml.h or the library; where it cannot be loaded, measure_power() throws
// GpuError saying so and the caller keeps the base profile's power figures.
#pragma once

#include "calibrate/gpu/gpu_common.h"
#include "hw/device_profile.h"

namespace megasim::gpu {

void measure_power(hw::DeviceProfile& p, int devices, const Budget& budget);

}  // namespace megasim::gpu
