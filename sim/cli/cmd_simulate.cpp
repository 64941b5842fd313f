// `megasim simulate SCENARIO`: predicts one step of the scenario's plan and, when run.tokens
// is set, the whole run (days, goodput, restarts, power, energy, cost).
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "io/inputs.h"
#include "io/output.h"
#include "io/scenario.h"
#include "plan/evaluate.h"
#include "reports/html_report.h"
#include "reports/simulate_report.h"
#include "reports/trace_writer.h"

namespace megasim::cli {
namespace {

struct SimulateOptions {
  std::string scenario;
  std::vector<std::string> overrides;
  std::string output;
  std::string trace;
  std::string html;
  int trials = 0;
  bool json = false;
  bool full = false;
  std::string network;
};

void run_simulate(const SimulateOptions& o) {
  io::InputOptions io_options;
  if (o.trials > 0) io_options.trials = o.trials;
  const io::Inputs inputs = io::load_inputs(io::load_scenario(o.scenario, o.overrides), io_options);
  using Network = step::StepRequest::Network;
  const Network network = o.network == "priced" ? Network::kPriced
                          : o.network == "apart" ? Network::kSharedApart
                                                 : Network::kShared;
  // The HTML report draws the step's timeline from the trace records.
  const bool trace = !o.trace.empty() || !o.html.empty();
  plan::EvaluateOptions options{o.full, trace, network, {}};
  // The residuals of the validation rows, kept beside the published runs in the source tree.
  const std::filesystem::path residuals = MEGASIM_SOURCE_DIR "/validation/residuals.json";
  if (std::filesystem::exists(residuals)) options.residuals = residuals;
  const plan::Evaluation e = plan::evaluate(inputs, options);
  const std::string json_text = reports::simulate_json(e);
  // Files first, so that a failure to write leaves stdout empty.
  if (!o.trace.empty()) io::write_file_atomically(o.trace, reports::chrome_trace_json(e.step.trace));
  if (!o.output.empty()) io::write_file_atomically(o.output, json_text);
  if (!o.html.empty()) io::write_file_atomically(o.html, reports::simulate_html(e));
  const std::string text = o.json ? json_text : reports::simulate_text(e);
  std::fwrite(text.data(), 1, text.size(), stdout);
}

}  // namespace

void add_simulate_command(CLI::App& app) {
  auto opts = std::make_shared<SimulateOptions>();
  CLI::App* cmd = app.add_subcommand("simulate", "Predict a training step and run of a scenario");
  cmd->add_option("scenario", opts->scenario, "Scenario file")->required();
  cmd->add_option("--set", opts->overrides,
                  "Override a scenario key, PATH=VALUE (e.g. plan.tp=4); repeatable");
  cmd->add_flag("--json", opts->json, "Print exactly one JSON object on stdout");
  cmd->add_flag("--full", opts->full,
                "Simulate every rank rather than one per pipeline stage");
  cmd->add_option("--trials", opts->trials, "Monte Carlo trials of the run (replaces run.trials)")
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--trace", opts->trace,
                  "Write a Chrome/Perfetto trace of the step (open in ui.perfetto.dev)");
  cmd->add_option("--network", opts->network,
                  "shared (default): PP and DP communication issued on one shared flow solver "
                  "during the step, every group at once, each message and collective a coflow; "
                  "apart: the same with every flow apart (the slow reference); priced: each "
                  "priced alone before the step (the model before the shared network; see README)")
      ->check(CLI::IsMember({"priced", "shared", "apart"}));
  cmd->add_option("--html", opts->html,
                  "Write an offline HTML report (charts; its data is the --json object, with the "
                  "step's timeline)");
  cmd->add_option("-o,--output", opts->output, "Also write the JSON result to this file");
  cmd->callback([opts] { run_simulate(*opts); });
}

}  // namespace megasim::cli
