// Fused attention's fit (fit.h): the efficiency per pass and the work at which a pass reaches
// half of it, by linear least squares on relative error.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "calibrate/fit.h"
#include "engine/error.h"
#include "hw/kernel_cost_model.h"

namespace megasim::calibrate {

namespace {

// A measured fused-attention row in the ramp fit's terms (fit_attention).
struct RampRow {
  double a, b, y, gflop;
};
struct RampSolution {
  double x = 1.0, z = 0.0, rms = 0.0;
  bool half_kept = false;  // z = kept half · x: the input profile's half, the rows unable to
                           // tell it
};

// Least squares of a·x + b·z ≈ y over the rows. Where the rows' sizes lie less than 1.5× apart
// the ramp's half is not measured: the input profile's (`kept_half`) is kept, z = kept_half · x,
// and x fitted alone (half 0 where that would put the efficiency above the peak). Where both
// unknowns would put z below 0 or the efficiency 1 / x above the peak (noisy rows over a short
// span), x alone with z = 0: the ramp is left out rather than the fit refused.
RampSolution solve_ramp(const std::vector<RampRow>& rows, double kept_half) {
  double aa = 0.0, ab = 0.0, bb = 0.0, ay = 0.0, by = 0.0;
  double least = rows.front().gflop, most = least;
  for (const auto& r : rows) {
    aa += r.a * r.a;
    ab += r.a * r.b;
    bb += r.b * r.b;
    ay += r.a * r.y;
    by += r.b * r.y;
    least = std::min(least, r.gflop);
    most = std::max(most, r.gflop);
  }
  RampSolution s;
  s.x = ay / aa;
  const double det = aa * bb - ab * ab;
  // Sizes at least 1.5x apart, so that the two unknowns are told apart.
  if (most >= 1.5 * least && det > 1e-12 * aa * bb) {
    const double x = (ay * bb - by * ab) / det, z = (aa * by - ab * ay) / det;
    if (z >= 0.0 && x >= 1.0) s = {x, z, 0.0, false};
  } else if (kept_half > 0.0) {
    // (a + b·h)·x ≈ y: the sums above give Σ(a + b·h)·y and Σ(a + b·h)².
    const double h = kept_half;
    const double x = (ay + h * by) / (aa + 2.0 * h * ab + h * h * bb);
    if (x >= 1.0) s = {x, h * x, 0.0, true};
  }
  double sum = 0.0;
  for (const auto& r : rows) {
    const double e = r.a * s.x + r.b * s.z - r.y;
    sum += e * e;
  }
  s.rms = std::sqrt(sum / static_cast<double>(rows.size()));
  return s;
}

}  // namespace

AttentionFit fit_attention(const hw::DeviceProfile& profile,
                           const std::vector<hw::AttentionMeasurement>& rows) {
  hw::DeviceProfile bare = profile;
  bare.attention_table.clear();
  const hw::KernelCostModel model(bare);
  const double overhead = profile.gemm.launch_overhead.to_seconds();
  AttentionFit out;
  out.params = profile.attention;
  for (const bool backward : {false, true}) {
    // time = overhead + compute_i(1) / efficiency × (1 + half / F_i) (the ramp, F_i the row's
    // hardware GFLOP). With a_i = compute_i(1) / t_i, b_i = a_i / F_i and y_i = 1 − overhead /
    // t_i, the relative error of row i is a_i·x + b_i·z − y_i, linear in x = 1 / efficiency and
    // z = half / efficiency: least squares over both, or over x alone with half 0 where
    // solve_ramp cannot tell them apart or the pair is not physical.
    std::vector<RampRow> used;
    for (const auto& r : rows) {
      const hw::AttentionShape& a = r.shape;
      if (a.backward != backward || !a.fused || a.flash_version != hw::kMeasuredFlashVersion) {
        continue;
      }
      const double t = r.time.to_seconds();
      const double compute = model.model_attention_compute_time(a, 1.0).to_seconds();
      const double memory = model.model_memory_time(a.bytes_moved()).to_seconds();
      if (t <= overhead || memory > compute) continue;
      const double gflop = 1e-9 * hw::KernelCostModel::attention_hardware_flops(a);
      used.push_back({compute / t, compute / t / gflop, 1.0 - overhead / t, gflop});
    }
    if (used.empty()) continue;
    const RampSolution s = solve_ramp(used, backward ? profile.attention.backward_half_gflop
                                                     : profile.attention.forward_half_gflop);
    const double efficiency = 1.0 / s.x;
    const char* pass = backward ? "backward" : "forward";
    // Above 100 % of peak is not physical (a wrong peak_tflops); below the loader's 1 % floor
    // the kernel cannot have been a fused one.
    if (!(efficiency >= 0.01 && efficiency <= 1.0)) {  // NaN too
      throw InputError(
          fmt::format("fused attention fit: the {} pass comes out at {:.1f} % of "
                      "the profile's peak; check peak_tflops of '{}' and the "
                      "attention_table",
                      pass, 100.0 * efficiency, profile.name));
    }
    (backward ? out.params.fused_backward_efficiency : out.params.fused_forward_efficiency) =
        efficiency;
    (backward ? out.params.backward_half_gflop : out.params.forward_half_gflop) = s.z / s.x;
    (backward ? out.backward : out.forward) = FitQuality{static_cast<int>(used.size()), s.rms};
    (backward ? out.backward_half_kept : out.forward_half_kept) = s.half_kept;
  }
  if (out.forward.points + out.backward.points == 0) {
    throw InputError(
        fmt::format("fused attention fit needs at least one compute-bound row "
                    "longer than the launch overhead; the table has {} rows",
                    rows.size()));
  }
  out.params.fitted = true;
  return out;
}

}  // namespace megasim::calibrate
