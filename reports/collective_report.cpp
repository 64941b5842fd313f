#include "reports/collective_report.h"

#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "reports/json_text.h"

namespace megasim::reports {
namespace {

std::string algo_label(const collective::Prediction& p) {
  std::string label = hw::to_string(p.algorithm);
  if (p.algorithm != p.nccl_algorithm || p.protocol != p.nccl_protocol) label += '*';
  return label;
}

}  // namespace

std::string collective_text(const plan::Sweep& s) {
  const auto& r = s.request;
  std::string text = fmt::format(
      "# megasim collective: {} on {} ({} of {} GPUs, {} placement), {} routing, device {}\n"
      "# time: flow-level simulation of the call alone; model: NCCL's analytic estimate",
      r.op, s.cluster_name, r.gpus, s.cluster_gpus, r.placement, r.routing, s.device);
  bool overruled = false;
  for (const auto& row : s.rows) {
    const auto& p = row.prediction;
    overruled |= p.algorithm != p.nccl_algorithm || p.protocol != p.nccl_protocol;
  }
  if (overruled) {
    text += "\n# *: NCCL's model picks another algorithm here, which the fabric slows past its "
            "model (an ECMP collision); this one runs faster alone";
  }
  if (s.fit) {
    text += fmt::format("\n# fit: the device's measured fit ({} ranks, {} nodes, run {}), which "
                        "gives algbw and busbw from {:.0f} to {:.0f} B, the sizes it measured",
                        s.fit->ranks, s.fit->nodes, s.fit->run, s.fit_min_size, s.fit_max_size);
  }
  const char* header = "#{:>12} {:>12} {:>6} {:>6} {:>12} {:>8} {:>8} {:>6} {:>7} {:>12}";
  text += '\n';
  text += fmt::format(fmt::runtime(header), "size", "count", "type", "redop", "time", "algbw",
                      "busbw", "algo", "proto", "model");
  if (s.fit) text += fmt::format(" {:>12}", "fit");
  text += '\n';
  text += fmt::format(fmt::runtime(header), "(B)", "(elements)", "", "", "(us)", "(GB/s)",
                      "(GB/s)", "", "", "(us)");
  if (s.fit) text += fmt::format(" {:>12}", "(us)");
  text += "\n";
  for (const auto& row : s.rows) {
    const auto& p = row.prediction;
    text += fmt::format(
        " {:>12.0f} {:>12} {:>6} {:>6} {:>12.2f} {:>8.2f} {:>8.2f} {:>6} {:>7} {:>12.2f}",
        row.size, row.count, "float", "sum", p.time.to_us(), row.algbw_gbps, row.busbw_gbps,
        algo_label(p), hw::to_string(p.protocol), p.model_time.to_us());
    if (row.fit_time) {
      text += fmt::format(" {:>12.2f}", row.fit_time->to_us());
    } else if (s.fit) {
      text += fmt::format(" {:>12}", "-");
    }
    text += "\n";
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
                    {"model_time_us", p.model_time.to_us()}, {"flows", p.flows},
                    {"nccl_algorithm", hw::to_string(p.nccl_algorithm)},
                    {"nccl_protocol", hw::to_string(p.nccl_protocol)}});
    if (row.fit_time) rows.back()["fit_time_us"] = row.fit_time->to_us();
  }
  const auto& r = s.request;
  nlohmann::json out = {{"cluster", s.cluster_name}, {"op", r.op}, {"gpus", r.gpus},
                              {"placement", r.placement}, {"routing", r.routing},
                              {"device", s.device},
                              {"bandwidth_unit", "GB/s (1e9 bytes per second), as nccl-tests"},
                              {"rows", rows}};
  if (s.fit) {
    out["fit"] = {{"ranks", s.fit->ranks}, {"nodes", s.fit->nodes}, {"run", s.fit->run},
                  {"alpha_us", s.fit->alpha.to_us()},
                  {"bus_bandwidth_gbps", s.fit->bus_bandwidth.value() * 1e-9},
                  {"min_size_bytes", s.fit_min_size}, {"max_size_bytes", s.fit_max_size},
                  {"gives", "algbw_gbps and busbw_gbps"}};
  }
  return json_text(out);
}

}  // namespace megasim::reports
