#include "io/device_peaks.h"

#include <string>

#include <fmt/format.h>

namespace megasim::io {

std::map<hw::DType, FlopsPerSec> read_peaks(JsonReader& r) {
  using hw::DType;
  std::map<DType, FlopsPerSec> peaks;
  JsonReader peak = r.object("peak_tflops");
  for (DType t : {DType::kFp32, DType::kTf32, DType::kBf16, DType::kFp16, DType::kFp8}) {
    if (auto v = peak.optional_number(hw::to_string(t), 1e-3, 1e6)) peaks[t] = tflop_per_s(*v);
  }
  peak.finish();
  if (peaks.empty()) r.fail("peak_tflops", "states no dtype's peak");
  // MFU counts against the 16-bit peak: an 8-bit or fp16 rate far above twice bf16's priced
  // FP8 plans at an MFU of 592 % (a reviewer's profile, 2026-12-05). Datasheets put fp8 at
  // 2.0-2.03 times bf16 (H100 1979/989, L40S 733/362); 2.5 lets those by and catches a
  // sparse figure (twice the dense) beside a dense one.
  constexpr double kMostRatio = 2.5;
  // fp8 against the 16-bit peak MFU counts against (bf16's, else fp16's), fp16 against bf16's.
  const auto bf16 = peaks.find(DType::kBf16);
  const auto base16 = bf16 != peaks.end() ? bf16 : peaks.find(DType::kFp16);
  for (const DType t : {DType::kFp8, DType::kFp16}) {
    const auto base = t == DType::kFp8 ? base16 : bf16;
    const auto other = peaks.find(t);
    if (base == peaks.end() || other == peaks.end() || base == other ||
        other->second.value() <= kMostRatio * base->second.value()) {
      continue;
    }
    r.fail("peak_tflops." + std::string(hw::to_string(t)),
           fmt::format("{:g} TFLOP/s is more than 2.5 times peak_tflops.{}'s {:g} (no GPU's "
                       "dense {} rate is; MFU counts against the 16-bit peak)",
                       other->second.value() / 1e12, hw::to_string(base->first),
                       base->second.value() / 1e12, hw::to_string(t)));
  }
  return peaks;
}

std::optional<hw::HardwareFigures> read_measured_with(JsonReader& r) {
  auto m = r.optional_object("measured_with");
  if (!m) return std::nullopt;
  hw::HardwareFigures f;
  f.peak = read_peaks(*m);
  f.hbm_bandwidth = gbyte_per_s(m->number("hbm_gbps", 1.0, 1e6));
  f.sm_count = static_cast<int>(m->integer("sm_count", 1, 100000));
  m->finish();
  return f;
}

void check_measured_with(const JsonReader& r, const hw::DeviceProfile& p) {
  if (!p.measured_with) return;
  if (p.kind == hw::ProfileKind::kDatasheet) {
    r.fail("measured_with",
           "a datasheet profile has no measured table for these figures to "
           "anchor; remove the key, or make the profile measured");
  }
  const auto check = [&](hw::DType t, const char* table) {
    if (p.measured_with->peak.count(t) != 0) return;
    r.fail("measured_with.peak_tflops",
           fmt::format("states no {0} peak, and {1} has {0} rows: the peak they were "
                       "measured at is needed to price them",
                       hw::to_string(t), table));
  };
  for (const auto& row : p.gemm_table) check(row.shape.dtype, "gemm_table");
  for (const auto& row : p.attention_table) check(row.shape.dtype, "attention_table");
}

}  // namespace megasim::io
