// `megasim compare SCENARIO --vary plan.tp=4,8 --vary plan.pp=8,16`: every combination of the
// varied keys, predicted side by side (plan/compare.h); a combination that cannot run is
// listed with its reason.
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "io/output.h"
#include "plan/compare.h"
#include "reports/compare_report.h"
#include "reports/html_report.h"

namespace megasim::cli {
namespace {

struct CompareOptions {
  std::string scenario;
  std::vector<std::string> vary;
  std::vector<std::string> overrides;
  std::optional<std::string> html;  // set when given, even empty
  bool json = false;
  WorkLimitOptions work;
};

void run_compare(const CompareOptions& o) {
  const plan::WorkLimits limits = o.work.limits();
  std::vector<plan::Axis> axes;
  for (const auto& v : o.vary) axes.push_back(plan::parse_axis(v));
  // The target is checked before the work, so a bad one costs nothing.
  // The scenario is read first, so that a target naming it is refused before the work;
  // commit() checks again against everything the variants read (model, cluster, presets).
  io::FilesRead read;
  io::load_scenario(o.scenario, o.overrides, nullptr, &read);
  io::OutputFiles files({}, &read);
  if (o.html) files.add("--html", *o.html);
  if (o.json) files.refuse_beside_stdout("--json");
  const std::vector<plan::Variant> variants =
      plan::compare(o.scenario, o.overrides, axes, &read, limits);
  note_sets_unpriced(o.overrides, {"run.", "reliability.", "power."},
                     "compare prices the step (simulate prices the run, its failures and power)");
  // A --set key that changes nothing in every variant that ran, said as simulate says it.
  for (const std::string& line : plan::sets_not_run_in_all(variants)) {
    std::fprintf(stderr, "megasim: warning: %s\n", line.c_str());
  }
  // A value that changes nothing is said, not refused: the table is still right.
  for (const std::string& values : plan::values_alike(variants)) {
    std::fprintf(stderr,
                 "megasim: note: %s predict the same step (time, MFU, tokens, memory and "
                 "room): compare's figures do not tell them apart\n",
                 values.c_str());
  }
  // A device of another part than the cluster's GPUs, said as simulate says it, once a message
  // with the variants it concerns (compare was silent until 2026-12-06).
  std::map<std::string, std::string> warned;
  for (const plan::Variant& v : variants) {
    if (v.warning.empty()) continue;
    std::string& labels = warned[v.warning];
    labels += (labels.empty() ? "" : ", ") + v.label;
  }
  for (const auto& [warning, labels] : warned) {
    std::fprintf(stderr, "megasim: warning: %s: %s\n", labels.c_str(), warning.c_str());
  }
  if (o.html) files.set("--html", reports::compare_html(variants));
  // --html - takes standard output in place of the report.
  files.commit(o.json ? reports::compare_json(variants) : reports::compare_text(variants));
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
  cmd->add_option("--html", opts->html, "Also write an offline HTML report of the variants");
  // A variant past them is a row with the refusal as its reason.
  add_work_limit_options(cmd, opts->work, "a variant", ", as simulate");
  cmd->callback([opts] { run_compare(*opts); });
}

}  // namespace megasim::cli
