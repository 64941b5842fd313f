// What the simulator knows about one GPU model: peak rates, memory, power by activity, the
// compute/communication interference factor, the parameters of the kernel cost models, and,
// for a measured or imported calibration, the measured tables themselves.
//
// A profile is plain data: it is built by io::load_device_profile() from a JSON file (a
// datasheet profile in calibrate/profiles/ or the output of `megasim calibrate`), or by the
// fitting code in calibrate/. It carries a `source` for every published figure so that a
// report can say where a number came from. Node overhead power (CPUs, DRAM, fans, NICs) is a
// property of the server and belongs in the cluster file; a profile may name a reference
// system (e.g. DGX A100, 6.5 kW maximum) so that a power check has a published bound.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/time.h"
#include "engine/units.h"
#include "hw/collective_constants.h"
#include "hw/kernel.h"

namespace megasim::hw {

// Where a profile's numbers come from: a datasheet plus cited public measurements, a run of
// `megasim calibrate` on this GPU model, or measurements imported from logs (nccl-tests).
enum class ProfileKind { kDatasheet, kMeasured, kImported };
const char* to_string(ProfileKind k);

// What a GPU is doing, for power: GEMM-bound compute, memory-bound compute (elementwise,
// normalisation, unfused attention softmax), communication (NCCL kernels) with no compute
// beside it, and the step's pipeline bubble and wait for its slowest GPU, spent in posted NCCL
// receives (step_model.cpp), idle (exposed data loading, recovery after a failure). The
// one activity type: calibration fits, device profiles and the run-level power model all use
// it; the values index per-activity arrays.
enum class Activity { kGemm = 0, kMemory = 1, kCommunication = 2, kIdle = 3 };
constexpr std::size_t kActivityCount = 4;
const char* to_string(Activity a);

struct PowerProfile {
  Watts tdp{0.0};
  Watts idle{0.0};
  Watts gemm{0.0};
  Watts memory{0.0};
  Watts communication{0.0};
  std::string source;

  Watts at(Activity a) const;
};

// A published whole-system bound, e.g. DGX A100: 8 GPUs, 6.5 kW maximum.
struct ReferenceSystem {
  std::string name;
  int gpus = 0;
  Watts max_power{0.0};
  std::string source;
};

// GEMM efficiency by size class: a GEMM of `flops` uses the first class whose max_flops is at
// least its FLOP count (the last class takes everything larger). The efficiency multiplies
// the per-SM peak after tile and wave quantisation, so it is what cuBLAS reaches on a full
// wave of tiles, not the end-to-end fraction of peak.
struct GemmSizeClass {
  Flops max_flops{0.0};
  double efficiency = 1.0;
};

// A CTA tile cuBLAS may pick; the model takes the candidate that needs the least time.
struct GemmTile {
  std::int64_t m = 128, n = 128;
};

struct GemmModelParams {
  std::vector<GemmTile> tiles;  // never empty once loaded
  Time launch_overhead = Time::zero();
  std::vector<GemmSizeClass> classes;  // ascending max_flops; never empty once loaded
  // Short reduction dimensions run below the class efficiency: it is scaled by k / (k + k_half)
  // (each tile's prologue and epilogue are amortised over a k-long main loop). 0 = no effect.
  double k_half = 0.0;
  bool fitted = false;  // efficiencies fitted to this device's measurements, not stated
  std::string source;

  double efficiency_for(Flops f) const;
};

// Fused (flash-style) attention reaches these fractions of the dense tensor peak; the
// unfused path is priced as its two batched GEMMs and the softmax's memory passes. The
// backward's fraction counts its hardware work (Q·Kᵀ recomputed: 2.5× the forward's FLOPs),
// as published fused-backward efficiencies are quoted.
struct AttentionModelParams {
  double fused_forward_efficiency = 1.0;   // FlashAttention-2
  double fused_backward_efficiency = 1.0;
  // The first FlashAttention; unset, it is taken to run as fast as FlashAttention-2.
  std::optional<double> flash_v1_forward_efficiency, flash_v1_backward_efficiency;
  // A fused kernel fills the GPU only with enough work: a pass of F hardware GFLOP runs at the
  // efficiency above × F / (F + half), so at half its efficiency when F = half. 0: the
  // efficiency holds at every size (a profile without measured sizes to fit it on).
  double forward_half_gflop = 0.0, backward_half_gflop = 0.0;
  bool fitted = false;
  std::string source;
};

// Memory-bound kernels reach this fraction of the HBM datasheet bandwidth.
struct MemoryModelParams {
  double bandwidth_efficiency = 1.0;
  Time launch_overhead = Time::zero();
  bool fitted = false;
  std::string source;
};

// Compute kernels run `compute_slowdown` times longer while NCCL kernels run beside them.
struct InterferenceParams {
  double compute_slowdown = 1.0;
  std::string source;
};

// GPUs of one SKU are not equally fast: power management and manufacturing spread their
// sustained throughput across a fleet (Sinha et al., SC'22). `sigma` is that spread's standard
// deviation as a fraction of the mean; 0 leaves every GPU at the profile's speed.
struct FleetVariation {
  double sigma = 0.0;
  std::string source;

  // How much longer the slowest of `gpus` GPUs takes over the same compute than a GPU of mean
  // speed, as a fraction: sigma × the expected largest of `gpus` standard normal draws. A
  // synchronous step waits for its slowest GPU at every TP collective, PP hand-off and DP sync.
  double slowest_of(std::int64_t gpus) const;
};

// A board held at its power limit lowers its clock: GEMMs run slower sustained than in the
// burst a measured GEMM table times from a cool board, the more so the larger the share of the
// time they take (the rest of the time draws less and leaves headroom). Measured points of
// that share against the GEMMs' rate relative to the burst, shares increasing in (0, 1] and
// rates not increasing; no points: no slowdown (a board that never reaches its limit, or one
// never measured).
struct SustainedGemm {
  struct Point {
    double gemm_share = 0.0;  // of the time, the rest memory-bound work
    double rate = 1.0;        // GEMM rate over the burst rate
  };
  std::vector<Point> points;
  std::string source;

  // The rate at `gemm_share`: linear between (0, 1) and the points, the last point's beyond.
  double rate(double gemm_share) const;
  // How much longer GEMMs take at `gemm_share` than in a burst, as a fraction: 1/rate − 1.
  double slowdown(double gemm_share) const { return 1.0 / rate(gemm_share) - 1.0; }
};

// The expected largest of n independent standard normal draws (0 for n = 1), by quadrature.
double expected_max_of_normals(std::int64_t n);

// One measured GEMM: the shape and the median time of its repeats.
struct GemmMeasurement {
  GemmShape shape;
  Time time;
};

// The fused attention kernel class a measured row stands for: cuDNN's flash engine is of the
// FlashAttention-2 class, so a measured row prices only fused ops with this flash_version.
constexpr int kMeasuredFlashVersion = 2;

// One measured fused attention kernel (cuDNN's scaled-dot-product-attention engine): its
// shape (fused, kMeasuredFlashVersion), forward or backward, and the median time of repeats.
struct AttentionMeasurement {
  AttentionShape shape;
  Time time;
};

// One board-power reading of a sustained phase: the share of the phase's time each activity
// ran (the rest idle) and the mean power over the phase.
struct PowerMeasurement {
  double gemm_share = 0.0, memory_share = 0.0, communication_share = 0.0;
  Watts watts{0.0};
  double idle_share() const { return 1.0 - gemm_share - memory_share - communication_share; }
};

// One measured memory-bound kernel over `bytes` moved (read + written).
struct MemoryMeasurement {
  MemoryKernel kind = MemoryKernel::kCopy;
  Bytes bytes{0.0};
  Time time;
};

enum class CollectiveOp { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kSendRecv,
                          kBroadcast, kReduce };
const char* to_string(CollectiveOp op);
std::optional<CollectiveOp> collective_op_from_string(const std::string& s);

// One row of a collective benchmark (nccl-tests or `megasim calibrate`), with algbw and busbw
// as nccl-tests defines them (busbw = algbw × the op's bus factor, e.g. 2(n-1)/n for
// all-reduce). `algorithm`/`protocol` are empty when NCCL chose.
struct CollectiveMeasurement {
  CollectiveOp op = CollectiveOp::kAllReduce;
  int ranks = 0;
  int nodes = 0;
  Bytes size{0.0};
  bool in_place = false;
  Time time;
  BytesPerSec algbw{0.0};
  BytesPerSec busbw{0.0};
  std::string algorithm, protocol;
  std::string run;     // the run it belongs to ("log:line"); runs are fitted apart
  std::string origin;  // the row's own place ("log:line")
};

// Fitted alpha-beta model of one collective on one communicator size: time = alpha + size /
// beta_bus × bus_factor. Residual is the RMS relative error over the rows it was fitted on.
// A summary of a run for the import report: nothing prices with it (one line cannot follow
// NCCL's algorithm and protocol switches); the measured rows and CollectiveScaleFit do.
struct CollectiveFit {
  CollectiveOp op = CollectiveOp::kAllReduce;
  int ranks = 0;
  int nodes = 0;
  std::string algorithm, protocol;
  std::string run;
  Time alpha;
  BytesPerSec bus_bandwidth{0.0};
  double rms_relative_residual = 0.0;
  int points = 0;
};

// NCCL's model fitted to one imported run (calibrate/collective_scale_fit.h): the scale of its
// modelled bus bandwidth on the links the run crossed (NVLink for one node, the NICs for
// several) and an offset to its latency, by least squares in log time over the run's rows.
// A regime the run does not pin (too few rows where its term is 80 % of the modelled time) keeps
// its neutral value (scale 1, offset 0): the profile answers there.
struct CollectiveScaleFit {
  std::string run;      // the run's id ("log:line")
  std::string cluster;  // the fabric NCCL's model was evaluated on
  CollectiveOp op = CollectiveOp::kAllReduce;
  int ranks = 0;
  int nodes = 0;
  double bandwidth_scale = 1.0;
  double latency_offset_us = 0.0;
  int bandwidth_rows = 0;  // rows where the bandwidth term is 80 % of the modelled time or more
  int latency_rows = 0;    // rows where the latency term is
  int rows = 0;
  double rms_log_residual = 0.0;  // of ln(time), over every row of the run
  // What NCCL ran in the rows that pinned each regime, to which the scale then applies ("":
  // every algorithm; the rows ran several, or the calibration predates the field).
  std::string bandwidth_algorithm;                // "ring", "tree", "nvls", "nvls_tree", "pat" or ""
  std::string latency_algorithm, latency_protocol;  // protocol "": each of the algorithm's
};
// A run pins a regime with this many rows in it.
constexpr int kRowsToPinRegime = 2;

// The scales a profile's fits lay over NCCL's model: per link (NVLink: one-node runs; NICs:
// multi-node runs) and per algorithm (and protocol, for latency) a fit was pinned on, or for
// every algorithm where a fit names none, the row-weighted geometric mean of the pinned
// bandwidth scales and the row-weighted mean of the pinned latency offsets; neutral where no
// run pins them.
CollectiveScale collective_scale(const std::vector<CollectiveScaleFit>& fits);

// The hardware figures the analytical model is evaluated at: the dense peaks, the HBM
// bandwidth and the SM count.
struct HardwareFigures {
  std::map<DType, FlopsPerSec> peak;
  BytesPerSec hbm_bandwidth{0.0};
  int sm_count = 0;
  bool operator==(const HardwareFigures&) const = default;
};

// Versions and date of a measurement run.
struct MeasurementInfo {
  std::string date, tool, device_name, driver, cuda, cublas, cudnn, nccl;
};

struct DeviceProfile {
  std::string name;
  // The shipped profile a measured or imported one was made from ("" for a shipped one): what
  // the profile does not measure, its power preset included, comes from there.
  std::string base;
  ProfileKind kind = ProfileKind::kDatasheet;
  std::string source;

  std::map<DType, FlopsPerSec> peak;  // dense tensor-core peak per dtype
  BytesPerSec hbm_bandwidth{0.0};
  Bytes memory{0.0};
  int sm_count = 0;
  std::optional<double> boost_clock_mhz;

  PowerProfile power;
  std::optional<ReferenceSystem> reference_system;
  InterferenceParams interference;
  FleetVariation fleet_variation;
  SustainedGemm sustained_gemm;
  GemmModelParams gemm;
  AttentionModelParams attention;
  MemoryModelParams memory_model;

  // Measured or imported data (empty for a datasheet profile).
  std::optional<MeasurementInfo> measurement;
  // The figures the tables were measured and fitted at (`measured_with`): a row's
  // measured/model ratio is taken against the model there, so an edit of peak, HBM or SMs (a
  // what-if on a measured profile) moves every kernel the tables price by the model alone.
  // Unset: the profile's own figures (a calibration written before 2026-12-07).
  std::optional<HardwareFigures> measured_with;
  std::vector<GemmMeasurement> gemm_table;
  std::vector<AttentionMeasurement> attention_table;
  std::vector<PowerMeasurement> power_table;
  std::vector<MemoryMeasurement> memory_table;
  std::vector<CollectiveMeasurement> collective_table;
  std::vector<CollectiveFit> collective_fits;
  std::vector<CollectiveScaleFit> collective_scales;

  HardwareFigures figures() const { return {peak, hbm_bandwidth, sm_count}; }
  void set_figures(const HardwareFigures& f) {
    peak = f.peak;
    hbm_bandwidth = f.hbm_bandwidth;
    sm_count = f.sm_count;
  }
  // The peak for `t`; an fp8 GEMM on a GPU without fp8 is an InputError naming the profile.
  FlopsPerSec peak_for(DType t) const;
  bool has_peak(DType t) const;  // a positive peak_tflops entry for `t`
};

// nccl-tests' bus factor: busbw = algbw × factor(op, ranks).
double bus_factor(CollectiveOp op, int ranks);
// The ops whose buffer nccl-tests splits among the ranks (all-gather, reduce-scatter,
// all-to-all): its size is the whole buffer's and its count a rank's share of the elements.
bool splits_buffer(CollectiveOp op);

// The rows one run's figures come from: its out-of-place rows (nccl-tests' first columns), or
// its in-place ones where it has none. `rows` are of one run and one shape; both the measured
// table and calibrate's alpha-beta fit take them so.
std::vector<const CollectiveMeasurement*> run_side(std::vector<const CollectiveMeasurement*> rows);

// The measured time of `op` on exactly `ranks` ranks over `nodes` nodes at `size`, from every
// run of `table` that measured that shape with NCCL's own choice (no forced algorithm or
// protocol), each run's rows as run_side takes them, pooled by size (a size several rows hold:
// the first of them in table order): the row itself at a measured size, log-log linear between
// the nearest measured sizes on either side, nullopt outside the pooled sizes.
std::optional<Time> measured_collective_time(const std::vector<CollectiveMeasurement>& table,
                                             CollectiveOp op, int ranks, int nodes, Bytes size);

}  // namespace megasim::hw
