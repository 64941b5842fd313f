// Prices one kernel on one GPU: KernelCostModel::cost(shape) → {time, source}.
//
// Three ways to answer, best first, and the answer says which one it used so a report can
// state how much of a step rested on measurement:
//   measured  the profile's calibrated table covers the shape: the measured time at that
//             shape, or, between measured shapes, the analytical model corrected by the
//             measured/model ratio interpolated in log space over (m, n, k) or bytes;
//   fitted    the analytical model with efficiencies fitted to this device's measurements:
//             GEMM = tile and wave quantisation × efficiency per size class, fused attention
//             = FLOPs at a fitted fraction of peak, memory-bound = bytes at a fitted fraction
//             of HBM bandwidth; each with a launch overhead and a memory-time floor;
//   roofline  the same formulas with efficiencies stated in a datasheet profile (with their
//             sources), not fitted to measurements of this device.
// The model copies the profile it is built from; it is immutable and thread-safe.
#pragma once

#include <array>
#include <map>
#include <string>
#include <vector>

#include "engine/time.h"
#include "hw/device_profile.h"
#include "hw/kernel.h"

namespace megasim::hw {

enum class CostSource { kMeasured, kFitted, kRoofline };
const char* to_string(CostSource s);

struct KernelCost {
  Time time;
  CostSource source = CostSource::kRoofline;
};

// Time priced by each source over many kernels: what a report states as "x % of the step's
// kernel time rested on measurements".
struct CostShare {
  Time measured = Time::zero(), fitted = Time::zero(), roofline = Time::zero();

  void add(const KernelCost& c);
  Time total() const { return measured + fitted + roofline; }
  double measured_fraction() const;  // 0 when nothing was added
};

// One line on where a profile's numbers come from, for a report's header:
// "datasheet profile a100-sxm4-80gb: no measured calibration; ...".
std::string provenance(const DeviceProfile& p);

class KernelCostModel {
 public:
  explicit KernelCostModel(DeviceProfile profile);

  KernelCost cost(const KernelShape& shape) const;
  KernelCost gemm(const GemmShape& g) const;
  KernelCost attention(const AttentionShape& a) const;
  KernelCost memory(const MemoryShape& m) const;

  // The analytical GEMM time alone (no table): what `fitted`/`roofline` answers.
  Time model_gemm_time(const GemmShape& g) const;
  // Its compute part at a given efficiency, without launch overhead or memory floor: the
  // quantity the GEMM fit scales (time = overhead + compute_time(1) / efficiency).
  Time model_gemm_compute_time(const GemmShape& g, double efficiency) const;
  Time model_memory_time(Bytes moved) const;

  // A compute kernel's time while NCCL kernels run beside it.
  Time with_interference(Time compute) const;

  const DeviceProfile& profile() const { return profile_; }

 private:
  CostSource model_source(bool fitted) const;

  // The measured GEMMs of one dtype, prepared once: log2 of (m, n, k·batch), the log of the
  // measured/model ratio, and the box they span.
  struct GemmRow {
    std::array<double, 3> at;
    double log_ratio;
    std::size_t index;  // into profile_.gemm_table (an index, so copies stay valid)
  };
  struct GemmTable {
    std::vector<GemmRow> rows;
    std::array<double, 3> lo, hi;
  };

  DeviceProfile profile_;
  std::map<DType, GemmTable> gemm_tables_;
};

}  // namespace megasim::hw
