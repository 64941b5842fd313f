// The GEMM fit: the launch overhead, each size class's efficiency and the short-k constant
// k_half, from measured GEMM times (calibrate/fit.h).
#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <set>
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
  std::size_t col;  // design column of the row's size class (1-based; 0 is the overhead)
};

struct Solution {
  Eigen::VectorXd x;  // overhead, then 1 / efficiency of each active class
  double rms = std::numeric_limits<double>::infinity();
  // No class faster than the peak: an efficiency above 1 is a wrong peak, not a fit.
  bool physical() const { return (x.tail(x.size() - 1).array() >= 1.0).all(); }
};

// The model prices a GEMM at compute / (efficiency · k / (k + k_half)) + overhead, so for a
// given k_half the fit is linear in the overhead and in 1 / efficiency of each class.
Solution solve(const std::vector<Row>& rows, std::size_t classes, double k_half) {
  Eigen::MatrixXd a = Eigen::MatrixXd::Zero(static_cast<Eigen::Index>(rows.size()),
                                            static_cast<Eigen::Index>(classes + 1));
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    a(static_cast<Eigen::Index>(i), 0) = 1.0 / r.t;
    a(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(r.col)) =
        r.compute * (r.k + k_half) / r.k / r.t;
  }
  auto [x, rms] = fit_with_intercept(a);
  return {std::move(x), rms};
}

// k_half by its residual: a coarse grid (0 and powers of two up to 16,384), then a golden-
// section search in log k_half around the best physical point. Returns -1 when no point of
// the grid gives a physical fit.
double search_k_half(const std::vector<Row>& rows, std::size_t classes) {
  const auto rms_at = [&](double kh) {
    const Solution s = solve(rows, classes, kh);
    return s.physical() ? s.rms : std::numeric_limits<double>::infinity();
  };
  std::vector<double> grid{0.0};
  for (double kh = 16.0; kh <= 16384.0; kh *= 2.0) grid.push_back(kh);
  std::vector<double> rms(grid.size());
  std::transform(grid.begin(), grid.end(), rms.begin(), rms_at);
  const auto best =
      static_cast<std::size_t>(std::min_element(rms.begin(), rms.end()) - rms.begin());
  if (!std::isfinite(rms[best])) return -1.0;
  // A residual flat over the grid (each class's efficiency absorbs the factor) says nothing of
  // k_half.
  double worst = 0.0;
  for (const double r : rms) {
    if (std::isfinite(r)) worst = std::max(worst, r);
  }
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

// Whether some class of the (class, k) pairs has two reduction lengths.
bool two_k_in_a_class(const std::set<std::pair<std::size_t, std::int64_t>>& class_ks) {
  for (auto it = class_ks.begin(); it != class_ks.end(); ++it) {
    const auto next = std::next(it);
    if (next != class_ks.end() && next->first == it->first) return true;
  }
  return false;
}

}  // namespace

GemmFit fit_gemm(const hw::DeviceProfile& profile, const std::vector<hw::GemmMeasurement>& rows) {
  hw::DeviceProfile bare = profile;
  bare.gemm_table.clear();
  const hw::KernelCostModel model(bare);
  const auto& classes = profile.gemm.classes;
  const auto class_of = [&](Flops f) {
    for (std::size_t c = 0; c < classes.size(); ++c) {
      if (f <= classes[c].max_flops) return c;
    }
    return classes.size() - 1;
  };
  GemmFit out;
  out.params = profile.gemm;
  out.points_per_class.assign(classes.size(), 0);
  // Only compute-bound rows say anything about GEMM efficiency: drop those whose memory
  // time (at the profile's memory efficiency) exceeds their compute time at full efficiency.
  std::vector<std::pair<hw::GemmShape, double>> kept;
  std::vector<std::size_t> row_class;
  for (const auto& r : rows) {
    const double compute = model.model_gemm_compute_time(r.shape, 1.0).to_seconds();
    const double memory = model.model_memory_time(r.shape.bytes_moved()).to_seconds();
    if (r.time <= Time::zero() || r.shape.k <= 0 || memory > compute) continue;
    kept.emplace_back(r.shape, r.time.to_seconds());
    row_class.push_back(class_of(r.shape.flops()));
    ++out.points_per_class[row_class.back()];
  }
  std::vector<std::size_t> active;  // classes with points, in column order
  for (std::size_t c = 0; c < classes.size(); ++c) {
    if (out.points_per_class[c] > 0) active.push_back(c);
  }
  std::vector<Row> used;
  std::set<std::pair<std::size_t, double>> distinct;  // (class, compute time): the shapes
  std::set<std::pair<std::size_t, std::int64_t>> class_ks;  // (class, k)
  for (std::size_t i = 0; i < kept.size(); ++i) {
    const auto& [shape, t] = kept[i];
    const double compute = model.model_gemm_compute_time(shape, 1.0).to_seconds();
    const auto col = static_cast<std::size_t>(
        std::find(active.begin(), active.end(), row_class[i]) - active.begin() + 1);
    used.push_back({t, compute, static_cast<double>(shape.k), col});
    distinct.insert({col, compute});
    class_ks.insert({col, shape.k});
  }
  // A shape measured twice says nothing new: the overhead and the classes need that many
  // different shapes.
  if (distinct.size() < active.size() + 1) {
    throw InputError(
        fmt::format("GEMM fit needs compute-bound rows of at least {} different "
                    "shapes for {} size classes and the launch overhead; the "
                    "table has {} ({} rows)",
                    active.size() + 1, active.size(), distinct.size(), used.size()));
  }
  // k_half needs two reduction lengths within one size class (across classes, each class's
  // efficiency absorbs the factor) and one shape more than the linear unknowns.
  double k_half = profile.gemm.k_half;
  if (two_k_in_a_class(class_ks) && distinct.size() >= active.size() + 2) {
    const double searched = search_k_half(used, active.size());
    if (searched >= 0.0) {
      k_half = searched;
      out.k_half_fitted = true;
    }
  }
  const Solution s = solve(used, active.size(), k_half);
  out.params.launch_overhead = Time::from_seconds(s.x(0));
  for (std::size_t j = 0; j < active.size(); ++j) {
    const double inv = s.x(static_cast<Eigen::Index>(j + 1));
    // Above 100 % of peak is not physical: it means a wrong peak or SM count in the profile.
    if (inv < 1.0) {
      throw InputError(
          fmt::format("GEMM fit: size class {} comes out at {:.1f} % of the profile's peak; check "
                      "peak_tflops and sm_count of '{}'",
                      active[j], 100.0 / inv, profile.name));
    }
    out.params.classes[active[j]].efficiency = 1.0 / inv;
  }
  out.params.k_half = k_half;
  out.params.fitted = true;
  out.quality = {static_cast<int>(used.size()), s.rms};
  return out;
}

}  // namespace megasim::calibrate
