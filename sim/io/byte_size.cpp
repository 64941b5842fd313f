#include "io/byte_size.h"

#include <charconv>
#include <cmath>
#include <utility>

#include <fmt/format.h>

#include "engine/error.h"

namespace megasim::io {

Bytes parse_byte_size(const std::string& text, const std::string& option) {
  static constexpr std::pair<const char*, double> kUnits[] = {
      {"", 1.0},     {"B", 1.0},     {"KiB", 0x1p10}, {"MiB", 0x1p20}, {"GiB", 0x1p30},
      {"TiB", 0x1p40}, {"kB", 1e3},  {"KB", 1e3},     {"MB", 1e6},     {"GB", 1e9},
      {"TB", 1e12}};
  const auto refuse = [&](const std::string& why) -> Bytes {
    throw InputError(fmt::format("{} {}: {}; give a size in bytes, e.g. 8GiB, 512MiB or "
                                 "1073741824 (units B, KiB, MiB, GiB, TiB, kB, MB, GB, TB)",
                                 option, text, why));
  };
  double number = 0.0;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  const auto [end, ec] = std::from_chars(first, last, number, std::chars_format::fixed);
  if (ec != std::errc() || end == first) return refuse("not a number");
  const std::string unit(end, last);
  for (const auto& [name, scale] : kUnits) {
    if (unit != name) continue;
    const double bytes = number * scale;
    if (!std::isfinite(bytes) || bytes < 1.0 || bytes > kMaxByteSize) {
      return refuse(fmt::format("{:.4g} bytes is out of range [1, {:.4g}]", bytes, kMaxByteSize));
    }
    return Bytes(std::floor(bytes));
  }
  return refuse("unknown unit '" + unit + "'");
}

}  // namespace megasim::io
