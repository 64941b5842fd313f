// Fitting the cost models to measurements, on the CPU, with Eigen least squares.
//
// Every fit minimises relative error (each row is divided by its measured time), so a 10 µs
// kernel and a 10 ms kernel count alike, and reports the RMS relative residual over the rows
// it used. Fits are linear in their unknowns:
//   collective   time = alpha + bus_factor(op, n) · size / bus_bandwidth
//                (alpha-beta per op, communicator size, node count, algorithm and protocol)
//   GEMM         time = overhead + compute_time(efficiency 1) · (k + k_half) / k
//                       / efficiency[size class]
//                (compute_time carries the tile and wave quantisation of hw::KernelCostModel;
//                linear for a given k_half, which is searched for by its residual when the
//                rows of one size class have two reduction lengths or more, else held;
//                overhead >= 0 and efficiency <= 1, by bounded least squares)
//   memory       time = overhead + bytes / (HBM bandwidth · efficiency)
//   attention    time = GEMM launch overhead + compute_time(efficiency 1) / efficiency[pass]
//                (fused kernels, forward and backward apart; compute_time counts hardware
//                FLOPs at the dense peak as hw::KernelCostModel does)
//   power        watts = Σ share_a · W_a over the activities a (GEMM, memory-bound,
//                communication, idle), the time-weighted mix the run level charges a step
// An intercept that comes out negative is dropped and the fit redone through the origin.
#pragma once

#include <string>
#include <vector>

#include "hw/device_profile.h"

namespace megasim::calibrate {

struct FitQuality {
  int points = 0;
  double rms_relative_residual = 0.0;
};

// One fit per (op, ranks, nodes, algorithm, protocol, run) group with at least two distinct
// sizes: runs are kept apart, since two runs of one log may differ in setup.
std::vector<hw::CollectiveFit> fit_collectives(const std::vector<hw::CollectiveMeasurement>& rows);

// Why a run (or a shape) of `ranks` ranks with `sizes` message sizes has no fit: a collective
// with one rank moves nothing between GPUs, alpha and beta need two sizes, and a time that does
// not grow with the size gives no beta. Said alike by `calibrate import`, `calibrate fit` and
// the scale fit of `calibrate import --cluster`.
inline constexpr const char* kOneRankNoFit = "one rank moves nothing between GPUs";
std::string no_fit_reason(int ranks, std::size_t sizes);

struct GemmFit {
  hw::GemmModelParams params;  // `base`'s tiles, fitted overhead, class efficiencies, k_half
  FitQuality quality;
  std::vector<int> points_per_class;  // classes without points keep `base`'s efficiency
  bool k_half_fitted = false;         // false: the profile's k_half, held
  // The classes with points, grouped: each group one efficiency. A class of fewer than two
  // different shapes joins its neighbour (one shape would fit its efficiency exactly to
  // whatever the overhead leaves of it).
  std::vector<std::vector<std::size_t>> groups;
  std::vector<std::size_t> at_peak;  // classes the bound held at 100 % of the peak
  int beyond_waves = 0;  // rows faster than the wave model at the peak (split-K): left out
};
// `profile` supplies peak, SM count, tiles and the size-class bounds; its table is not read.
// The overhead is bounded at 0 and each efficiency at 100 % of the peak; a row faster than the
// peak itself is refused (a wrong peak_tflops).
GemmFit fit_gemm(const hw::DeviceProfile& profile, const std::vector<hw::GemmMeasurement>& rows);
// What the fit merged, held at the peak and left out, as "; "-led clauses ("" if nothing).
std::string gemm_fit_notes(const GemmFit& fit);

struct MemoryFit {
  hw::MemoryModelParams params;
  FitQuality quality;
};
MemoryFit fit_memory(const hw::DeviceProfile& profile,
                     const std::vector<hw::MemoryMeasurement>& rows);

struct AttentionFit {
  hw::AttentionModelParams params;  // `profile`'s, with the efficiency of each measured pass
  FitQuality forward, backward;     // 0 points: that pass had no usable row and kept its figure
  // The pass's rows could not tell its ramp's half (sizes under 1.5× apart): `profile`'s kept,
  // the efficiency fitted through the rows with it.
  bool forward_half_kept = false, backward_half_kept = false;
};
// Fused attention efficiency per pass: the fraction of the dense peak, and the work at which a
// pass reaches half of it (the ramp, AttentionModelParams), that best reproduce the
// compute-bound rows (least squares on relative error, the launch overhead taken from the
// profile's GEMM model). Rows whose sizes lie less than 1.5× apart keep `profile`'s half and fit
// the efficiency through it; rows that would put the half below 0 or the efficiency above the
// peak fit the efficiency alone (half 0). Rows whose memory
// time exceeds their compute time are left out.
AttentionFit fit_attention(const hw::DeviceProfile& profile,
                           const std::vector<hw::AttentionMeasurement>& rows);

struct PowerFit {
  hw::PowerProfile params;  // `profile`'s, with the watts of every activity the readings cover
  FitQuality quality;
  std::vector<hw::Activity> kept;  // activities no reading covers: the base profile's figure
  std::vector<hw::Activity> capped;  // activities the readings put above the power limit
  std::vector<hw::Activity> raised;  // working activities put below idle, raised to it
  int solved = 0;  // activities the readings were solved for: with no more readings, exactly
  // Activities one reading alone spends time in: each such figure is whatever meets that
  // reading (unless capped or raised), which the residual therefore does not judge.
  std::vector<hw::Activity> single;
};
// Board power against activity from sustained phases, pure and duty-cycled: least squares on
// relative error for the power of each activity. The linear mix is what the run level
// assumes when it charges a step's GEMM, memory-bound, communication and idle time; the
// residual says how far the GPU departs from it (clocks boost when it idles part of the time).
// Fitted watts above the power limit are capped at it (`capped` names them), a working
// activity's below idle raised to idle (`raised`), and the residual is that of those figures.
PowerFit fit_power(const hw::DeviceProfile& profile,
                   const std::vector<hw::PowerMeasurement>& rows);

// Refits every model of `p` that its tables cover (GEMM classes on the bf16 rows when there
// are any, then fused attention with the refitted launch overhead), marks those models
// fitted, and returns a line per fit for the report ("gemm: 42 points, rms 3.1 %"). Without
// `failures` the first model that cannot be fitted throws its InputError; with it (`calibrate
// fit` and the GPU tool, whose run must keep what it measured), that model is left as it was,
// its error appended, and the others still fitted. `fitted`, if given, receives how many
// models were (the collectives count only where some shape was fitted).
std::vector<std::string> refit_profile(hw::DeviceProfile& p,
                                       std::vector<std::string>* failures = nullptr,
                                       int* fitted = nullptr);

}  // namespace megasim::calibrate
