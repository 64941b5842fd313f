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

// A signed difference to one decimal, and one under a twentieth to two significant digits, so
// a loss that rounds to nothing keeps its sign ("+0.0 pt MFU" for a plan 0.03 points behind,
// until 2026-12-06); zero reads "+0.0".
inline std::string signed_small(double x) {
  if (x == 0.0 || std::abs(x) >= 0.05) return signed1(x);
  return fmt::format("{:+.2g}", x);
}

// Days to two decimals, and a span under a hundredth of a day in minutes or seconds (a
// one-token run read "0.00 days" until 2026-12-06; the JSON keeps days).
inline std::string days_text(double days) {
  if (days >= 0.01 || days == 0.0) return fmt::format("{:.2f} days", days);
  const double seconds = days * 86400.0;
  if (seconds >= 60.0) return fmt::format("{:.1f} min", seconds / 60.0);
  if (seconds >= 0.1) return fmt::format("{:.1f} s", seconds);
  return fmt::format("{:.2g} s", seconds);
}

}  // namespace megasim::reports
