#include "reports/compare_report.h"

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include "reports/number_text.h"

#include "reports/json_text.h"
#include "reports/plan_json.h"

namespace megasim::reports {

std::string compare_json(const std::vector<plan::Variant>& variants) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& v : variants) {
    nlohmann::json set = nlohmann::json::object();
    for (const auto& [path, value] : v.set) set[path] = value;
    // The label the text prints: the keys in the order given (`set` is an object, sorted).
    nlohmann::json row = {{"label", v.label}, {"set", set}};
    if (v.step) {
      const auto& p = *v.step;
      row.update({{"feasible", true},
                  {"step_time_s", p.step_time.to_seconds()},
                  {"mfu", p.mfu},
                  {"tokens_per_s", p.tokens_per_s},
                  {"peak_memory_gib", plan::peak_memory_gib(p)},
                  {"exposed_comm_s", plan::exposed_comm(p).to_seconds()},
                  {"gpus", p.gpus},
                  {"plan", plan_json(v.plan)},
                  {"device_memory_gib", v.device_memory.value() / kGiB.value()},
                  {"memory_headroom_gib", plan::memory_headroom_gib(v)},
                  {"tight", plan::tight(v)},
                  {"over_device", plan::over_device(v)},
                  {"breakdown_s", breakdown_json(p.breakdown)},
                  {"critical_stage", p.critical_stage},
                  {"pareto", v.pareto}});
    } else {
      row.update({{"feasible", false}, {"reason", v.reason}});
    }
    rows.push_back(row);
  }
  return json_text(nlohmann::json{{"variants", rows}});
}

std::string compare_text(const std::vector<plan::Variant>& variants) {
  // Variants of different sizes (--vary plan.dp, or tp and pp at a fixed dp) carry a GPUs
  // column: their tokens/s and Pareto marks set jobs of different sizes side by side.
  std::set<std::int64_t> sizes;
  for (const auto& v : variants)
    if (v.step) sizes.insert(v.plan.gpus());
  const bool sized = sizes.size() > 1;
  const auto gpus = [&](const plan::Variant& v) {
    return !sized ? std::string()
                  : fmt::format(" {:>6}", v.step ? std::to_string(v.plan.gpus()) : "-");
  };
  // tokens/s beside the step: the Pareto mark is of tokens a second against headroom.
  std::string text = fmt::format("{:<44}{} {:>9} {:>10} {:>7} {:>9} {:>9} {:>10}  {}\n", "variant",
                                 sized ? fmt::format(" {:>6}", "GPUs") : "", "step s", "tokens/s",
                                 "MFU %", "mem GiB", "room GiB", "exposed s", "");
  for (const auto& v : variants) {
    if (v.step) {
      const auto& p = *v.step;
      text +=
          fmt::format("{:<44}{} {:>9} {:>10.0f} {:>7} {:>9.1f} {:>9.1f} {:>10}{}\n", v.label,
                      gpus(v), seconds3(p.step_time.to_seconds()), p.tokens_per_s,
                      one_decimal(100 * p.mfu), plan::peak_memory_gib(p),
                      plan::memory_headroom_gib(v), seconds3(plan::exposed_comm(p).to_seconds()),
                      std::string(v.pareto ? "  pareto" : "") + (plan::tight(v) ? "  tight" : "") +
                          (plan::over_device(v) ? "  over" : ""));
    } else {
      text += fmt::format("{:<44}{} {:>9} {:>10} {:>7} {:>9} {:>9} {:>10}  infeasible: {}\n",
                          v.label, gpus(v), "-", "-", "-", "-", "-", "-", v.reason);
    }
  }
  if (sized) {
    text += fmt::format(
        "the variants run on {} to {} GPUs: tokens/s and the pareto mark set jobs of different "
        "sizes side by side; MFU compares them per GPU\n",
        *sizes.begin(), *sizes.rbegin());
  } else if (!sizes.empty()) {
    // Said once: a --set of tp, cp or pp sizes the scenario that dp is derived from, which the
    // table did not show (2026-12-05).
    // Infeasible variants have no size of their own here (a --set dp gives them another).
    const bool all_run = std::all_of(variants.begin(), variants.end(),
                                     [](const auto& v) { return v.step.has_value(); });
    text += fmt::format("every variant {} on {} GPU{}\n", all_run ? "runs" : "that runs is",
                        *sizes.begin(), *sizes.begin() == 1 ? "" : "s");
  }
  // As simulate says it beside the figure: FP8 GEMMs' MFU is of the 16-bit peak, so above 100 %
  // is no error (compare's column said nothing until 2026-12-07, a consistency trial).
  if (std::any_of(variants.begin(), variants.end(),
                  [](const auto& v) { return v.step && v.plan.fp8; }))
    text += "MFU of a variant with FP8 GEMMs is of the 16-bit peak\n";
  return text;
}

}  // namespace megasim::reports
