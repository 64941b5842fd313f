// The run level's closed forms: percentiles of the trials, the expected wall time of a Poisson
// failure process (what the Monte Carlo is tested against) and the swept intervals.
#include "run/run_simulation.h"

#include <algorithm>
#include <cmath>

namespace megasim::run {

Distribution distribution(std::vector<double> v) {
  Distribution d;
  if (v.empty()) return d;
  std::sort(v.begin(), v.end());
  double sum = 0.0;
  for (double x : v) sum += x;
  d.mean = sum / static_cast<double>(v.size());
  const auto pct = [&v](double q) {
    const double pos = q * static_cast<double>(v.size() - 1);
    const auto lo = static_cast<std::size_t>(std::floor(pos));
    const std::size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
  };
  d.p10 = pct(0.10);
  d.p50 = pct(0.50);
  d.p90 = pct(0.90);
  return d;
}

bool sweeps_intervals(double failures_per_hour, Time blocking, Time async_write) {
  return failures_per_hour > 0.0 && (blocking > Time::zero() || async_write > Time::zero());
}

Time sweep_centre(Time daly, Time async_write) {
  return std::max(daly, async_write);
}

// Intervals up to the longest run (kMaxRunSeconds), the last of them that length: a longer
// one's checkpoint never comes, and past the simulator's clock for an MTBF of centuries (an
// internal error until 2026-12-06).
std::vector<Time> swept_intervals(Time centre) {
  std::vector<Time> out;
  for (int k = -kSweepHalfSteps; k <= kSweepHalfSteps; ++k) {
    const double s = centre.to_seconds() * std::pow(2.0, 0.5 * static_cast<double>(k));
    out.push_back(Time::from_seconds(std::min(s, kMaxRunSeconds)));
    if (s >= kMaxRunSeconds) break;
  }
  return out;
}

std::optional<Time> next_swept_interval(Time last) {
  if (last.to_seconds() >= kMaxRunSeconds) return std::nullopt;
  return Time::from_seconds(std::min(last.to_seconds() * std::sqrt(2.0), kMaxRunSeconds));
}

Time expected_wall_time_poisson(Time work, Time interval, Time cost, double rate_per_hour,
                                Time recovery) {
  const double lambda = rate_per_hour / 3600.0;  // per second
  const auto segment = [&](double t) {
    if (lambda <= 0.0) return t;
    return std::expm1(lambda * t) * (1.0 / lambda + recovery.to_seconds());
  };
  const double w = work.to_seconds();
  const double i = interval.to_seconds();
  const double c = cost.to_seconds();
  const double full = std::ceil(w / i) - 1.0;  // checkpoints taken
  return Time::from_seconds(full * segment(i + c) + segment(w - full * i));
}

}  // namespace megasim::run
