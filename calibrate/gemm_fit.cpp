// The GEMM fit: the launch overhead, each size class's efficiency and the short-k constant
// k_half, from measured GEMM times (calibrate/fit.h).
#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <set>
#include <string>
#include <utility>

#include <fmt/format.h>
#include <Eigen/Dense>

#include "calibrate/fit.h"
#include "calibrate/least_squares.h"
#include "engine/error.h"
#include "hw/kernel_cost_model.h"

namespace megasim::calibrate {
namespace {

struct Row {
  double t;         // measured, s
  double compute;   // the model's compute time at efficiency 1 (tiles and waves), s
  double k;         // reduction length
  std::size_t col;  // design column of the row's group of size classes (1-based; 0: overhead)
};

// The fewest different shapes a size class is fitted on alone: one shape fits its own
// efficiency exactly whatever the overhead, so the efficiency would be what the overhead leaves
// of that row (a --quick run's one 512^3 GEMM came out at -46 % of the peak).
constexpr std::size_t kMinShapesPerClass = 2;

struct Solution {
  Eigen::VectorXd x;  // overhead, then 1 / efficiency of each group of classes
  double rms = std::numeric_limits<double>::infinity();
};

// The model prices a GEMM at compute / (efficiency · k / (k + k_half)) + overhead, so for a
// given k_half the fit is linear in the overhead and in 1 / efficiency of each group. Bounded:
// the overhead at 0 or more, no group faster than the peak (1 / efficiency at 1 or more). The
// wave model has no split-K and no tile below 128 x 128, so small GEMMs grow less with their
// work than it says; unbounded, their class's efficiency went past the peak or below zero.
Solution solve(const std::vector<Row>& rows, std::size_t groups, double k_half) {
  const auto cols = static_cast<Eigen::Index>(groups + 1);
  Eigen::MatrixXd a = Eigen::MatrixXd::Zero(static_cast<Eigen::Index>(rows.size()), cols);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    a(static_cast<Eigen::Index>(i), 0) = 1.0 / r.t;
    a(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(r.col)) =
        r.compute * (r.k + k_half) / r.k / r.t;
  }
  Eigen::VectorXd lower = Eigen::VectorXd::Ones(cols);
  lower(0) = 0.0;
  BoundedFit fit = bounded_least_squares(a, lower);
  // A solve the step cap stopped is no candidate: the k_half search passes over it, and a fit
  // left with none says so (fit_gemm).
  if (!fit.converged) return {std::move(fit.x), std::numeric_limits<double>::infinity()};
  return {std::move(fit.x), fit.rms};
}

// k_half by its residual: a coarse grid (0 and powers of two up to 16,384), then a golden-
// section search in log k_half around the best point. Returns -1 when the residual is flat.
double search_k_half(const std::vector<Row>& rows, std::size_t groups) {
  const auto rms_at = [&](double kh) { return solve(rows, groups, kh).rms; };
  std::vector<double> grid{0.0};
  for (double kh = 16.0; kh <= 16384.0; kh *= 2.0) grid.push_back(kh);
  std::vector<double> rms(grid.size());
  std::transform(grid.begin(), grid.end(), rms.begin(), rms_at);
  const auto best =
      static_cast<std::size_t>(std::min_element(rms.begin(), rms.end()) - rms.begin());
  // A residual flat over the grid (each class's efficiency absorbs the factor) says nothing of
  // k_half.
  const double worst = *std::max_element(rms.begin(), rms.end());
  if (worst - rms[best] <= 1e-9 * (1.0 + rms[best])) return -1.0;
  // Between the neighbours of the best grid point, in log(1 + k_half) so that 0 is reachable.
  double lo = std::log1p(grid[best == 0 ? 0 : best - 1]);
  double hi = std::log1p(grid[std::min(best + 1, grid.size() - 1)]);
  const double phi = (std::sqrt(5.0) - 1.0) / 2.0;
  double c = hi - phi * (hi - lo), d = lo + phi * (hi - lo);
  double fc = rms_at(std::expm1(c)), fd = rms_at(std::expm1(d));
  for (int i = 0; i < 48; ++i) {
    if (fc <= fd) {
      hi = d, d = c, fd = fc;
      c = hi - phi * (hi - lo);
      fc = rms_at(std::expm1(c));
    } else {
      lo = c, c = d, fc = fd;
      d = lo + phi * (hi - lo);
      fd = rms_at(std::expm1(d));
    }
  }
  const double found = std::expm1(fc <= fd ? c : d);
  return std::min(fc, fd) <= rms[best] ? found : grid[best];
}

// A compute-bound row the fit can use, with its size class.
struct Kept {
  hw::GemmShape shape;
  double t;        // measured, s
  double compute;  // the model's compute time at efficiency 1, s
  std::size_t cls;
};

// The rows that say something of GEMM efficiency. Left out: rows whose memory time (at the
// profile's memory efficiency) exceeds their compute time at full efficiency, and rows faster
// than the wave model allows at the peak: their tiles leave SMs idle in the model's last wave,
// which cuBLAS fills (split-K, stream-K, smaller tiles), so no efficiency reaches them (the
// table still prices them). A row faster than the peak itself is a wrong peak: refused.
std::vector<Kept> usable_rows(const hw::DeviceProfile& profile, const hw::KernelCostModel& model,
                              const std::vector<hw::GemmMeasurement>& rows, GemmFit& out) {
  const auto& classes = profile.gemm.classes;
  std::vector<Kept> kept;
  for (const auto& r : rows) {
    const double compute = model.model_gemm_compute_time(r.shape, 1.0).to_seconds();
    const double memory = model.model_memory_time(r.shape.bytes_moved()).to_seconds();
    const double t = r.time.to_seconds();
    if (t <= 0.0 || r.shape.k <= 0 || memory > compute) continue;
    const double peak = profile.peak_for(r.shape.dtype).value();
    if (r.shape.flops().value() > t * peak) {
      throw InputError(
          fmt::format("GEMM fit: {} ran at {:.1f} TFLOP/s, {:.1f} % of the profile's peak; check "
                      "peak_tflops of '{}'",
                      hw::describe(r.shape), r.shape.flops().value() / t / 1e12,
                      100.0 * r.shape.flops().value() / t / peak, profile.name));
    }
    if (t < compute) {
      ++out.beyond_waves;
      continue;
    }
    std::size_t c = 0;
    while (c + 1 < classes.size() && r.shape.flops() > classes[c].max_flops) ++c;
    kept.push_back({r.shape, t, compute, c});
    ++out.points_per_class[c];
  }
  return kept;
}

// The size classes with rows, grouped for the fit: each alone, unless it has fewer than
// kMinShapesPerClass shapes (a shape: its (class, compute time)); then it joins the next class
// with rows, the last one the class before it. Groups in class order.
std::vector<std::vector<std::size_t>> group_classes(const std::vector<Kept>& rows,
                                                    std::size_t classes) {
  std::vector<std::set<double>> shapes(classes);
  for (const auto& r : rows) shapes[r.cls].insert(r.compute);
  std::vector<std::vector<std::size_t>> groups;
  std::vector<std::size_t> count;
  for (std::size_t c = 0; c < classes; ++c) {
    if (shapes[c].empty()) continue;
    groups.push_back({c});
    count.push_back(shapes[c].size());
  }
  for (std::size_t i = 0; i < groups.size() && groups.size() > 1;) {
    if (count[i] >= kMinShapesPerClass) {
      ++i;
      continue;
    }
    const std::size_t into = i + 1 < groups.size() ? i + 1 : i - 1;
    auto& g = groups[into];
    g.insert(into > i ? g.begin() : g.end(), groups[i].begin(), groups[i].end());
    count[into] += count[i];
    groups.erase(groups.begin() + static_cast<std::ptrdiff_t>(i));
    count.erase(count.begin() + static_cast<std::ptrdiff_t>(i));
    if (into < i) --i;  // the merged group sits at i - 1 now: checked again
  }
  return groups;
}

// Whether some group of the (group, k) pairs has two reduction lengths.
bool two_k_in_a_group(const std::set<std::pair<std::size_t, std::int64_t>>& group_ks) {
  for (auto it = group_ks.begin(); it != group_ks.end(); ++it) {
    const auto next = std::next(it);
    if (next != group_ks.end() && next->first == it->first) return true;
  }
  return false;
}

}  // namespace

GemmFit fit_gemm(const hw::DeviceProfile& profile, const std::vector<hw::GemmMeasurement>& rows) {
  hw::DeviceProfile bare = profile;
  bare.gemm_table.clear();
  const hw::KernelCostModel model(bare);
  GemmFit out;
  out.params = profile.gemm;
  out.points_per_class.assign(profile.gemm.classes.size(), 0);
  const std::vector<Kept> kept = usable_rows(profile, model, rows, out);
  out.groups = group_classes(kept, profile.gemm.classes.size());
  std::vector<std::size_t> col_of(profile.gemm.classes.size(), 0);
  for (std::size_t g = 0; g < out.groups.size(); ++g) {
    for (const std::size_t c : out.groups[g]) col_of[c] = g + 1;
  }
  std::vector<Row> used;
  std::set<std::pair<std::size_t, double>> distinct;  // (class, compute time): the shapes
  std::set<std::pair<std::size_t, std::int64_t>> group_ks;  // (group, k)
  for (const auto& r : kept) {
    used.push_back({r.t, r.compute, static_cast<double>(r.shape.k), col_of[r.cls]});
    distinct.insert({r.cls, r.compute});
    group_ks.insert({col_of[r.cls], r.shape.k});
  }
  // A shape measured twice says nothing new: the overhead and the groups need that many
  // different shapes.
  if (distinct.size() < out.groups.size() + 1) {
    throw InputError(fmt::format(
        "GEMM fit needs compute-bound rows of at least {} different shapes for {} size "
        "classes and the launch overhead; the table has {} ({} rows{})",
        out.groups.size() + 1, out.groups.size(), distinct.size(), used.size(),
        out.beyond_waves == 0
            ? ""
            : fmt::format("; {} more ran faster than the wave model allows", out.beyond_waves)));
  }
  // k_half needs two reduction lengths within one group (across groups, each group's
  // efficiency absorbs the factor) and one shape more than the linear unknowns.
  double k_half = profile.gemm.k_half;
  if (two_k_in_a_group(group_ks) && distinct.size() >= out.groups.size() + 2) {
    const double searched = search_k_half(used, out.groups.size());
    if (searched >= 0.0) {
      k_half = searched;
      out.k_half_fitted = true;
    }
  }
  const Solution s = solve(used, out.groups.size(), k_half);
  if (!std::isfinite(s.rms)) {
    throw InputError(fmt::format(
        "GEMM fit: the bounded least squares over {} rows did not reach its optimum within its "
        "step cap (k_half {:.0f}); the table's rows are too nearly collinear to fit",
        used.size(), k_half));
  }
  out.params.launch_overhead = Time::from_seconds(s.x(0));
  for (std::size_t g = 0; g < out.groups.size(); ++g) {
    const double inv = s.x(static_cast<Eigen::Index>(g + 1));
    // Below the loader's 1 % floor the fit's profile could not be read back, and the other
    // models' fits were lost with it (2026-12-05).
    if (!(inv <= 100.0)) {
      throw InputError(
          fmt::format("GEMM fit: size class {} comes out at {:.2f} % of the "
                      "profile's peak; check peak_tflops and the gemm_table",
                      out.groups[g].front(), 100.0 / inv));
    }
    // At the bound: unbounded, the fit would have put the group past the peak.
    const bool at_peak = inv <= 1.0 + 1e-9;
    for (const std::size_t c : out.groups[g]) {
      out.params.classes[c].efficiency = at_peak ? 1.0 : 1.0 / inv;
      if (at_peak) out.at_peak.push_back(c);
    }
  }
  out.params.k_half = k_half;
  out.params.fitted = true;
  out.quality = {static_cast<int>(used.size()), s.rms};
  return out;
}

std::string gemm_fit_notes(const GemmFit& fit) {
  const auto list = [](const std::vector<std::size_t>& classes) {
    std::string out;
    for (std::size_t i = 0; i < classes.size(); ++i) {
      if (i > 0) out += i + 1 == classes.size() ? " and " : ", ";
      out += std::to_string(classes[i]);
    }
    return out;
  };
  std::string notes;
  for (const auto& g : fit.groups) {
    if (g.size() < 2) continue;
    notes += fmt::format(
        "; size classes {} fitted as one (a class needs {} different shapes of "
        "its own)",
        list(g), kMinShapesPerClass);
  }
  if (!fit.at_peak.empty()) {
    notes += fmt::format(
        "; size class {} held at 100 % of the peak, the fit's bound (its rows "
        "grow less with their work than the wave model does)",
        list(fit.at_peak));
  }
  if (fit.beyond_waves > 0) {
    notes += fmt::format(
        "; {} rows left out, faster than the wave model allows at the peak "
        "(cuBLAS fills the SMs a partial wave leaves idle: split-K, smaller "
        "tiles), priced by the table",
        fit.beyond_waves);
  }
  return notes;
}

}  // namespace megasim::calibrate
