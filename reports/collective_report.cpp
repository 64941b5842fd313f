#include "reports/collective_report.h"

#include <algorithm>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "reports/json_text.h"

namespace megasim::reports {
namespace {

constexpr hw::CollAlgorithm kScaledAlgorithms[] = {
    hw::CollAlgorithm::kTree, hw::CollAlgorithm::kRing, hw::CollAlgorithm::kNvls,
    hw::CollAlgorithm::kNvlsTree, hw::CollAlgorithm::kPat};
constexpr hw::CollProtocol kProtocols[] = {hw::CollProtocol::kLL, hw::CollProtocol::kLL128,
                                           hw::CollProtocol::kSimple};

// nccl-tests' redop column: sum for the reductions, none for the others.
const char* redop(const std::string& op) {
  return op == "all_reduce" || op == "reduce_scatter" || op == "reduce" ? "sum" : "none";
}

// The time the row answers with (its algbw and busbw are of it): the device's measurement
// where the answer is measured, else the simulation's.
Time answer_time(const plan::SweepRow& row) {
  return row.measured_time ? *row.measured_time : row.prediction.time;
}

std::string algo_label(const collective::Prediction& p) {
  std::string label = hw::to_string(p.algorithm);
  if (p.algorithm != p.nccl_algorithm || p.protocol != p.nccl_protocol) label += '*';
  return label;
}

// The fitted scales on the sweep's link: the link's own (every algorithm a fit named none
// for), then each algorithm's (and protocol's, for latency) that replaces it.
std::string scale_text(const hw::CollectiveScale& scale, bool multi) {
  std::string text =
      fmt::format("bandwidth x {:.3f}, latency {:+.2f} us",
                  multi ? scale.net_bandwidth : scale.nvlink_bandwidth,
                  multi ? scale.net_latency_offset_us : scale.nvlink_latency_offset_us);
  for (hw::CollAlgorithm a : kScaledAlgorithms) {
    const auto i = static_cast<std::size_t>(hw::scaled_algorithm_index(a));
    if (const auto& b = scale.bandwidth_by_algorithm[multi][i]; b.set)
      text += fmt::format("; {} bandwidth x {:.3f}", hw::to_string(a), b.value);
    for (hw::CollProtocol p : kProtocols) {
      if (const auto& l = scale.latency_by_algorithm[multi][i][static_cast<std::size_t>(p)]; l.set)
        text +=
            fmt::format("; {}/{} latency {:+.2f} us", hw::to_string(a), hw::to_string(p), l.value);
    }
  }
  return text;
}

nlohmann::json scale_json(const hw::CollectiveScale& scale, int nodes) {
  const bool multi = nodes > 1;
  nlohmann::json out = {
      {"nodes", nodes},
      {"bandwidth_scale", multi ? scale.net_bandwidth : scale.nvlink_bandwidth},
      {"latency_offset_us", multi ? scale.net_latency_offset_us : scale.nvlink_latency_offset_us}};
  nlohmann::json by = nlohmann::json::object();
  for (hw::CollAlgorithm a : kScaledAlgorithms) {
    const auto i = static_cast<std::size_t>(hw::scaled_algorithm_index(a));
    nlohmann::json one = nlohmann::json::object();
    if (const auto& b = scale.bandwidth_by_algorithm[multi][i]; b.set)
      one["bandwidth_scale"] = b.value;
    for (hw::CollProtocol p : kProtocols) {
      if (const auto& l = scale.latency_by_algorithm[multi][i][static_cast<std::size_t>(p)]; l.set)
        one["latency_offset_us"][hw::to_string(p)] = l.value;
    }
    if (!one.empty()) by[hw::to_string(a)] = one;
  }
  if (!by.empty()) out["by_algorithm"] = by;
  return out;
}

}  // namespace

std::string collective_text(const plan::Sweep& s) {
  const auto& r = s.request;
  std::string text = fmt::format(
      "# megasim collective: {} on {} ({} of {} GPUs, {} placement{}), {} routing, device {}\n"
      "# time: flow-level simulation of the call alone, or where the device measured the shape "
      "its measurement (algbw = size / time; the simulation then under `simulated`); model: "
      "NCCL's analytic estimate plus, across nodes, its pipeline's fill (NCCL picks the "
      "algorithm by its estimate alone, so the pick is not always the least model time)",
      r.op, s.cluster_name, r.gpus, s.cluster_gpus, r.placement,
      r.per_node > 0 ? fmt::format(", {} a node", r.per_node) : std::string(), r.routing, s.device);
  bool overruled = false;
  for (const auto& row : s.rows) {
    const auto& p = row.prediction;
    overruled |= p.algorithm != p.nccl_algorithm || p.protocol != p.nccl_protocol;
  }
  if (overruled) {
    text += "\n# *: NCCL's model picks another algorithm here, which the fabric slows past its "
            "model (an ECMP collision); this one runs faster alone";
  }
  const bool calibrated =
      s.fitted_scale || std::any_of(s.rows.begin(), s.rows.end(),
                                    [](const auto& row) { return row.measured_time.has_value(); });
  if (calibrated) {
    text += fmt::format(
        "\n# answer: where the device measured this shape ({} ranks, {} nodes), its measured "
        "table (log-log between measured sizes) gives algbw and busbw; elsewhere the time, {}",
        r.gpus, s.nodes,
        s.fitted_scale ? fmt::format("under the scales fitted to its logs ({} on {})",
                                     scale_text(s.scale, s.nodes > 1),
                                     s.nodes > 1 ? "several nodes" : "one node")
                       : std::string("by NCCL's model with the profile's constants"));
  } else {
    text += "\n# answer: the time column on every row, simulated with the profile's NCCL "
            "constants (the device holds no collective measurements or fitted scales for this "
            "shape)";
  }
  const char* header = "#{:>12} {:>12} {:>6} {:>6} {:>12} {:>8} {:>8} {:>6} {:>7} {:>12}";
  text += '\n';
  text += fmt::format(fmt::runtime(header), "size", "count", "type", "redop", "time", "algbw",
                      "busbw", "algo", "proto", "model");
  if (calibrated) text += fmt::format(" {:>12} {:>15}", "simulated", "answer");
  text += '\n';
  text += fmt::format(fmt::runtime(header), "(B)", "(elements)", "", "", "(us)", "(GB/s)",
                      "(GB/s)", "", "", "(us)");
  if (calibrated) text += fmt::format(" {:>12} {:>15}", "(us)", "");
  text += "\n";
  for (const auto& row : s.rows) {
    const auto& p = row.prediction;
    text += fmt::format(
        " {:>12.0f} {:>12} {:>6} {:>6} {:>12.2f} {:>8.2f} {:>8.2f} {:>6} {:>7} {:>12.2f}", row.size,
        row.count, "float", redop(r.op), answer_time(row).to_us(), row.algbw_gbps, row.busbw_gbps,
        algo_label(p), hw::to_string(p.protocol), p.model_time.to_us());
    if (calibrated) {
      text += fmt::format(" {:>12.2f}", p.time.to_us());
      text += fmt::format(" {:>15}", plan::to_string(row.answer));
    }
    text += "\n";
  }
  return text;
}

std::string collective_json(const plan::Sweep& s) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : s.rows) {
    const auto& p = row.prediction;
    rows.push_back({{"size_bytes", row.size},
                    {"count", row.count},
                    {"type", "float"},
                    {"redop", redop(s.request.op)},
                    {"time_us", answer_time(row).to_us()},
                    {"simulated_time_us", p.time.to_us()},
                    {"algbw_gbps", row.algbw_gbps},
                    {"busbw_gbps", row.busbw_gbps},
                    {"algorithm", hw::to_string(p.algorithm)},
                    {"protocol", hw::to_string(p.protocol)},
                    {"model_time_us", p.model_time.to_us()},
                    {"flows", p.flows},
                    {"nccl_algorithm", hw::to_string(p.nccl_algorithm)},
                    {"nccl_protocol", hw::to_string(p.nccl_protocol)}});
    rows.back()["answer"] = plan::to_string(row.answer);
    if (row.measured_time) rows.back()["measured_time_us"] = row.measured_time->to_us();
  }
  const auto& r = s.request;
  nlohmann::json out = {{"cluster", s.cluster_name}, {"op", r.op}, {"gpus", r.gpus},
                              {"placement", r.placement}, {"per_node", r.per_node},
                              {"routing", r.routing},
                              {"device", s.device},
                              {"bandwidth_unit", "GB/s (1e9 bytes per second), as nccl-tests"},
                              {"rows", rows}};
  if (s.fitted_scale) {
    out["fitted_scale"] = scale_json(s.scale, s.nodes);
  }
  return json_text(out);
}

}  // namespace megasim::reports
