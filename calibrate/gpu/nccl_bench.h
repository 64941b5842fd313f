// NCCL collectives across all local GPUs from one process (one communicator, ncclCommInitAll),
// timed like nccl-tests: sizes as nccl-tests reports them, algbw = size / time, busbw = algbw ×
// the op's bus factor. Forcing NCCL_ALGO / NCCL_PROTO re-creates the communicator, since NCCL
// reads them at initialisation.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "calibrate/gpu/gpu_common.h"
#include "hw/device_profile.h"

namespace megasim::gpu {

struct NcclPlan {
  std::vector<hw::CollectiveOp> ops;
  std::vector<double> sizes;  // bytes
  std::vector<std::pair<std::string, std::string>> forced;  // (algo, proto); ("","") = NCCL's choice
  // Rows a resumed run holds already (--resume): not measured again.
  std::vector<hw::CollectiveMeasurement> done;
  bool holds(hw::CollectiveOp op, double size, const std::string& algo,
             const std::string& proto) const;
};

NcclPlan default_nccl_plan(bool quick);

void measure_collectives(int devices, const NcclPlan& plan, const Budget& budget,
                         const std::function<void(const hw::CollectiveMeasurement&)>& on_result,
                         const std::function<void(const std::string&)>& on_error);

// A GEMM's slowdown on device 0 while an all-reduce of `bytes` runs beside it on all devices:
// time(GEMM with all-reduce) / time(GEMM alone).
double measure_interference(int devices, double bytes, const Budget& budget);

}  // namespace megasim::gpu
