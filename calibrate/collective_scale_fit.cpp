#include "calibrate/collective_scale_fit.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "engine/error.h"

namespace megasim::calibrate {
namespace {

// Points of the coarse grid every 1-D search starts from, and golden-section steps after it
// (the bracket shrinks by 0.618 a step: 60 steps leave 1e-12 of it).
constexpr int kGridPoints = 41;
constexpr int kGoldenSteps = 60;
// Coordinate-descent sweeps at most, and the change in both unknowns that ends them.
constexpr int kSweeps = 12;
constexpr double kConverged = 1e-7;
// The search ranges: k within [1/10, 10]; d from -0.9 x the least modelled latency (what any
// call keeps of its latency: hw::kLatencyOffsetMostRemoved) to 10 x the largest measured time.
constexpr double kScaleRange = 10.0;
constexpr double kLargestTimeMultiple = 10.0;

// A row is bound by a term that makes up this share of its modelled time at neutral scales.
constexpr double kBoundShare = 0.8;

struct Classes {
  std::vector<bool> latency, bandwidth;
  std::vector<hw::CollAlgorithm> algorithm;  // what NCCL ran, at neutral scales
  std::vector<hw::CollProtocol> protocol;
};

Classes classify(const std::vector<ScaleFitRow>& rows, const ScaledModel& model) {
  Classes c;
  for (const auto& r : rows) {
    const hw::ModelledTime t = model(r.bytes, hw::CollectiveScale{});
    c.latency.push_back(t.latency_s >= kBoundShare * t.time_s);
    c.bandwidth.push_back(t.time_s - t.latency_s >= kBoundShare * t.time_s);
    c.algorithm.push_back(t.algorithm);
    c.protocol.push_back(t.protocol);
  }
  return c;
}

// What NCCL ran in every row of a regime, when it ran one thing there (a scale fitted on them
// then holds for it alone); "" when the rows ran several, or the model does not say.
struct Scope {
  std::string bandwidth_algorithm, latency_algorithm, latency_protocol;
};

Scope scope_of(const Classes& c) {
  Scope s;
  std::set<hw::CollAlgorithm> bw, lat;
  std::set<hw::CollProtocol> lat_protocols;
  for (std::size_t i = 0; i < c.algorithm.size(); ++i) {
    if (c.bandwidth[i]) bw.insert(c.algorithm[i]);
    if (c.latency[i]) lat.insert(c.algorithm[i]), lat_protocols.insert(c.protocol[i]);
  }
  const auto one = [](const std::set<hw::CollAlgorithm>& a) {
    return a.size() == 1 && hw::scaled_algorithm_index(*a.begin()) >= 0;
  };
  if (one(bw)) s.bandwidth_algorithm = hw::to_string(*bw.begin());
  if (one(lat)) {
    s.latency_algorithm = hw::to_string(*lat.begin());
    if (lat_protocols.size() == 1 && *lat_protocols.begin() != hw::CollProtocol::kAuto)
      s.latency_protocol = hw::to_string(*lat_protocols.begin());
  }
  return s;
}

// The scale a fit of (k, d) lays, on the run's link and the regimes' scope.
hw::CollectiveScale scale_of(bool multi, double k, double d, const Scope& scope) {
  hw::CollectiveScaleFit f;
  f.nodes = multi ? 2 : 1;
  f.bandwidth_scale = k;
  f.latency_offset_us = d;
  f.bandwidth_rows = f.latency_rows = hw::kRowsToPinRegime;
  f.bandwidth_algorithm = scope.bandwidth_algorithm;
  f.latency_algorithm = scope.latency_algorithm;
  f.latency_protocol = scope.latency_protocol;
  return hw::collective_scale({f});
}

double squared_log_error(const std::vector<ScaleFitRow>& rows, const ScaledModel& model,
                         const hw::CollectiveScale& s) {
  double sum = 0.0;
  for (const auto& r : rows) {
    const double e = std::log(model(r.bytes, s).time_s) - std::log(r.seconds);
    sum += e * e;
  }
  return sum;
}

// The x in [lo, hi] that minimises f: the best of a grid, then golden section in the
// bracket of its neighbours.
template <typename F>
double minimise(F f, double lo, double hi) {
  const double step = (hi - lo) / (kGridPoints - 1);
  int best = 0;
  double best_f = std::numeric_limits<double>::infinity();
  for (int i = 0; i < kGridPoints; ++i) {
    const double v = f(lo + step * i);
    if (v < best_f) best_f = v, best = i;
  }
  double a = lo + step * std::max(0, best - 1), b = lo + step * std::min(kGridPoints - 1, best + 1);
  const double g = (std::sqrt(5.0) - 1.0) / 2.0;
  double x1 = b - g * (b - a), x2 = a + g * (b - a);
  double f1 = f(x1), f2 = f(x2);
  for (int i = 0; i < kGoldenSteps; ++i) {
    if (f1 <= f2) {
      b = x2, x2 = x1, f2 = f1, x1 = b - g * (b - a), f1 = f(x1);
    } else {
      a = x1, x1 = x2, f1 = f2, x2 = a + g * (b - a), f2 = f(x2);
    }
  }
  const double x = (a + b) / 2.0;
  return f(x) <= best_f ? x : lo + step * best;
}

std::string size_text(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 4) bytes /= 1024.0, ++u;
  return fmt::format("{:g} {}", bytes, units[u]);
}

}  // namespace

RegimeSpan regime_span(const std::vector<ScaleFitRow>& rows, const ScaledModel& model) {
  const Classes c = classify(rows, model);
  RegimeSpan s;
  const double inf = std::numeric_limits<double>::infinity();
  s.latency_min = s.bandwidth_min = inf;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (c.latency[i]) {
      s.latency_min = std::min(s.latency_min, rows[i].bytes);
      s.latency_max = std::max(s.latency_max, rows[i].bytes);
    }
    if (c.bandwidth[i]) {
      s.bandwidth_min = std::min(s.bandwidth_min, rows[i].bytes);
      s.bandwidth_max = std::max(s.bandwidth_max, rows[i].bytes);
    }
  }
  return s;
}

hw::CollectiveScaleFit fit_collective_scale(const std::vector<ScaleFitRow>& rows,
                                            const ScaledModel& model, hw::CollectiveOp op,
                                            int ranks, int nodes) {
  for (const auto& r : rows) {
    if (!(r.seconds > 0.0) || !(r.bytes > 0.0))
      throw InputError(fmt::format("collective scale fit: a row of {} bytes has time {} s; "
                                   "both must be positive", r.bytes, r.seconds));
  }
  hw::CollectiveScaleFit fit;
  fit.op = op;
  fit.ranks = ranks;
  fit.nodes = nodes;
  fit.rows = static_cast<int>(rows.size());
  const Classes c = classify(rows, model);
  fit.latency_rows = static_cast<int>(std::count(c.latency.begin(), c.latency.end(), true));
  fit.bandwidth_rows = static_cast<int>(std::count(c.bandwidth.begin(), c.bandwidth.end(), true));
  const bool fit_k = fit.bandwidth_rows >= hw::kRowsToPinRegime;
  const bool fit_d = fit.latency_rows >= hw::kRowsToPinRegime;
  const bool multi = nodes > 1;
  const Scope scope = scope_of(c);
  if (fit_k) fit.bandwidth_algorithm = scope.bandwidth_algorithm;
  if (fit_d) {
    fit.latency_algorithm = scope.latency_algorithm;
    fit.latency_protocol = scope.latency_protocol;
  }
  double least_latency_us = std::numeric_limits<double>::infinity(), largest_us = 0.0;
  for (const auto& r : rows) {
    least_latency_us = std::min(least_latency_us, 1e6 * model(r.bytes, {}).latency_s);
    largest_us = std::max(largest_us, 1e6 * r.seconds);
  }
  // The unknowns are fitted on the rows of the regimes they pin; rows between (latency and
  // bandwidth both matter, where NCCL's model has no ramp term) and rows of an unpinned regime
  // do not pull them.
  std::vector<ScaleFitRow> bound;
  for (std::size_t i = 0; i < rows.size(); ++i)
    if ((fit_k && c.bandwidth[i]) || (fit_d && c.latency[i])) bound.push_back(rows[i]);
  double log_k = 0.0, d = 0.0;
  const auto error = [&](double lk, double dd) {
    return squared_log_error(bound, model, scale_of(multi, std::exp(lk), dd, scope));
  };
  for (int sweep = 0; sweep < kSweeps && (fit_k || fit_d); ++sweep) {
    const double old_k = log_k, old_d = d;
    if (fit_k) {
      log_k = minimise([&](double lk) { return error(lk, d); }, -std::log(kScaleRange),
                       std::log(kScaleRange));
    }
    if (fit_d) {
      d = minimise([&](double dd) { return error(log_k, dd); },
                   -hw::kLatencyOffsetMostRemoved * least_latency_us,
                   kLargestTimeMultiple * largest_us);
    }
    if (std::fabs(log_k - old_k) < kConverged && std::fabs(d - old_d) < kConverged * largest_us)
      break;
  }
  fit.bandwidth_scale = std::exp(log_k);
  fit.latency_offset_us = d;
  fit.rms_log_residual =
      rows.empty()
          ? 0.0
          : std::sqrt(squared_log_error(rows, model, scale_of(multi, std::exp(log_k), d, scope)) /
                      static_cast<double>(rows.size()));
  return fit;
}

std::vector<std::string> describe_regimes(const hw::CollectiveScaleFit& fit,
                                          const RegimeSpan& span) {
  std::vector<std::string> out;
  const auto pinned = [&](const std::string& what, int rows, double lo, double hi,
                          const std::string& value) {
    if (rows >= hw::kRowsToPinRegime) {
      out.push_back(fmt::format("{}: pinned by {} rows ({}-{}), {}", what, rows, size_text(lo),
                                size_text(hi), value));
    } else {
      out.push_back(fmt::format("{}: not pinned ({} row{} where it is {:.0f} % of the modelled "
                                "time or more, {} needed), left to the profile",
                                what, rows, rows == 1 ? "" : "s", 100.0 * kBoundShare,
                                hw::kRowsToPinRegime));
    }
  };
  // A pinned regime names what NCCL ran in it, where it ran one thing: the scale holds there.
  const auto of = [](const char* what, const std::string& scope) {
    return scope.empty() ? std::string(what) : fmt::format("{} of {}", what, scope);
  };
  const std::string latency_scope = fit.latency_protocol.empty()
                                        ? fit.latency_algorithm
                                        : fit.latency_algorithm + "/" + fit.latency_protocol;
  pinned(of("latency", latency_scope), fit.latency_rows, span.latency_min, span.latency_max,
         fmt::format("offset {:+.2f} us", fit.latency_offset_us));
  const bool multi = fit.nodes > 1;
  // A scale at the edge of its search range is no fit: the model on this cluster cannot
  // reach the log (most likely the log ran on another fabric).
  const bool at_edge = fit.bandwidth_scale <= (1.0 + kConverged) / kScaleRange ||
                       fit.bandwidth_scale >= (1.0 - kConverged) * kScaleRange;
  pinned(of(multi ? "NIC bandwidth" : "NVLink bandwidth", fit.bandwidth_algorithm),
         fit.bandwidth_rows, span.bandwidth_min, span.bandwidth_max,
         fmt::format("scale {:.3f}{}", fit.bandwidth_scale,
                     at_edge ? " (the edge of the search, 1/10 to 10: does the cluster match "
                               "the fabric the log ran on?)"
                             : ""));
  out.push_back(multi ? fmt::format("NVLink bandwidth: not measured (a {}-node run), left to "
                                    "the profile", fit.nodes)
                      : "NIC bandwidth: not measured (a 1-node run), left to the profile");
  return out;
}

}  // namespace megasim::calibrate
