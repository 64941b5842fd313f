// Board power by activity through NVML: device 0's power is sampled every 20 ms while the
// GPUs sit idle, run GEMMs back to back, run copies back to back and duty-cycled (half and a
// quarter of the time, idle between bursts), and run all-reduces only. Each phase becomes a
// reading of power_table (the share of its time each activity ran, timed with CUDA events for
// the copies and by wall clock for the others, and the mean power), the enforced power limit
// goes to power.tdp_w, and the refit (calibrate::fit_power) turns the readings into
// power.{idle,gemm,memory,communication}_w with its residual.
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
