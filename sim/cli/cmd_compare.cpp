// `megasim compare SCENARIO --vary plan.tp=4,8 --vary plan.pp=8,16`: every combination of the
// varied keys, predicted side by side (step time, MFU, peak memory per GPU, exposed
// communication); a combination that cannot run is listed with its reason.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/evaluate.h"
#include "engine/error.h"
#include "io/scenario.h"

namespace megasim::cli {
namespace {

struct CompareOptions {
  std::string scenario;
  std::vector<std::string> vary;
  std::vector<std::string> overrides;
  bool json = false;
};

struct Axis {
  std::string path;
  std::vector<std::string> values;
};

Axis parse_axis(const std::string& spec) {
  const auto eq = spec.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) {
    throw InputError("--vary " + spec + ": expected PATH=V1,V2,... e.g. --vary plan.tp=4,8");
  }
  Axis a{spec.substr(0, eq), {}};
  std::size_t start = eq + 1;
  for (;;) {
    const auto comma = spec.find(',', start);
    const std::string v = spec.substr(start, comma == std::string::npos ? comma : comma - start);
    if (v.empty()) throw InputError("--vary " + spec + ": empty value in the list");
    a.values.push_back(v);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return a;
}

void run_compare(const CompareOptions& o) {
  std::vector<Axis> axes;
  for (const auto& v : o.vary) axes.push_back(parse_axis(v));
  if (axes.empty()) throw InputError("compare: give at least one --vary PATH=V1,V2,...");
  std::size_t combos = 1;
  for (const auto& a : axes) combos *= a.values.size();
  if (combos > 4096) {
    throw InputError(fmt::format("compare: {} combinations; at most 4096 are evaluated", combos));
  }
  EvaluateOptions eo;
  eo.run_level = false;
  nlohmann::json rows = nlohmann::json::array();
  std::string text = fmt::format("{:<44} {:>9} {:>7} {:>9} {:>10}  {}\n", "variant", "step s",
                                 "MFU %", "mem GiB", "exposed s", "");
  for (std::size_t i = 0; i < combos; ++i) {
    std::vector<std::string> sets = o.overrides;
    std::string label;
    nlohmann::json set = nlohmann::json::object();
    std::size_t rest = i;
    for (const auto& a : axes) {
      const std::string& v = a.values[rest % a.values.size()];
      rest /= a.values.size();
      sets.push_back(a.path + "=" + v);
      set[a.path] = v;
      label += (label.empty() ? "" : " ") + a.path.substr(a.path.rfind('.') + 1) + "=" + v;
    }
    nlohmann::json row = {{"set", set}};
    try {
      const Evaluation e = evaluate(io::load_scenario(o.scenario, sets), eo);
      const auto& p = e.step;
      double mem = 0;
      for (const auto& m : p.memory) mem = std::max(mem, m.total().value() / kGiB.value());
      const Time exposed = p.breakdown.tp_exposed + p.breakdown.pp_exposed + p.breakdown.dp_exposed;
      row.update({{"feasible", true},
                  {"step_time_s", p.step_time.to_seconds()},
                  {"mfu", p.mfu},
                  {"tokens_per_s", p.tokens_per_s},
                  {"peak_memory_gib", mem},
                  {"exposed_comm_s", exposed.to_seconds()},
                  {"gpus", p.gpus}});
      text += fmt::format("{:<44} {:>9.3f} {:>7.1f} {:>9.1f} {:>10.3f}\n", label,
                          p.step_time.to_seconds(), 100 * p.mfu, mem, exposed.to_seconds());
    } catch (const InputError& e) {
      row.update({{"feasible", false}, {"reason", e.what()}});
      text += fmt::format("{:<44} {:>9} {:>7} {:>9} {:>10}  infeasible: {}\n", label, "-", "-",
                          "-", "-", e.what());
    }
    rows.push_back(row);
  }
  const std::string out = o.json ? nlohmann::json{{"variants", rows}}.dump(2) + "\n" : text;
  std::fwrite(out.data(), 1, out.size(), stdout);
}

}  // namespace

void add_compare_command(CLI::App& app) {
  auto opts = std::make_shared<CompareOptions>();
  CLI::App* cmd = app.add_subcommand("compare", "Compare variants of a scenario side by side");
  cmd->add_option("scenario", opts->scenario, "Scenario file")->required();
  cmd->add_option("--vary", opts->vary, "PATH=V1,V2,...: a key and its values; repeatable")
      ->required();
  cmd->add_option("--set", opts->overrides, "Override a key in every variant; repeatable");
  cmd->add_flag("--json", opts->json, "Print exactly one JSON object on stdout");
  cmd->callback([opts] { run_compare(*opts); });
}

}  // namespace megasim::cli
