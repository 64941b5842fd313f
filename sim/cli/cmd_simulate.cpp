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
#include "io/resolve.h"
#include "io/scenario.h"
#include "plan/compare.h"
#include "plan/evaluate.h"
#include "reports/html_report.h"
#include "reports/simulate_report.h"
#include "reports/trace_writer.h"

namespace megasim::cli {
namespace {

struct SimulateOptions {
  std::string scenario;
  std::vector<std::string> overrides;
  std::optional<std::string> output, trace, html;  // set when the option is given, even empty
  int trials = 0;
  bool json = false;
  bool full = false;
  std::string network;
  WorkLimitOptions work;
};

void run_simulate(const SimulateOptions& o) {
  const plan::WorkLimits limits = o.work.limits();
  io::InputOptions io_options;
  if (o.trials > 0) io_options.trials = o.trials;
  io::FilesRead read;
  const io::Inputs inputs =
      io::load_inputs(io::load_scenario(o.scenario, o.overrides, nullptr, &read), io_options, &read);
  plan::check_sets_run(o.overrides, inputs);
  for (const std::string& line : plan::keys_written_that_do_not_run(o.overrides, inputs)) {
    std::fprintf(stderr, "megasim: warning: %s\n", line.c_str());
  }
  for (const std::string& other :
       {plan::power_preset_mismatch(inputs), plan::cluster_device_mismatch(inputs),
        plan::framework_lacks(inputs), plan::node_power_over_reference(inputs)}) {
    if (!other.empty()) std::fprintf(stderr, "megasim: warning: %s\n", other.c_str());
  }
  // Every target is checked before the work, so a bad one costs nothing.
  io::OutputFiles files({}, &read);
  if (o.trace) files.add("--trace", *o.trace);
  if (o.output) files.add("-o", *o.output);
  if (o.html) files.add("--html", *o.html);
  if (o.json) files.refuse_beside_stdout("--json");
  using Network = step::StepRequest::Network;
  Network network = Network::kShared;
  for (Network n : {Network::kPriced, Network::kShared, Network::kSharedApart}) {
    if (o.network == step::StepRequest::to_string(n)) network = n;
  }
  // The HTML report draws the step's timeline from the trace records.
  const bool trace = o.trace.has_value() || o.html.has_value();
  plan::EvaluateOptions options{o.full, trace, network, limits, {}, &read};
  // The residuals of the validation rows, kept beside the published runs in the source tree.
  const std::filesystem::path residuals = io::data_root() / "validation/residuals.json";
  std::error_code unread;  // an unreadable folder is no residuals, not an internal error
  if (std::filesystem::exists(residuals, unread)) {
    options.residuals = residuals;
  } else if (unread) {
    std::fprintf(stderr, "megasim: warning: %s cannot be read (%s): no error band is drawn\n",
                 residuals.string().c_str(), unread.message().c_str());
  }
  const plan::Evaluation e = plan::evaluate(inputs, options);
  if (const std::string borrowed = plan::allow_oom_without_run(inputs, e.step.memory);
      !borrowed.empty())
    std::fprintf(stderr, "megasim: warning: %s\n", borrowed.c_str());
  const std::string json_text = reports::simulate_json(e);
  if (o.trace) files.set("--trace", reports::chrome_trace_json(e.step.trace));
  files.set("-o", json_text);
  if (o.html) files.set("--html", reports::simulate_html(e));
  // The report goes out before the files are renamed into place: a failed write of either
  // leaves no file behind.
  files.commit(o.json ? json_text : reports::simulate_text(e));
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
      ->check(whole_number(1, 100000));
  cmd->add_option("--trace", opts->trace,
                  "Write a Chrome/Perfetto trace of the step (open in ui.perfetto.dev); - for "
                  "stdout");
  cmd->add_option("--network", opts->network,
                  "shared (default): PP and DP communication issued on one shared flow solver "
                  "during the step, every group at once, each message and collective a coflow; "
                  "apart: the same with every flow apart (the slow reference); priced: each "
                  "priced alone before the step (the model before the shared network; see README)")
      ->check(CLI::IsMember(std::vector<std::string>{
          step::StepRequest::to_string(step::StepRequest::Network::kPriced),
          step::StepRequest::to_string(step::StepRequest::Network::kShared),
          step::StepRequest::to_string(step::StepRequest::Network::kSharedApart)}));
  cmd->add_option("--html", opts->html,
                  "Write an offline HTML report (charts; its data is the --json object, with the "
                  "step's timeline)");
  add_work_limit_options(cmd, opts->work, "a step or run",
                         ": at that count a step takes about two minutes and 1.5 GiB on the "
                         "shared network, about twenty times as long with --network apart");
  cmd->add_option("-o,--output", opts->output, "Also write the JSON result to this file; - for stdout, in place of the "
                  "report");
  cmd->callback([opts] { naming_sets(opts->overrides, [&] { run_simulate(*opts); }); });
}

}  // namespace megasim::cli
