#include "io/measured_rows.h"

#include <utility>

#include <fmt/format.h>

#include "hw/gpu_part.h"

namespace megasim::io {
namespace {

// A measured row slower than this many times its time at the board's peak (a GEMM's FLOPs, a
// memory kernel's HBM bandwidth), and a millisecond of launch past it, is no row of this GPU:
// a memory-bound GEMV runs about 300 times its peak's time on an H100.
constexpr double kSlowFactor = 1000.0;
constexpr double kLaunchAllowanceS = 1e-3;

}  // namespace

void check_nodes(const JsonReader& row, int ranks, int nodes) {
  if (nodes > ranks) {
    row.fail("nodes", fmt::format("{} nodes for {} ranks: every node holds at least one rank",
                                  nodes, ranks));
  }
}

void check_kernel_row(const JsonReader& row, Flops flops, hw::DType dtype, Time time,
                      const hw::DeviceProfile& p) {
  if (!p.has_peak(dtype)) return;
  constexpr double kPeakSlack = 1.10;
  const double rate = flops.value() / time.to_seconds();
  const double peak = p.peak.at(dtype).value();
  const char* type = hw::to_string(dtype);
  if (rate > peak * kPeakSlack) {
    row.fail("time_us",
             fmt::format("{:g} µs is {:.0f} TFLOP/s of useful work, {:.1f} times the "
                         "profile's {} peak of {:.0f} TFLOP/s (peak_tflops.{}): a "
                         "kernel cannot run faster than its GPU's peak; check the "
                         "time's unit and the device",
                         time.to_us(), rate / 1e12, rate / peak, type, peak / 1e12, type));
  }
  const double at_peak = flops.value() / peak;
  if (time.to_seconds() > kSlowFactor * at_peak + kLaunchAllowanceS) {
    row.fail("time_us", fmt::format("{:g} µs is {:.3g} TFLOP/s of useful work, {:.3g} times the "
                                    "time at the profile's {} peak (peak_tflops.{}), more than "
                                    "{:g} times it and a millisecond: no kernel of this GPU runs "
                                    "so slowly; check the time's unit and the device",
                                    time.to_us(), rate / 1e12, time.to_seconds() / at_peak, type,
                                    type, kSlowFactor));
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
  // Nor slower than kSlowFactor times its HBM time and a millisecond of launch (as a GEMM row).
  if (hbm > 0.0 && m.time.to_seconds() > kSlowFactor * m.bytes.value() / hbm + kLaunchAllowanceS) {
    row.fail("time_us",
             fmt::format("{:g} µs for {:g} bytes is {:.3g} GB/s, more than {:g} times the time "
                         "at the profile's HBM bandwidth of {:.0f} GB/s (hbm_gbps) and a "
                         "millisecond: no memory-bound kernel runs so slowly; check the time's "
                         "unit and the device",
                         m.time.to_us(), m.bytes.value(), rate / 1e9, kSlowFactor, hbm / 1e9));
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

void check_collective_row(const JsonReader& row, const hw::CollectiveMeasurement& m,
                          const std::vector<hw::CollectiveMeasurement>& before) {
  for (std::size_t i = 0; i < before.size(); ++i) {
    const hw::CollectiveMeasurement& o = before[i];
    const bool same = o.op == m.op && o.ranks == m.ranks && o.nodes == m.nodes &&
                      o.size == m.size && o.in_place == m.in_place && o.algorithm == m.algorithm &&
                      o.protocol == m.protocol && o.run == m.run;
    if (!same || o.time == m.time) continue;
    row.fail("time_us", fmt::format("{:g} µs for a size collective_table[{}] measured at {:g} µs "
                                    "in the same run; keep one time a size (the median of its "
                                    "runs)",
                                    m.time.to_us(), i, o.time.to_us()));
  }
}

void check_measured_part(const JsonReader& measurement, const std::string& device_name,
                         const hw::DeviceProfile& p) {
  if (device_name.empty()) return;  // a measurement that names no GPU is not judged
  const std::string why = hw::measured_part_mismatch(device_name, p);
  if (why.empty()) return;
  measurement.fail("device_name", why + "; a profile's measurements are its own part's");
}

void check_datasheet_has_no_rows(const JsonReader& r, const hw::DeviceProfile& p) {
  const std::pair<const char*, bool> tables[] = {
      {"gemm_table", !p.gemm_table.empty()},
      {"attention_table", !p.attention_table.empty()},
      {"memory_table", !p.memory_table.empty()},
      {"power_table", !p.power_table.empty()},
      {"collective_table", !p.collective_table.empty()},
      {"collective_fits", !p.collective_fits.empty()},
      {"collective_scales", !p.collective_scales.empty()}};
  for (const auto& [table, rows] : tables) {
    if (!rows) continue;
    r.fail("kind", fmt::format("a datasheet profile carries no measurements, and this one has a "
                               "{}; a profile of measurements is \"measured\" or \"imported\", "
                               "with its \"measurement\"",
                               table));
  }
}

}  // namespace megasim::io
