#include "reports/collective_report.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "reports/json_text.h"

namespace megasim::reports {

std::string collective_text(const plan::Sweep& s) {
  const auto& r = s.request;
  std::string text = fmt::format(
      "# megasim collective: {} on {} ({} of {} GPUs, {} placement), {} routing, device {}\n"
      "# time: flow-level simulation of the call alone; model: NCCL's analytic estimate\n"
      "#{:>12} {:>12} {:>6} {:>6} {:>12} {:>8} {:>8} {:>6} {:>7} {:>12}\n"
      "#{:>12} {:>12} {:>6} {:>6} {:>12} {:>8} {:>8} {:>6} {:>7} {:>12}\n",
      r.op, s.cluster_name, r.gpus, s.cluster_gpus, r.placement, r.routing, s.device, "size",
      "count", "type", "redop", "time", "algbw", "busbw", "algo", "proto", "model", "(B)",
      "(elements)", "", "", "(us)", "(GB/s)", "(GB/s)", "", "", "(us)");
  for (const auto& row : s.rows) {
    const auto& p = row.prediction;
    text += fmt::format(
        " {:>12.0f} {:>12} {:>6} {:>6} {:>12.2f} {:>8.2f} {:>8.2f} {:>6} {:>7} {:>12.2f}\n",
        row.size, row.count, "float", "sum", p.time.to_us(), row.algbw_gbps, row.busbw_gbps,
        hw::to_string(p.algorithm), hw::to_string(p.protocol), p.model_time.to_us());
  }
  return text;
}

std::string collective_json(const plan::Sweep& s) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : s.rows) {
    const auto& p = row.prediction;
    rows.push_back({{"size_bytes", row.size}, {"count", row.count}, {"type", "float"},
                    {"time_us", p.time.to_us()}, {"algbw_gbps", row.algbw_gbps},
                    {"busbw_gbps", row.busbw_gbps}, {"algorithm", hw::to_string(p.algorithm)},
                    {"protocol", hw::to_string(p.protocol)},
                    {"model_time_us", p.model_time.to_us()}, {"flows", p.flows}});
  }
  const auto& r = s.request;
  const nlohmann::json out = {{"cluster", s.cluster_name}, {"op", r.op}, {"gpus", r.gpus},
                              {"placement", r.placement}, {"routing", r.routing},
                              {"device", s.device},
                              {"bandwidth_unit", "GB/s (1e9 bytes per second), as nccl-tests"},
                              {"rows", rows}};
  return json_text(out);
}

}  // namespace megasim::reports
