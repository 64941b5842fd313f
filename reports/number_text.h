// Internal to reports/: numbers as the text reports print them.
#pragma once

#include <cmath>
#include <string>

#include <fmt/format.h>

namespace megasim::reports {

// A signed figure to one decimal, never "-0.0": a difference that rounds to nothing reads
// "+0.0".
inline std::string signed1(double x) {
  const double rounded = std::round(x * 10.0) / 10.0;
  return fmt::format("{:+.1f}", rounded == 0.0 ? 0.0 : rounded);
}

}  // namespace megasim::reports
