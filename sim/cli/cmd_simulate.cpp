// `megasim simulate SCENARIO`: loads and validates a scenario and reports on it.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.h"
#include "io/output.h"
#include "io/scenario.h"

namespace megasim::cli {
namespace {

struct SimulateOptions {
  std::string scenario;
  std::vector<std::string> overrides;
  std::string output;
  bool json = false;
};

std::string text_report(const io::Scenario& s) {
  const auto& p = s.plan;
  std::string out;
  out += fmt::format("scenario     {}\n", s.name);
  out += fmt::format("model        {}  ({})\n", s.model_ref, s.model_file.string());
  out += fmt::format("cluster      {}  ({})\n", s.cluster_ref, s.cluster_file.string());
  out += fmt::format("device       {}  ({})\n", s.device_ref, s.device_file.string());
  out += fmt::format("plan         TP {} x PP {} x DP {} = {} GPUs, VPP {}, schedule {}\n", p.tp,
                     p.pp, p.dp, p.gpus(), p.vpp, workload::to_string(p.schedule));
  out += fmt::format("batch        global {} sequences, micro-batch {}, {} micro-batches per "
                     "replica\n",
                     p.global_batch, p.micro_batch, p.micro_batches());
  out += fmt::format("memory opts  sequence parallel {}, distributed optimizer {}, ZeRO-3 {}, "
                     "recompute {}\n",
                     p.sequence_parallel ? "on" : "off", p.distributed_optimizer ? "on" : "off",
                     p.zero3 ? "on" : "off", workload::to_string(p.recompute));
  out += fmt::format("optimizer    {} ({})\n", workload::to_string(p.optimizer),
                     workload::to_string(p.precision));
  out += fmt::format("system       {} preset\n", s.optimizations.preset);
  if (s.run.tokens) out += fmt::format("run          {:.4g} tokens, seed {}\n", *s.run.tokens, s.run.seed);
  out += "\nThe scenario is valid. Step simulation is not built yet, so no step time, MFU, power\n"
         "or run-level figure is predicted (see README, 'Status').\n";
  return out;
}

void run_simulate(const SimulateOptions& o) {
  const io::Scenario s = io::load_scenario(o.scenario, o.overrides);
  io::Json result = {{"scenario", io::to_json(s)},
                     {"status", "validated; step simulation not built yet, no prediction made"}};
  const std::string json_text = result.dump(2) + "\n";
  if (!o.output.empty()) io::write_file_atomically(o.output, json_text);
  if (o.json) {
    std::fwrite(json_text.data(), 1, json_text.size(), stdout);
  } else {
    const std::string text = text_report(s);
    std::fwrite(text.data(), 1, text.size(), stdout);
  }
}

}  // namespace

void add_simulate_command(CLI::App& app) {
  auto opts = std::make_shared<SimulateOptions>();
  CLI::App* cmd = app.add_subcommand("simulate", "Simulate a scenario (JSON) and report on it");
  cmd->add_option("scenario", opts->scenario, "Scenario file")->required();
  cmd->add_option("--set", opts->overrides,
                  "Override a scenario key, PATH=VALUE (e.g. plan.tp=4); repeatable");
  cmd->add_flag("--json", opts->json, "Print exactly one JSON object on stdout");
  cmd->add_option("-o,--output", opts->output, "Also write the JSON result to this file");
  cmd->callback([opts] { run_simulate(*opts); });
}

}  // namespace megasim::cli
