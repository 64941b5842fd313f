#include "io/measured_rows.h"

#include <fmt/format.h>

namespace megasim::io {

void check_nodes(const JsonReader& row, int ranks, int nodes) {
  if (nodes > ranks) {
    row.fail("nodes", fmt::format("{} nodes for {} ranks: every node holds at least one rank",
                                  nodes, ranks));
  }
}

void check_memory_row(const JsonReader& row, const hw::DeviceProfile& p,
                      const hw::MemoryMeasurement& m,
                      const std::vector<hw::MemoryMeasurement>& before) {
  constexpr double kCacheFactor = 10.0;
  const double rate = m.bytes.value() / m.time.to_seconds();
  const double hbm = p.hbm_bandwidth.value();
  if (hbm > 0.0 && rate > kCacheFactor * hbm) {
    row.fail("time_us",
             fmt::format("{:g} µs for {:g} bytes is {:.0f} GB/s, {:.0f} times the profile's HBM "
                         "bandwidth of {:.0f} GB/s (hbm_gbps): no cache moves that; check the "
                         "time's unit and the device",
                         m.time.to_us(), m.bytes.value(), rate / 1e9, rate / hbm, hbm / 1e9));
  }
  for (std::size_t i = 0; i < before.size(); ++i) {
    if (before[i].kind != m.kind || before[i].bytes.value() != m.bytes.value() ||
        before[i].time == m.time)
      continue;
    row.fail("time_us", fmt::format("{:g} µs for the kernel and bytes of memory_table[{}], "
                                    "measured at {:g} µs; keep one time a (kernel, bytes) (the "
                                    "median of its runs)",
                                    m.time.to_us(), i, before[i].time.to_us()));
  }
}

void check_power_row(const JsonReader& row, const hw::DeviceProfile& p, Watts watts) {
  constexpr double kLimitFactor = 1.5;
  const double tdp = p.power.tdp.value();
  if (tdp > 0.0 && watts.value() > kLimitFactor * tdp) {
    row.fail("watts",
             fmt::format("{:g} W is {:.1f} times the board's tdp_w of {:g} W (power.tdp_w): "
                         "a board's power limit holds its average near it; check the "
                         "unit and the device",
                         watts.value(), watts.value() / tdp, tdp));
  }
}

}  // namespace megasim::io
