#include "reports/simulate_report.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "reports/json_text.h"
#include "reports/number_text.h"
#include "reports/plan_json.h"
#include "reports/run_report.h"
#include "reports/timeline_json.h"
#include "step/step_model.h"
#include "workload/program.h"

namespace megasim::reports {
namespace {

using nlohmann::json;

double seconds(Time t) { return t.to_seconds(); }
double gib(Bytes b) { return b.value() / kGiB.value(); }

// A tight stage fits only without the fragmentation margin (workload::fit).
bool tight(const workload::MemoryEstimate& m, Bytes capacity) {
  return workload::fit(m, capacity) == workload::Fit::kTight;
}

json memory_json(const std::vector<workload::MemoryEstimate>& stages, Bytes capacity) {
  json memory = json::array();
  for (const auto& m : stages) {
    memory.push_back({{"stage", m.stage},
                      {"weights_gib", gib(m.weights)},
                      {"gradients_gib", gib(m.gradients)},
                      {"optimizer_states_gib", gib(m.optimizer_states)},
                      {"activations_gib", gib(m.activations)},
                      {"embedding_logits_gib", gib(m.embedding_logits)},
                      {"main_gradient_at_step_gib", gib(m.main_gradient_at_step)},
                      {"workspace_gib", gib(m.workspace)},
                      {"fragmentation_margin_gib", gib(m.fragmentation)},
                      {"total_gib", gib(m.total())},
                      {"tight", tight(m, capacity)},
                      {"over_device", workload::fit(m, capacity) == workload::Fit::kDoesNotFit}});
  }
  return memory;
}

// The text report's "system" line: the preset and the switches that run, the window's size.
std::string system_line(const step::SystemOptions& sys) {
  std::string s = sys.preset;
  for (const step::Switch& sw : step::kSwitches) {
    if (!(sys.*sw.field) || *sw.tag == '\0') continue;
    s += sw.field == &step::SystemOptions::sliding_window
             ? fmt::format(" {}-{}", sw.tag, sys.attention_window)
             : fmt::format(" {}", sw.tag);
  }
  // The keys a scenario may set besides the switches, where they change what runs.
  if (sys.dp_overlap && sys.dp_bucket_overlap) s += " +dp-buckets";
  if (!sys.tp_overlap && sys.backward_tp_overlap) s += " +backward-tp-overlap";
  if (sys.grad_accumulation_pass) s += " +grad-accumulation-pass";
  return s;
}

// How a stage's output crosses to the next, as priced (workload/pipe_engine_ops.h).
std::string pp_transfer(const step::SystemOptions& sys, const workload::ParallelPlan& plan) {
  if (plan.pp == 1) return "none";
  const workload::PpTransfer kind = workload::pp_transfer(plan, sys.scatter_gather_transfers,
                                                          sys.pipe_engine.partitioned_transfers);
  const bool copied = kind == workload::PpTransfer::kScatterGather && sys.scatter_gather_list_copy;
  return std::string(workload::to_string(kind)) + (copied ? " through a list (copied)" : "");
}

json system_json(const step::SystemOptions& sys, const workload::ParallelPlan& plan) {
  // The attention kernel that runs (FlashAttention-2 with efficient_operators), whether
  // context parallelism's exchanges overlap it, whether the DP overlap goes bucket by bucket and
  // whether the backward pass's TP collectives overlap: the keys a scenario sets besides the
  // switches.
  json j = {
      {"preset", sys.preset},
      {"line", system_line(sys)},
      {"attention_window", sys.attention_window},
      {"attention", step::to_string(sys.attention_kernel())},
      {"context_parallel_overlap", sys.cp_overlap},
      // What is priced: buckets split only an overlapped reduction (as the text's tag).
      {"dp_bucket_overlap", sys.dp_overlap && sys.dp_bucket_overlap},
      // What is priced (2026-12-07; the raw key read false where tp_overlap overlapped
      // the backward's collectives all the same).
      {"backward_tp_overlap", sys.tp_overlap || sys.backward_tp_overlap},
      {"grad_accumulation_pass", sys.grad_accumulation_pass},
      {"pp_transfer", pp_transfer(sys, plan)},
      {"fp32_main_gradient", step::main_gradient_name(sys.main_gradient_at_step)},
      // Whether DeepSpeed's BF16_Optimizer runs (the preset's engine takes it; the plan
      // runs it in bf16 outside ZeRO-2 and 3): not reported until 2026-12-06.
      {"bf16_optimizer", workload::bf16_optimizer_applies(sys.pipe_engine.bf16_optimizer, plan)}};
  for (const step::Switch& sw : step::kSwitches) j[sw.key] = sys.*sw.field;
  return j;
}

std::string device_kind(const plan::Evaluation& e) { return hw::to_string(e.inputs.device.kind); }

// Every row of the basis off the same way: the band does not hold the prediction itself. Empty
// when the band spans it. The text and the JSON (which the HTML page prints) carry these words.
std::string one_sided(const plan::Band& band) {
  if (band.high < 0) {
    return "megasim was fast on every one, so all of the band is slower than its prediction";
  }
  if (band.low > 0) {
    return "megasim was slow on every one, so all of the band is faster than its prediction";
  }
  return "";
}

}  // namespace

namespace {

// The scenario's slow hosts as the step runs them: how many of the job's hosts the share
// rounds to (no output said so until 2026-12-06, so the rounding could not be checked).
struct SlowHosts {
  std::int64_t slowed = 0, hosts = 0;
};

SlowHosts slow_hosts(const io::Inputs& in) {
  const io::StragglerSettings& st = in.scenario.stragglers;
  const std::int64_t hosts = step::job_hosts(in.scenario.plan.gpus(), in.cluster.node.gpus);
  return {step::slowed_hosts(st.host_fraction, st.slowdown, hosts), hosts};
}

json stragglers_json(const io::Inputs& in) {
  const SlowHosts h = slow_hosts(in);
  if (h.slowed == 0) return nullptr;
  const io::StragglerSettings& st = in.scenario.stragglers;
  return {{"hosts_slowed", h.slowed},
          {"hosts", h.hosts},
          {"slowdown", st.slowdown},
          {"passes", st.all_passes ? "all" : "forward"},
          {"seed", st.seed}};
}

}  // namespace

std::string simulate_json(const plan::Evaluation& e) {
  const auto& p = e.step;
  const double device_gib = gib(e.inputs.device.memory);
  const auto& in = e.inputs;
  json out = {
      {"scenario", in.scenario.name},
      {"model", in.model.name},
      {"cluster", in.cluster.name},
      {"device", {{"name", in.device.name}, {"kind", device_kind(e)}, {"memory_gib", device_gib}}},
      {"plan", plan_json(in.scenario.plan)},
      {"system", system_json(in.system, in.scenario.plan)},
      {"stragglers", stragglers_json(in)},
      {"step_time_s", seconds(p.step_time)},
      {"tokens_per_s", p.tokens_per_s},
      {"mfu", p.mfu},
      {"hfu", p.hfu},
      {"hfu_published", p.hfu_published},
      {"tflops_per_gpu_model", p.tflops_per_gpu_model},
      {"tflops_per_gpu_hw", p.tflops_per_gpu_hw},
      {"model_flops_per_token", p.model_flops_per_token},
      {"breakdown_s", breakdown_json(p.breakdown)},
      {"dp_hidden_s", seconds(p.dp_hidden)},
      {"pipe_engine_s", seconds(p.pipe_engine)},
      {"critical_stage", p.critical_stage},
      {"kernel_time_s",
       {{"gemm", seconds(p.kernel_gemm)},
        {"attention", seconds(p.kernel_attention)},
        {"memory_bound", seconds(p.kernel_memory_bound)}}},
      {"memory_per_stage", memory_json(p.memory, e.inputs.device.memory)},
      {"costs",
       {{"source", p.cost_source},
        {"measured_share", p.measured_share},
        {"collective_measured_share", p.comm_measured_share},
        {"device_kind", device_kind(e)}}},
      {"simulation",
       {{"mode", p.full ? "full" : "folded"},
        {"network", step::StepRequest::to_string(p.network)},
        {"ranks_simulated", p.ranks_simulated},
        {"gpus", p.gpus},
        {"events", p.events}}}};
  if (e.band) {
    const double t = seconds(p.step_time);
    out["step_time_interval_s"] = {t / (1 + e.band->high), t / (1 + e.band->low)};
    out["mfu_interval"] = {p.mfu * (1 + e.band->low), p.mfu * (1 + e.band->high)};
    out["interval_basis"] = {{"rule", e.band->rule}, {"scenarios", e.band->basis}};
    if (!e.band->caveats.empty()) out["interval_basis"]["caveats"] = e.band->caveats;
    if (const std::string side = one_sided(*e.band); !side.empty()) {
      out["interval_basis"]["one_sided"] = side;  // the text report's clause, worded once
    }
  } else {
    out["interval_none"] = e.no_band;  // why no band is drawn, as the text says it
  }
  if (in.scenario.run.tokens) {
    out["days_for_tokens"] = *in.scenario.run.tokens / p.tokens_per_s / 86400.0;
  }
  // Only when the step was traced (--trace, --html): the records are kept only then.
  if (!p.trace.empty()) out["timeline_ns"] = timeline_json(p.trace);
  if (e.run) {
    const json r = to_json(*e.run, *e.profile, in.run->power, in.run->reliability);
    for (const auto& [k, v] : r.items()) out[k] = v;
  }
  return json_text(out);
}

namespace {

// What of the plan sets its memory and its recompute, said beside the parallel sizes: only
// --json's plan said ZeRO-3 or full recompute, the reasons for a HFU above the MFU, until
// 2026-12-07 (a consistency trial; the page's plan row still does not).
std::string memory_plan_suffix(const workload::ParallelPlan& plan) {
  std::vector<std::string> parts;
  if (plan.recompute == workload::Recompute::kSelective) parts.emplace_back("selective recompute");
  if (plan.recompute == workload::Recompute::kFull) parts.emplace_back("full recompute");
  if (plan.tp > 1 && plan.sequence_parallel) parts.emplace_back("SP");
  if (plan.zero3) {
    parts.push_back(plan.hybrid_shard() ? fmt::format("ZeRO-3 sharded over {} of DP {}",
                                                      plan.shard_ranks(), plan.dp)
                                        : std::string("ZeRO-3"));
  } else if (plan.zero2) {
    parts.emplace_back("ZeRO-2");
  } else if (plan.distributed_optimizer) {
    parts.emplace_back("distributed optimizer");
  }
  std::string out;
  for (const std::string& part : parts) out += (out.empty() ? "; " : ", ") + part;
  return out;
}

std::string header_text(const plan::Evaluation& e) {
  const auto& in = e.inputs;
  const auto& plan = in.scenario.plan;
  std::string s;
  s += fmt::format("scenario       {}\n", in.scenario.name);
  s += fmt::format("model          {}   cluster {}   device {} ({})\n", in.model.name,
                   in.cluster.name, in.device.name, device_kind(e));
  const std::string cp = plan.cp > 1 ? fmt::format(" × CP {}", plan.cp) : "";
  s += fmt::format(
      "plan           TP {}{} × PP {} × DP {} = {} GPU{}, VPP {}, {} micro-batch{} of "
      "{}, global batch {}{}{}{}\n",
      plan.tp, cp, plan.pp, plan.dp, plan.gpus(), plan.gpus() == 1 ? "" : "s", plan.vpp,
      plan.micro_batches(), plan.micro_batches() == 1 ? "" : "es", plan.micro_batch,
      plan.global_batch, plan.fp8 ? ", FP8 GEMMs" : "", rank_order_suffix(plan.rank_order),
      memory_plan_suffix(plan));
  s += fmt::format("system         {}\n", system_line(in.system));
  if (const SlowHosts h = slow_hosts(in); h.slowed > 0) {
    const io::StragglerSettings& st = in.scenario.stragglers;
    s += fmt::format(
        "stragglers     {} of the job's {} hosts {}× slower in {} (stragglers.seed {})\n", h.slowed,
        h.hosts, st.slowdown, st.all_passes ? "all passes" : "forward passes", st.seed);
  }
  return s;
}

std::string step_text(const plan::Evaluation& e) {
  const auto& p = e.step;
  const auto& tokens = e.inputs.scenario.run.tokens;
  std::string s = "\nstep\n";
  s += fmt::format("  step time            {} s\n", seconds3(p.step_time.to_seconds()));
  s += fmt::format("  tokens/s             {:.0f}\n", p.tokens_per_s);
  // Of the 16-bit peak under FP8 GEMMs, said where it is read (104 % read as an error; a
  // planner's trial, 2026-12-06).
  s += fmt::format("  MFU / HFU            {} % / {} %{}\n", one_decimal(100 * p.mfu),
                   one_decimal(100 * p.hfu),
                   e.inputs.scenario.plan.fp8 ? " of the 16-bit peak (FP8 GEMMs)" : "");
  if (e.band) {
    const double t = p.step_time.to_seconds();
    std::vector<std::string> notes = e.band->caveats;
    if (const std::string side = one_sided(*e.band); !side.empty()) notes.push_back(side);
    s += fmt::format(
        "  error band           step {}–{} s, MFU {}–{} % ({}: {} "
        "validation rows{}{})\n",
        seconds3(t / (1 + e.band->high)), seconds3(t / (1 + e.band->low)),
        one_decimal(100 * p.mfu * (1 + e.band->low)), one_decimal(100 * p.mfu * (1 + e.band->high)),
        e.band->rule, e.band->basis.size(), notes.empty() ? "" : "; ", fmt::join(notes, "; "));
  } else {
    s += fmt::format("  error band           none: {}\n", e.no_band);
  }
  s += fmt::format("  TFLOP/s per GPU      {} model, {} hardware\n",
                   one_decimal(p.tflops_per_gpu_model), one_decimal(p.tflops_per_gpu_hw));
  if (tokens) {
    // Under a hundredth of a day in minutes or seconds ("0.00" for one token until 2026-12-06).
    const double days = *tokens / p.tokens_per_s / 86400.0;
    s += fmt::format(
        "  days                 {} for {:.3g} token{} (the steps alone, at the tokens/s)\n",
        days >= 0.01 ? fmt::format("{:.2f}", days) : days_text(days), *tokens,
        *tokens == 1.0 ? "" : "s");
  }
  const auto& b = p.breakdown;
  s += fmt::format("\nbreakdown of stage {} (s)\n", p.critical_stage);
  const double st = p.step_time.to_seconds();
  for (auto [name, t] : {std::pair{"compute", b.compute},
                         {"slowest gpu", b.slowest_gpu},
                         {"power cap", b.power_cap},
                         {"tp exposed", b.tp_exposed},
                         {"pp exposed", b.pp_exposed},
                         {"dp exposed", b.dp_exposed},
                         {"bubble", b.bubble},
                         {"optimizer", b.optimizer},
                         {"other", b.other}}) {
    // Each term as the step time is printed: three decimals, or three digits for a step
    // under a hundredth of a second.
    s += fmt::format(
        "  {:<20} {:>8}  {:5.1f} %\n", name,
        st >= 0.01 ? fmt::format("{:.3f}", t.to_seconds()) : fmt::format("{:.3g}", t.to_seconds()),
        100.0 * t.to_seconds() / st);
  }
  if (p.dp_hidden > Time::zero()) {
    s += fmt::format(
        "  ({:.3f} s of ZeRO-3/FSDP collectives, their host work and reduce-buffer work "
        "overlapped: beside compute, or beside each other)\n",
        p.dp_hidden.to_seconds());
  }
  if (p.pipe_engine > Time::zero()) {
    s += fmt::format("  ({:.3f} s of compute and tp exposed is the pipeline engine's own work)\n",
                     p.pipe_engine.to_seconds());
  }
  return s;
}

std::string memory_text(const step::StepPrediction& p, Bytes capacity) {
  std::string s = "\nmemory per GPU (GiB)\n  stage  weights  grads  optim  activ  other  total\n";
  const workload::MemoryEstimate* tightest = nullptr;
  const workload::MemoryEstimate* most_over = nullptr;
  for (const auto& m : p.memory) {
    const workload::Fit fit = workload::fit(m, capacity);
    const bool is_tight = fit == workload::Fit::kTight;
    const bool over = fit == workload::Fit::kDoesNotFit;
    s += fmt::format("  {:>5}  {:7.1f}  {:5.1f}  {:5.1f}  {:5.1f}  {:5.1f}  {:5.1f}{}\n", m.stage,
                     gib(m.weights), gib(m.gradients), gib(m.optimizer_states), gib(m.activations),
                     gib(m.embedding_logits + m.workspace), gib(m.total()),
                     is_tight ? "  tight"
                     : over   ? "  over"
                              : "");
    if (is_tight && (!tightest || m.required() > tightest->required())) tightest = &m;
    if (over && (!most_over || m.required() > most_over->required())) most_over = &m;
  }
  Bytes main_gradient;
  for (const auto& m : p.memory) main_gradient = std::max(main_gradient, m.main_gradient_at_step);
  if (main_gradient > Bytes(0.0)) {
    s += fmt::format(
        "  optim leaves out the fp32 gradient the optimizer step makes from the 16-bit one (up to "
        "{:.1f} GiB a stage), held only once the passes' activations are freed; total is the "
        "larger of the two peaks\n",
        gib(main_gradient));
  }
  if (most_over) {
    // Only a validation row whose published run ran a plan over megasim's memory model gets
    // here (validation.allow_oom), with a plan that needs no more than that one.
    const workload::MemoryEstimate& m = *most_over;
    s += fmt::format(
        "  over: stage {} needs {:.1f} of the device's {:.1f} GiB without the fragmentation "
        "margin; the published run's plan needs as much by this count and ran, so megasim's "
        "memory model overstates it (validation.allow_oom: simulated, not refused)\n",
        m.stage, gib(m.required()), gib(capacity));
  }
  // Both said where both occur, as the page says them (the tight line was dropped beside an
  // over one until 2026-12-07, a consistency trial).
  if (tightest) {
    const workload::MemoryEstimate& m = *tightest;
    const double room = gib(capacity) - gib(m.required());
    const double tensors = gib(m.tensors());
    s += fmt::format(
        "  tight: stage {} needs {:.1f} of the device's {:.1f} GiB, {:.1f} with the {:.0f} % "
        "fragmentation margin; it runs only if the allocator loses under {:.1f} GiB ({:.1f} % "
        "of its tensors)\n",
        m.stage, gib(m.required()), gib(capacity), gib(m.total()),
        100.0 * gib(m.fragmentation) / tensors, room, 100.0 * room / tensors);
  }
  return s;
}

}  // namespace

std::string simulate_text(const plan::Evaluation& e) {
  const auto& p = e.step;
  std::string s = header_text(e) + step_text(e) + memory_text(p, e.inputs.device.memory);
  s += fmt::format(
      "\ncosts from {} kernel models ({:.0f} % of compute time and {:.0f} % of "
      "collective time from measurements; {} profile); simulated {} ({} rank{}, {} "
      "events) on the {} network\n",
      p.cost_source, 100 * p.measured_share, 100 * p.comm_measured_share, device_kind(e),
      p.full ? "every rank" : "folded", p.ranks_simulated, p.ranks_simulated == 1 ? "" : "s",
      p.events, step::StepRequest::to_string(p.network));
  if (e.run) {
    s += '\n';
    s += to_text(*e.run, *e.profile, e.inputs.run->power, e.inputs.run->reliability);
  }
  return s;
}

}  // namespace megasim::reports
