#include "reports/inspect_report.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "reports/plan_json.h"
#include "reports/json_text.h"

namespace megasim::reports {
namespace {

using nlohmann::json;

// A parameter count as a reader writes it: billions for a model, millions for a small one (a
// 1-layer test model read "0.00 B").
std::string parameters_text(std::int64_t n, int digits) {
  const auto v = static_cast<double>(n);
  if (v >= 1e9) return fmt::format("{:.{}f} B", v / 1e9, digits);
  if (v >= 1e6) return fmt::format("{:.{}f} M", v / 1e6, digits);
  return fmt::format("{}", n);
}

const char* plural(std::int64_t n) {
  return n == 1 ? "" : "s";
}

json table_json(const plan::OpTable& t) {
  json j = json::object();
  for (const auto& [kind, k] : t) {
    j[kind] = {{"count", k.count},
               {"model_flops", k.model.value()},
               {"hardware_flops", k.hardware.value()},
               {"bytes", k.bytes.value()}};
  }
  return j;
}

json memory_json(const workload::MemoryEstimate& e) {
  return {{"weights_bytes", e.weights.value()},
          {"gradients_bytes", e.gradients.value()},
          {"optimizer_states_bytes", e.optimizer_states.value()},
          {"activations_bytes", e.activations.value()},
          {"activations_per_micro_batch_bytes", e.activations_per_micro_batch.value()},
          {"micro_batches_in_flight", e.micro_batches_in_flight},
          {"pending_weight_grads", e.pending_weight_grads},
          {"pending_weight_grad_bytes", e.pending_weight_grad_bytes.value()},
          {"embedding_logits_bytes", e.embedding_logits.value()},
          {"main_gradient_at_step_bytes", e.main_gradient_at_step.value()},
          {"workspace_bytes", e.workspace.value()},
          {"fragmentation_margin_bytes", e.fragmentation.value()},
          {"total_bytes", e.total().value()}};
}

json model_json(const plan::Inspection& i) {
  const auto& m = i.inputs.model;
  return {{"name", m.name},
          {"file", i.inputs.scenario.model_file.string()},
          {"parameters", workload::total_parameters(i.executed)},
          {"layers", m.layers},
          {"hidden", m.hidden},
          {"heads", m.heads},
          {"kv_heads", m.kv_heads},
          {"ffn_hidden", m.ffn_hidden},
          {"vocab", m.vocab},
          {"seq", m.seq}};
}

std::string stage_text(const plan::StageInspection& st, Bytes capacity) {
  std::string t =
      fmt::format("stage {:>3}  {:>3} layer{:<1}  {:>9} params/rank\n", st.stage, st.layers,
                  plural(st.layers), parameters_text(st.parameters_per_rank, 3));
  for (const auto& [kind, k] : st.per_micro_batch) {
    t += fmt::format(
        "  micro-batch {:<9} {:>6} ops  {:>10.4g} model FLOP  {:>10.4g} hw "
        "FLOP  {:>10.4g} bytes\n",
        kind, k.count, k.model.value(), k.hardware.value(), k.bytes.value());
  }
  for (const auto& [kind, k] : st.per_step) {
    t += fmt::format("  per step    {:<9} {:>6} ops  {:>43.4g} bytes\n", kind, k.count,
                     k.bytes.value());
  }
  const auto& e = st.memory;
  t += fmt::format(
      "  memory GiB  weights {:.1f}  grads {:.1f}  optimizer {:.1f}  activations {:.1f} "
      "({:.2f} micro-batches in flight{})  emb/logits {:.1f}  workspace {:.1f}  total {:.2f} / "
      "{:.2f}{}\n",
      e.weights / kGiB, e.gradients / kGiB, e.optimizer_states / kGiB, e.activations / kGiB,
      e.micro_batches_in_flight,
      e.pending_weight_grads > 0
          ? fmt::format(", {:.0f} deferred W passes {:.1f}", e.pending_weight_grads,
                        e.pending_weight_grad_bytes / kGiB)
          : "",
      e.embedding_logits / kGiB, e.workspace / kGiB, e.total() / kGiB, capacity / kGiB,
      st.fit == workload::Fit::kTight
          ? fmt::format(" (tight: {:.1f} without the fragmentation margin)", e.required() / kGiB)
      : st.fit == workload::Fit::kDoesNotFit
          ? fmt::format(" (over the device: {:.1f} without the fragmentation margin)",
                        e.required() / kGiB)
          : "");
  if (e.main_gradient_at_step > Bytes(0.0)) {
    t += fmt::format(
        "  memory GiB  the optimizer step's fp32 gradient {:.1f}, made after the passes' "
        "activations are freed (the total is the larger peak)\n",
        e.main_gradient_at_step / kGiB);
  }
  return t;
}

}  // namespace

std::string inspect_json(const plan::Inspection& i) {
  json stages = json::array();
  for (const auto& st : i.stages) {
    stages.push_back({{"stage", st.stage},
                      {"layers", st.layers},
                      {"parameters_per_rank", st.parameters_per_rank},
                      {"pp_send_bytes", st.pp_send_bytes.value()},
                      {"ops_per_micro_batch", table_json(st.per_micro_batch)},
                      {"ops_per_step", table_json(st.per_step)},
                      {"memory", memory_json(st.memory)},
                      {"fits", st.fit != workload::Fit::kDoesNotFit},
                      {"over_device", st.fit == workload::Fit::kDoesNotFit},
                      {"tight", st.fit == workload::Fit::kTight}});
  }
  const auto& f = i.flops;
  const json out = {{"scenario", i.inputs.scenario.name},
                    {"model", model_json(i)},
                    {"plan", plan_json(i.inputs.scenario.plan)},
                    {"fused_attention", i.fused_attention},
                    {"model_flops_per_token", f.model.value()},
                    {"hardware_flops_per_token", f.hardware.value()},
                    {"hardware_flops_per_token_published", f.hardware_published.value()},
                    {"useful_flops_per_token", f.useful.value()},
                    {"device_memory_bytes", i.capacity.value()},
                    {"stages", stages}};
  return json_text(out);
}

std::string inspect_text(const plan::Inspection& i) {
  const auto& m = i.inputs.model;
  const auto& p = i.inputs.scenario.plan;
  const auto& f = i.flops;
  std::string out;
  out += fmt::format("scenario     {}\n", i.inputs.scenario.name);
  out += fmt::format(
      "model        {}: {} parameters, {} layer{}, hidden {}, heads {} (kv {}), "
      "ffn {}, {} {}, vocab {}, seq {}\n",
      m.name, parameters_text(workload::total_parameters(i.executed), 2), m.layers,
      plural(m.layers), m.hidden, m.heads, m.kv_heads, m.ffn_hidden,
      workload::to_string(m.activation), workload::to_string(m.norm), m.vocab, m.seq);
  out += fmt::format(
      "plan         TP {} × CP {} × PP {} (VPP {}) × DP {} = {} GPU{}, micro-batch {}, "
      "{} micro-batch{}, recompute {}, SP {}{}, ranks {}\n",
      p.tp, p.cp, p.pp, p.vpp, p.dp, p.gpus(), p.gpus() == 1 ? "" : "s", p.micro_batch,
      p.micro_batches(), p.micro_batches() == 1 ? "" : "es", workload::to_string(p.recompute),
      p.sequence_parallel ? "on" : "off", p.fp8 ? ", FP8 GEMMs" : "",
      workload::to_string(p.rank_order));
  out += fmt::format(
      "FLOPs/token  model {:.5g} (the MFU's)  hardware {:.5g} "
      "(recompute {})  useful {:.5g} (what fused causal attention computes)\n\n",
      f.model.value(), f.hardware.value(), workload::to_string(p.recompute), f.useful.value());
  for (const auto& st : i.stages) out += stage_text(st, i.capacity);
  return out;
}

}  // namespace megasim::reports
