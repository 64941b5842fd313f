// Prices one kernel on one GPU: KernelCostModel::cost(shape) → {time, source}.
//
// Three ways to answer, best first, and the answer says which one it used so a report can
// state how much of a step rested on measurement:
//   measured  the profile's calibrated table covers the shape: the measured time at that
//             shape, or, between measured shapes, the analytical model corrected by the
//             measured/model ratio interpolated in log space over (m, n, k·batch) for GEMMs,
//             (batch·heads, seq) for fused attention, or bytes for memory-bound kernels;
//             a profile whose peak, HBM or SMs were edited since its measurement
//             (DeviceProfile::measured_with) moves each of these by the model's time at the
//             edited figures over its time at the measured ones;
//   fitted    the analytical model with efficiencies fitted to this device's measurements:
//             GEMM = tile and wave quantisation × efficiency per size class, fused attention
//             = FLOPs at a fitted fraction of peak, memory-bound = bytes at a fitted fraction
//             of HBM bandwidth; each with a launch overhead and a memory-time floor;
//   roofline  the same formulas with efficiencies stated in a datasheet profile (with their
//             sources), not fitted to measurements of this device.
// The model copies the profile it is built from; it is immutable and thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
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
  // The GEMM with only `sms` of the device's SMs (the others running a collective's kernel, as
  // Transformer Engine's userbuffers reserve them): gemm(g) scaled by the model's time on
  // those SMs over its time on all (more waves; the same memory floor and launch). `sms` at or
  // above the device's count is gemm(g).
  KernelCost gemm_on_sms(const GemmShape& g, std::int64_t sms) const;
  KernelCost attention(const AttentionShape& a) const;
  KernelCost memory(const MemoryShape& m) const;

  // The analytical GEMM time alone (no table): what `fitted`/`roofline` answers.
  Time model_gemm_time(const GemmShape& g) const;
  Time model_gemm_time(const GemmShape& g, std::int64_t sms) const;  // on `sms` of the SMs
  // Its compute part at a given efficiency, without launch overhead or memory floor: the
  // quantity the GEMM fit scales (time = overhead + compute_time(1) / efficiency).
  Time model_gemm_compute_time(const GemmShape& g, double efficiency) const;
  Time model_gemm_compute_time(const GemmShape& g, double efficiency, std::int64_t sms) const;
  Time model_memory_time(Bytes moved) const;
  // The analytical fused attention time alone (no table), and its compute part at a given
  // efficiency (hardware FLOPs over the dense peak, without launch overhead or memory floor):
  // the quantity the attention fit scales (time = overhead + compute_time(1) / efficiency ×
  // (1 + half / F), F the pass's hardware GFLOP).
  Time model_attention_time(const AttentionShape& a) const;
  Time model_attention_compute_time(const AttentionShape& a, double efficiency) const;
  // A fused pass's hardware FLOPs (the backward's Q·Kᵀ recompute counted: 2.5× the forward's),
  // the work its efficiency ramp (AttentionModelParams' half) is of.
  static double attention_hardware_flops(const AttentionShape& a);

  // A compute kernel's time while NCCL kernels run beside it.
  Time with_interference(Time compute) const;

  const DeviceProfile& profile() const { return profile_; }

 private:
  CostSource model_source(bool fitted) const;
  // The model at the figures the tables were measured with: this one unless they were edited.
  const KernelCostModel& anchor() const { return anchor_ ? *anchor_ : *this; }
  // A measured time moved by an edit of the figures: × model / model at the measured figures.
  Time edited(Time measured, Time model, Time anchored) const;

  // The measured rows of one kernel family, prepared once: each row's place in log2 space,
  // the log of its measured/model ratio, its index in the profile's table (an index, so copies
  // stay valid), and the box the rows span.
  template <std::size_t N>
  struct RatioTable {
    struct Row {
      std::array<double, N> at;
      double log_ratio;
      std::size_t index;
    };
    std::vector<Row> rows;
    std::array<double, N> lo{}, hi{};

    void add(const std::array<double, N>& at, double log_ratio, std::size_t index);
    // The log ratio at `q`, weighted by inverse squared distance over the nearest rows;
    // nothing outside the box, where the model is the better guess.
    std::optional<double> log_ratio_at(const std::array<double, N>& q) const;
  };
  // Fused attention rows interpolate only among rows of the same pass, dtype, head dim, mask
  // and query heads per KV head (grouped-query attention reads less K and V).
  using AttentionKey = std::tuple<bool, DType, std::int64_t, bool, std::int64_t, std::int64_t>;
  static AttentionKey attention_key(const AttentionShape& a);

  DeviceProfile profile_;
  // The model of the profile at its `measured_with` figures, without tables; null where they
  // are the profile's own or there is no table to anchor.
  std::shared_ptr<const KernelCostModel> anchor_;
  // By dtype and accumulation (GemmShape::fast_accum), at log2 (m, n, k·batch).
  std::map<std::pair<DType, bool>, RatioTable<3>> gemm_tables_;
  std::map<AttentionKey, RatioTable<2>> attention_tables_;  // at log2 (batch·heads, seq)
};

}  // namespace megasim::hw
