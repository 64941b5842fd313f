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

// Seconds to three decimals, and a time under a hundredth of a second to three significant
// digits: a tiny model's step of 0.23 ms read "0.000 s" beside its breakdown of zeros until
// 2026-12-07 (the JSON keeps seconds).
inline std::string seconds3(double s) {
  if (std::abs(s) >= 0.01 || s == 0.0) return fmt::format("{:.3f}", s);
  return fmt::format("{:.3g}", s);
}

// A figure to one decimal, and one under a twentieth to two significant digits (an MFU of
// 0.0003 % is not 0.0 %).
inline std::string one_decimal(double x) {
  if (std::abs(x) >= 0.05 || x == 0.0) return fmt::format("{:.1f}", x);
  return fmt::format("{:.2g}", x);
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

// Power, energy and mass in the unit that keeps their digits: a one-node job draws kilowatts,
// and "0.00 MW" or "0 MWh" read as nothing drawn (the JSON keeps MW, MWh and tonnes).
inline std::string power_text(double megawatts) {
  if (megawatts == 0.0 || megawatts >= 1.0) return fmt::format("{:.2f} MW", megawatts);
  // Under a megawatt "0.11 MW" would make 105 and 114 kW one figure.
  if (megawatts >= 0.1) return fmt::format("{:.0f} kW", megawatts * 1e3);
  // Under a kilowatt in watts: "0.8 kW" made 823 and 848 W one figure (until 2026-12-06).
  if (megawatts >= 1e-3) return fmt::format("{:.1f} kW", megawatts * 1e3);
  return fmt::format("{:.0f} W", megawatts * 1e6);
}
// A figure in `unit`, in `milli` (a thousandth of it) below one, and in `micro` below a
// thousandth: MWh, kWh and Wh; t, kg and g (a one-node run of a few steps printed "0.00 kWh"
// and "0.00 kg" beside its energy's cost, until 2026-12-06).
inline std::string thousandths_text(double v, const char* unit, const char* milli,
                                    const char* micro) {
  if (v >= 10.0 || v == 0.0) return fmt::format("{:.0f} {}", v, unit);
  if (v >= 1.0) return fmt::format("{:.1f} {}", v, unit);
  if (v >= 1e-2) return fmt::format("{:.0f} {}", v * 1e3, milli);
  // 999.6 Wh would print "1e+03 Wh" to three digits: from 999.5 in milli's two decimals.
  if (v >= 0.9995e-3) return fmt::format("{:.2f} {}", v * 1e3, milli);
  return fmt::format("{:.3g} {}", v * 1e6, micro);
}

}  // namespace megasim::reports
