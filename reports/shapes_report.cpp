#include "reports/shapes_report.h"

#include <fmt/format.h>

namespace megasim::reports {

std::string gemm_shapes_text(const std::vector<hw::GemmShape>& shapes, const std::string& name) {
  std::string out = fmt::format("{} distinct GEMM shapes in {}\n", shapes.size(), name);
  out += fmt::format("{:>8} {:>8} {:>8} {:>6} {:>5}  {}\n", "m", "n", "k", "batch", "dtype",
                     "transpose");
  for (const auto& g : shapes) {
    out += fmt::format("{:>8} {:>8} {:>8} {:>6} {:>5}  {}{}\n", g.m, g.n, g.k, g.batch,
                       hw::to_string(g.dtype), g.transpose_a ? "A" : "-",
                       g.transpose_b ? "B" : "-");
  }
  return out;
}

}  // namespace megasim::reports
