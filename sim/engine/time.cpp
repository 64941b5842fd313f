#include "engine/time.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace megasim {

Time Time::rounded(double ns, double what, const char* unit) {
  const double r = std::round(ns);
  // 2^63 is exactly representable; anything at or above it does not fit an int64.
  constexpr double kLimit = 9.223372036854775808e18;
  if (std::isnan(r) || r >= kLimit || r < -kLimit) {
    throw std::range_error("time value out of the simulator's range: " + std::to_string(what) +
                           unit);
  }
  return Time(static_cast<std::int64_t>(r));
}

Time Time::from_seconds(double seconds) { return rounded(seconds * 1e9, seconds, " s"); }

// std::ceil's result is whole, so rounded() keeps it and checks its range.
Time Time::from_ns_up(double ns) {
  return rounded(std::ceil(ns), ns, " ns");
}

// Scaled in seconds and back, (ns · 1e-9 · k) · 1e9 rather than ns · k: the two round
// differently for about one product in ten (a nanosecond either way), and every figure the
// simulator has printed was computed the first way, so it stays the one way.
Time Time::operator*(double k) const {
  const double seconds = to_seconds() * k;
  return rounded(seconds * 1e9, seconds, " s");
}

Time Time::operator/(double k) const {
  const double seconds = to_seconds() / k;
  return rounded(seconds * 1e9, seconds, " s");
}

std::string Time::to_string() const {
  const double s = to_seconds();
  const double a = std::fabs(s);
  char buf[48];
  if (a >= 1.0 || ns_ == 0) {
    std::snprintf(buf, sizeof buf, "%.3f s", s);
  } else if (a >= 1e-3) {
    std::snprintf(buf, sizeof buf, "%.3f ms", s * 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.3f us", s * 1e6);
  }
  return buf;
}

}  // namespace megasim
