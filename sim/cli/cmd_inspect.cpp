// `megasim inspect SCENARIO`: what the workload model makes of a scenario, before any
// simulation (plan/inspect.h): parameters, FLOPs per token, the op table of each pipeline
// stage and the memory each stage's GPUs need against the device capacity.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "io/inputs.h"
#include "io/output.h"
#include "io/scenario.h"
#include "plan/evaluate.h"
#include "plan/inspect.h"
#include "reports/inspect_report.h"

namespace megasim::cli {
namespace {

struct InspectOptions {
  std::string scenario;
  std::vector<std::string> overrides;
  bool json = false;
  plan::InspectOptions plan;
};

void run_inspect(const InspectOptions& o) {
  io::InputOptions io_options;
  io_options.run_level = false;
  const io::Inputs inputs = io::load_inputs(io::load_scenario(o.scenario, o.overrides), io_options);
  const plan::Inspection i = plan::inspect(inputs, o.plan);
  // A borrowed validation.allow_oom, said as simulate says it (not where --allow-oom asks).
  std::vector<workload::MemoryEstimate> memory;
  for (const auto& stage : i.stages) memory.push_back(stage.memory);
  const std::string borrowed = o.plan.allow_oom ? "" : plan::allow_oom_without_run(inputs, memory);
  if (!borrowed.empty()) std::fprintf(stderr, "megasim: warning: %s\n", borrowed.c_str());
  const std::string out = o.json ? reports::inspect_json(i) : reports::inspect_text(i);
  io::write_stdout(out);
}

}  // namespace

void add_inspect_command(CLI::App& app) {
  auto opts = std::make_shared<InspectOptions>();
  CLI::App* cmd = app.add_subcommand(
      "inspect", "Show the workload of a scenario: parameters, FLOPs, ops and memory per stage");
  cmd->add_option("scenario", opts->scenario, "Scenario file")->required();
  cmd->add_option("--set", opts->overrides,
                  "Override a scenario key, PATH=VALUE (e.g. plan.tp=4); repeatable");
  cmd->add_flag("--json", opts->json, "Print exactly one JSON object on stdout");
  cmd->add_flag("--unfused-attention", opts->plan.unfused_attention,
                "Generate Megatron's unfused attention (QK^T, softmax, PV) whatever kernel the "
                "scenario's system runs");
  cmd->add_flag("--allow-oom", opts->plan.allow_oom,
                "Report a plan that does not fit device memory instead of failing");
  cmd->callback([opts] { naming_sets(opts->overrides, [&] { run_inspect(*opts); }); });
}

}  // namespace megasim::cli
