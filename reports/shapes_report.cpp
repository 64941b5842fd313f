#include "reports/shapes_report.h"

#include <string>

#include <fmt/format.h>

namespace megasim::reports {

std::string gemm_shapes_text(const std::vector<hw::GemmShape>& shapes, const std::string& name) {
  std::string out = fmt::format("{} distinct GEMM shapes in {}\n", shapes.size(), name);
  out += fmt::format("{:>8} {:>8} {:>8} {:>6} {:>5}  {:<9}  {}\n", "m", "n", "k", "batch", "dtype",
                     "transpose", "accumulation");
  for (const auto& g : shapes) {
    // FP8's accumulation: fast for Transformer Engine's forward GEMMs, split for the others.
    const char* accumulation = g.dtype != hw::DType::kFp8 ? "" : g.fast_accum ? "fast" : "split";
    std::string line = fmt::format("{:>8} {:>8} {:>8} {:>6} {:>5}  {}{}{:<7}  {}", g.m, g.n, g.k,
                                   g.batch, hw::to_string(g.dtype), g.transpose_a ? "A" : "-",
                                   g.transpose_b ? "B" : "-", "", accumulation);
    line.erase(line.find_last_not_of(' ') + 1);
    out += line + "\n";
  }
  return out;
}

}  // namespace megasim::reports
