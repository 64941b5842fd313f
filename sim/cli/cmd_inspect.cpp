// `megasim inspect SCENARIO`: what the workload model makes of a scenario, before any
// simulation: parameters, FLOPs per token (MFU convention, exact, hardware, useful), the op
// table of each pipeline stage (one micro-batch through all its chunks, and the per-step
// optimizer and DP work) and the memory each stage's GPUs need against the device capacity.
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.h"
#include "engine/error.h"
#include "io/json_reader.h"
#include "io/model_loader.h"
#include "io/scenario.h"
#include "workload/flops.h"
#include "workload/memory.h"
#include "workload/program.h"

namespace megasim::cli {
namespace {

using workload::Op;
using workload::OpKind;

struct InspectOptions {
  std::string scenario;
  std::vector<std::string> overrides;
  bool json = false;
  bool unfused_attention = false;
  bool allow_oom = false;
};

struct KindTotals {
  std::int64_t count = 0;
  Flops model{0.0}, hardware{0.0};
  Bytes bytes{0.0};
};

using OpTable = std::map<std::string, KindTotals>;  // keyed by op kind name

void tally(OpTable& t, const std::vector<Op>& ops) {
  for (const Op& op : ops) {
    KindTotals& k = t[workload::to_string(op.kind())];
    ++k.count;
    k.model += op.model_flops;
    k.hardware += op.hardware_flops;
    k.bytes += op.bytes();
  }
}

io::Json table_json(const OpTable& t) {
  io::Json j = io::Json::object();
  for (const auto& [kind, k] : t) {
    j[kind] = {{"count", k.count},
               {"model_flops", k.model.value()},
               {"hardware_flops", k.hardware.value()},
               {"bytes", k.bytes.value()}};
  }
  return j;
}

// The device's HBM capacity, read from the device profile's `memory_gib`.
Bytes device_capacity(const std::filesystem::path& file) {
  const io::Json doc = io::parse_json_file(file);
  if (!doc.is_object() || !doc.contains("memory_gib") || !doc["memory_gib"].is_number() ||
      doc["memory_gib"].get<double>() <= 0.0) {
    throw InputError(
        fmt::format("{}: memory_gib: the device profile needs a positive number of "
                    "GiB of device memory",
                    file.string()));
  }
  return kGiB * doc["memory_gib"].get<double>();
}

io::Json memory_json(const workload::MemoryEstimate& e) {
  return {{"weights_bytes", e.weights.value()},
          {"gradients_bytes", e.gradients.value()},
          {"optimizer_states_bytes", e.optimizer_states.value()},
          {"activations_bytes", e.activations.value()},
          {"activations_per_micro_batch_bytes", e.activations_per_micro_batch.value()},
          {"micro_batches_in_flight", e.micro_batches_in_flight},
          {"embedding_logits_bytes", e.embedding_logits.value()},
          {"workspace_bytes", e.workspace.value()},
          {"total_bytes", e.total().value()}};
}

void run_inspect(const InspectOptions& o) {
  const io::Scenario s = io::load_scenario(o.scenario, o.overrides);
  const workload::ModelSpec m = io::load_model(s.model_file);
  const workload::ParallelPlan& p = s.plan;
  workload::validate_plan(m, p);
  const Bytes capacity = device_capacity(s.device_file);
  workload::GeneratorOptions gen;
  gen.fused_attention = !o.unfused_attention;
  workload::MemoryOptions mem;
  mem.fused_attention = gen.fused_attention;
  const auto program = workload::build_program(m, p, gen);
  const workload::FlopsPerToken f = workload::flops_per_token(m, p.recompute);

  io::Json stages = io::Json::array();
  std::string table;
  std::vector<workload::MemoryEstimate> estimates;
  for (const auto& st : program) {
    OpTable micro, step;
    int layers = 0;
    for (const auto& ch : st.chunks) {
      tally(micro, ch.forward);
      tally(micro, ch.backward);
      layers += ch.layers.count;
    }
    tally(step, st.dp_gradient_comm);
    tally(step, st.optimizer);
    tally(step, st.dp_param_comm);
    const auto e = workload::estimate_memory(m, p, st.stage, mem);
    estimates.push_back(e);
    stages.push_back({{"stage", st.stage},
                      {"layers", layers},
                      {"parameters_per_rank", st.parameters_per_rank},
                      {"pp_send_bytes", st.pp_send_bytes.value()},
                      {"ops_per_micro_batch", table_json(micro)},
                      {"ops_per_step", table_json(step)},
                      {"memory", memory_json(e)},
                      {"fits", e.total() <= capacity}});
    table += fmt::format("stage {:>3}  {:>3} layers  {:>7.3f} B params/rank\n", st.stage, layers,
                         static_cast<double>(st.parameters_per_rank) / 1e9);
    for (const auto& [kind, k] : micro) {
      table += fmt::format(
          "  micro-batch {:<9} {:>6} ops  {:>10.4g} model FLOP  {:>10.4g} hw "
          "FLOP  {:>10.4g} bytes\n",
          kind, k.count, k.model.value(), k.hardware.value(), k.bytes.value());
    }
    for (const auto& [kind, k] : step) {
      table += fmt::format("  per step    {:<9} {:>6} ops  {:>43.4g} bytes\n", kind, k.count,
                           k.bytes.value());
    }
    table += fmt::format(
        "  memory GiB  weights {:.1f}  grads {:.1f}  optimizer {:.1f}  activations {:.1f} "
        "({:.2f} in flight)  emb/logits {:.1f}  workspace {:.1f}  total {:.1f} / {:.0f}\n",
        e.weights / kGiB, e.gradients / kGiB, e.optimizer_states / kGiB, e.activations / kGiB,
        e.micro_batches_in_flight, e.embedding_logits / kGiB, e.workspace / kGiB, e.total() / kGiB,
        capacity / kGiB);
  }
  if (!o.allow_oom) {
    for (const auto& e : estimates) workload::check_fits(e, capacity);
  }

  if (o.json) {
    io::Json out = {{"scenario", s.name},
                    {"model",
                     {{"name", m.name},
                      {"file", s.model_file.string()},
                      {"parameters", workload::total_parameters(m)},
                      {"layers", m.layers},
                      {"hidden", m.hidden},
                      {"heads", m.heads},
                      {"kv_heads", m.kv_heads},
                      {"ffn_hidden", m.ffn_hidden},
                      {"vocab", m.vocab},
                      {"seq", m.seq}}},
                    {"plan", io::to_json(s)["plan"]},
                    {"fused_attention", gen.fused_attention},
                    {"model_flops_per_token", f.model.value()},
                    {"exact_model_flops_per_token", f.exact_model.value()},
                    {"hardware_flops_per_token", f.hardware.value()},
                    {"hardware_flops_per_token_published", f.hardware_published.value()},
                    {"useful_flops_per_token", f.useful.value()},
                    {"device_memory_bytes", capacity.value()},
                    {"stages", stages}};
    const std::string text = out.dump(2) + "\n";
    std::fwrite(text.data(), 1, text.size(), stdout);
    return;
  }
  std::string out;
  out += fmt::format("scenario     {}\n", s.name);
  out += fmt::format(
      "model        {}: {:.2f} B parameters, {} layers, hidden {}, heads {} (kv {}), "
      "ffn {}, {} {}, vocab {}, seq {}\n",
      m.name, static_cast<double>(workload::total_parameters(m)) / 1e9, m.layers, m.hidden, m.heads,
      m.kv_heads, m.ffn_hidden, workload::to_string(m.activation), workload::to_string(m.norm),
      m.vocab, m.seq);
  out += fmt::format(
      "plan         TP {} x PP {} (VPP {}) x DP {} = {} GPUs, micro-batch {}, "
      "{} micro-batches, recompute {}, SP {}\n",
      p.tp, p.pp, p.vpp, p.dp, p.gpus(), p.micro_batch, p.micro_batches(),
      workload::to_string(p.recompute), p.sequence_parallel ? "on" : "off");
  out += fmt::format(
      "FLOPs/token  model {:.5g} (MFU convention)  exact {:.5g}  hardware {:.5g} "
      "(recompute {})  useful {:.5g} ({} attention)\n\n",
      f.model.value(), f.exact_model.value(), f.hardware.value(), workload::to_string(p.recompute),
      f.useful.value(), gen.fused_attention ? "fused causal" : "unfused");
  out += table;
  std::fwrite(out.data(), 1, out.size(), stdout);
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
  cmd->add_flag(
      "--unfused-attention", opts->unfused_attention,
      "Generate Megatron's unfused attention (QK^T, softmax, PV) instead of a fused kernel");
  cmd->add_flag("--allow-oom", opts->allow_oom,
                "Report a plan that does not fit device memory instead of failing");
  cmd->callback([opts] { run_inspect(*opts); });
}

}  // namespace megasim::cli
