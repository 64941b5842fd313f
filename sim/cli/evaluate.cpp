#include "cli/evaluate.h"

#include <cmath>

#include <fmt/format.h>

#include "collective/collective.h"
#include "engine/error.h"
#include "hw/kernel_cost_model.h"
#include "io/cluster_loader.h"
#include "io/collective_constants_reader.h"
#include "io/device_profile_loader.h"
#include "io/model_loader.h"
#include "io/reliability_loader.h"
#include "io/system_loader.h"
#include "net/topology.h"
#include "run/run_report.h"

namespace megasim::cli {
namespace {

std::int64_t fabric_switches(const net::Topology& t, std::int64_t job_gpus) {
  std::int64_t switches = 0;
  const auto& g = t.graph();
  for (auto v : boost::make_iterator_range(boost::vertices(g))) {
    const auto kind = g[v].kind;
    if (kind == net::VertexKind::kTor || kind == net::VertexKind::kAgg ||
        kind == net::VertexKind::kSpine) {
      ++switches;
    }
  }
  // The job's share of the fabric, by the share of GPUs it holds (rounded up).
  return (switches * job_gpus + t.gpus() - 1) / t.gpus();
}

double seconds(Time t) { return t.to_seconds(); }

}  // namespace

step::SystemOptions system_options(const io::Scenario& s, std::int64_t model_window) {
  const auto& o = s.optimizations;
  step::SystemOptions sys = io::load_system_preset(o.preset);
  if (o.attention) {
    sys.attention = *o.attention == "unfused"    ? step::AttentionKernel::kUnfused
                    : *o.attention == "flash-v1" ? step::AttentionKernel::kFlashV1
                                                 : step::AttentionKernel::kFlashV2;
  }
  const auto set = [](bool& field, const std::optional<bool>& v) {
    if (v) field = *v;
  };
  set(sys.parallel_block, o.parallel_block);
  set(sys.sliding_window, o.sliding_window);
  set(sys.tp_overlap, o.tp_overlap);
  set(sys.pp_overlap, o.pp_overlap);
  set(sys.dp_overlap, o.dp_overlap);
  set(sys.efficient_operators, o.efficient_operators);
  set(sys.misc, o.misc);
  set(sys.lamb, o.lamb);
  sys.attention_window = o.attention_window.value_or(model_window);
  if (sys.sliding_window && sys.attention_window <= 0) {
    throw InputError(fmt::format(
        "{}: optimizations.sliding_window is on (preset '{}') but neither "
        "optimizations.attention_window nor the model gives a window size",
        s.file.string(), o.preset));
  }
  return sys;
}

Evaluation evaluate(const io::Scenario& s, const EvaluateOptions& options) {
  Evaluation e;
  e.scenario = s;
  const workload::ModelSpec model = io::load_model(s.model_file);
  const net::ClusterSpec cluster = io::load_cluster(s.cluster_file);
  const io::LoadedDeviceProfile device = io::load_device_profile(s.device_file);
  if (device.collective.is_null()) {
    throw InputError(fmt::format("{}: device profile '{}' has no \"collective\" constants table, "
                                 "which the network model needs",
                                 s.device_file.string(), device.profile.name));
  }
  const hw::CollectiveConstants constants = io::read_collective_constants(s.device_file);
  e.model_name = model.name;
  e.cluster_name = cluster.name;
  e.device_name = device.profile.name;
  e.device_kind = hw::to_string(device.profile.kind);
  e.system = system_options(s, model.attention_window);

  const net::Topology topology(cluster);
  step::StepRequest request;
  request.model = model;
  request.plan = s.plan;
  request.system = e.system;
  if (s.plan.gpus() > topology.gpus()) {
    throw InputError(fmt::format("{}: plan: tp × pp × dp = {} × {} × {} = {} GPUs, but cluster "
                                 "'{}' has {}",
                                 s.file.string(), s.plan.tp, s.plan.pp, s.plan.dp, s.plan.gpus(),
                                 cluster.name, topology.gpus()));
  }
  request.placement = s.placement == "spread"
                          ? topology.spread_placement(static_cast<int>(s.plan.gpus()))
                          : topology.pack_placement(static_cast<int>(s.plan.gpus()));
  request.full = options.full;
  request.trace = options.trace;
  request.stragglers = {s.stragglers.host_fraction, s.stragglers.slowdown,
                        s.stragglers.all_passes, s.stragglers.seed};
  request.data_per_sample = Time::from_ms(s.data_loading.host_ms_per_sample);
  const hw::KernelCostModel kernels(device.profile);
  try {
    e.step = step::predict_step(request, topology, kernels, constants);
  } catch (const InputError& err) {
    // Plan/model clashes are found below the file level: say which scenario they come from.
    throw InputError(s.file.string() + ": " + err.what());
  }

  if (options.run_level && s.run.tokens) {
    run::StepProfile p;
    p.step_time = e.step.step_time;
    p.tokens_per_step = e.step.tokens_per_step;
    p.gpus = s.plan.gpus();
    p.gpus_per_node = cluster.node.gpus;
    p.nodes = (p.gpus + p.gpus_per_node - 1) / p.gpus_per_node;
    p.switches = fabric_switches(topology, p.gpus);
    // A checkpoint holds bf16 weights and fp32 master weights and Adam moments: 14 B/param.
    p.checkpoint_size = Bytes(14.0 * static_cast<double>(workload::total_parameters(model)));
    p.activity_time[static_cast<std::size_t>(run::Activity::kGemm)] = e.step.gemm_time;
    p.activity_time[static_cast<std::size_t>(run::Activity::kMemory)] = e.step.memory_bound_time;
    p.activity_time[static_cast<std::size_t>(run::Activity::kCommunication)] = e.step.comm_only_time;
    p.activity_time[static_cast<std::size_t>(run::Activity::kIdle)] = e.step.idle_time;
    p.validate();
    e.profile = p;
    e.power = io::power_for(s);
    e.reliability = io::reliability_for(s);
    e.run = run::simulate_run(p, io::run_spec_for(s, options.trials), *e.reliability, *e.power);
  }
  return e;
}

nlohmann::json to_json(const Evaluation& e) {
  using nlohmann::json;
  const auto& p = e.step;
  const auto& b = p.breakdown;
  json memory = json::array();
  for (const auto& m : p.memory) {
    memory.push_back({{"stage", m.stage},
                      {"weights_gib", m.weights.value() / kGiB.value()},
                      {"gradients_gib", m.gradients.value() / kGiB.value()},
                      {"optimizer_states_gib", m.optimizer_states.value() / kGiB.value()},
                      {"activations_gib", m.activations.value() / kGiB.value()},
                      {"embedding_logits_gib", m.embedding_logits.value() / kGiB.value()},
                      {"workspace_gib", m.workspace.value() / kGiB.value()},
                      {"total_gib", m.total().value() / kGiB.value()}});
  }
  const auto& sys = e.system;
  json out = {
      {"scenario", e.scenario.name},
      {"model", e.model_name},
      {"cluster", e.cluster_name},
      {"device", {{"name", e.device_name}, {"kind", e.device_kind}}},
      {"plan", io::to_json(e.scenario)["plan"]},
      {"system",
       {{"preset", sys.preset}, {"parallel_block", sys.parallel_block},
        {"sliding_window", sys.sliding_window}, {"attention_window", sys.attention_window},
        {"tp_overlap", sys.tp_overlap}, {"pp_overlap", sys.pp_overlap},
        {"dp_overlap", sys.dp_overlap}, {"efficient_operators", sys.efficient_operators},
        {"misc", sys.misc}, {"lamb", sys.lamb}}},
      {"step_time_s", seconds(p.step_time)},
      {"tokens_per_s", p.tokens_per_s},
      {"mfu", p.mfu},
      {"hfu", p.hfu},
      {"tflops_per_gpu_model", p.tflops_per_gpu_model},
      {"tflops_per_gpu_hw", p.tflops_per_gpu_hw},
      {"model_flops_per_token", p.model_flops_per_token},
      {"breakdown_s",
       {{"compute", seconds(b.compute)}, {"tp_exposed", seconds(b.tp_exposed)},
        {"pp_exposed", seconds(b.pp_exposed)}, {"dp_exposed", seconds(b.dp_exposed)},
        {"bubble", seconds(b.bubble)}, {"optimizer", seconds(b.optimizer)},
        {"other", seconds(b.other)}}},
      {"critical_stage", p.critical_stage},
      {"kernel_time_s",
       {{"gemm", seconds(p.kernel_gemm)}, {"attention", seconds(p.kernel_attention)},
        {"memory_bound", seconds(p.kernel_memory_bound)}}},
      {"memory_per_stage", memory},
      {"costs",
       {{"source", p.cost_source}, {"measured_share", p.measured_share},
        {"collective_measured_share", p.comm_measured_share}, {"device_kind", e.device_kind}}},
      {"simulation",
       {{"mode", p.full ? "full" : "folded"}, {"ranks_simulated", p.ranks_simulated},
        {"gpus", p.gpus}, {"events", p.events}}}};
  if (e.scenario.run.tokens) {
    const double days = *e.scenario.run.tokens / p.tokens_per_s / 86400.0;
    out["days_for_tokens"] = days;
  }
  if (e.run) {
    const json r = run::to_json(*e.run, *e.profile, *e.power, *e.reliability);
    for (const auto& [k, v] : r.items()) out[k] = v;
  }
  return out;
}

std::string to_text(const Evaluation& e) {
  const auto& p = e.step;
  const auto& b = p.breakdown;
  const auto& plan = e.scenario.plan;
  std::string s;
  s += fmt::format("scenario       {}\n", e.scenario.name);
  s += fmt::format("model          {}   cluster {}   device {} ({})\n", e.model_name,
                   e.cluster_name, e.device_name, e.device_kind);
  s += fmt::format("plan           TP {} × PP {} × DP {} = {} GPUs, VPP {}, {} micro-batches of "
                   "{}, global batch {}\n",
                   plan.tp, plan.pp, plan.dp, plan.gpus(), plan.vpp, plan.micro_batches(),
                   plan.micro_batch, plan.global_batch);
  s += fmt::format("system         {}{}{}{}{}{}{}{}\n", e.system.preset,
                   e.system.parallel_block ? " +parallel-block" : "",
                   e.system.sliding_window ? fmt::format(" +window-{}", e.system.attention_window)
                                           : std::string(),
                   e.system.tp_overlap ? " +tp-overlap" : "", e.system.pp_overlap ? " +pp-overlap" : "",
                   e.system.dp_overlap ? " +dp-overlap" : "",
                   e.system.efficient_operators ? " +fused-attention" : "",
                   e.system.lamb ? " +lamb" : "");
  s += "\nstep\n";
  s += fmt::format("  step time            {:.3f} s\n", p.step_time.to_seconds());
  s += fmt::format("  tokens/s             {:.0f}\n", p.tokens_per_s);
  s += fmt::format("  MFU / HFU            {:.1f} % / {:.1f} %\n", 100 * p.mfu, 100 * p.hfu);
  s += fmt::format("  TFLOP/s per GPU      {:.1f} model, {:.1f} hardware\n",
                   p.tflops_per_gpu_model, p.tflops_per_gpu_hw);
  if (e.scenario.run.tokens) {
    s += fmt::format("  days for {:.3g} tokens  {:.2f} (failure-free)\n", *e.scenario.run.tokens,
                     *e.scenario.run.tokens / p.tokens_per_s / 86400.0);
  }
  s += fmt::format("\nbreakdown of stage {} (s)\n", p.critical_stage);
  const double st = p.step_time.to_seconds();
  for (auto [name, t] : {std::pair{"compute", b.compute}, {"tp exposed", b.tp_exposed},
                         {"pp exposed", b.pp_exposed}, {"dp exposed", b.dp_exposed},
                         {"bubble", b.bubble}, {"optimizer", b.optimizer}, {"other", b.other}}) {
    s += fmt::format("  {:<20} {:8.3f}  {:5.1f} %\n", name, t.to_seconds(),
                     100.0 * t.to_seconds() / st);
  }
  s += "\nmemory per GPU (GiB)\n  stage  weights  grads  optim  activ  other  total\n";
  for (const auto& m : p.memory) {
    const auto g = [](Bytes x) { return x.value() / kGiB.value(); };
    s += fmt::format("  {:>5}  {:7.1f}  {:5.1f}  {:5.1f}  {:5.1f}  {:5.1f}  {:5.1f}\n", m.stage,
                     g(m.weights), g(m.gradients), g(m.optimizer_states), g(m.activations),
                     g(m.embedding_logits + m.workspace), g(m.total()));
  }
  s += fmt::format("\ncosts from {} kernel models ({:.0f} % of compute time and {:.0f} % of "
                   "collective time from measurements; {} profile); simulated {} ({} ranks, {} "
                   "events)\n",
                   p.cost_source, 100 * p.measured_share, 100 * p.comm_measured_share,
                   e.device_kind, p.full ? "every rank" : "folded", p.ranks_simulated, p.events);
  if (e.run) s += "\n" + run::to_text(*e.run, *e.profile, *e.power, *e.reliability);
  return s;
}

}  // namespace megasim::cli
