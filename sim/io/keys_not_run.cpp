// The keys a scenario writes that the step does not run as written (io/keys_not_run.h).
#include "io/keys_not_run.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "step/step_model.h"
#include "workload/parallel_plan.h"
#include "workload/program.h"

namespace megasim::io {

namespace {

std::optional<bool> switch_written(const step::SystemOverrides& o, std::string_view key) {
  for (std::size_t i = 0; i < step::kSwitches.size(); ++i) {
    if (key == step::kSwitches[i].key) return o.switches[i];
  }
  return std::nullopt;
}

const char* text(bool b) {
  return b ? "true" : "false";
}

// The keys a system switch overrides or leaves nothing to: the optimizer and attention kernel
// a switch sets, the window's size, the backward's TP overlap, DP overlap's buckets.
void switched_keys_not_run(const Inputs& in, std::vector<KeyNotRun>& keys) {
  const Scenario& s = in.scenario;
  if (s.optimizer_written && s.plan.optimizer != in.written_optimizer) {
    keys.push_back({"plan.optimizer", workload::to_string(in.written_optimizer),
                    fmt::format("runs {}: the system's lamb switch (optimizations.lamb) sets "
                                "the optimizer",
                                workload::to_string(s.plan.optimizer)),
                    true, "optimizations.lamb"});
  }
  const step::SystemOverrides& o = s.optimizations.overrides;
  if (o.attention && *o.attention != in.system.attention_kernel()) {
    keys.push_back({"optimizations.attention", step::to_string(*o.attention),
                    fmt::format("runs {}: optimizations.efficient_operators sets the attention "
                                "kernel",
                                step::to_string(in.system.attention_kernel())),
                    true, "optimizations.efficient_operators"});
  }
  if (o.attention_window && !in.system.sliding_window) {
    keys.push_back({"optimizations.attention_window", std::to_string(*o.attention_window),
                    "optimizations.sliding_window is off, so no window is applied", false,
                    "optimizations.sliding_window"});
  }
  // The backward's own switch counts only without tp_overlap, which overlaps both passes
  // (34.3789 s either way on MegaScale's 256-GPU row, unsaid until 2026-12-06).
  if (o.backward_tp_overlap && in.system.tp_overlap) {
    keys.push_back({"optimizations.backward_tp_overlap", text(*o.backward_tp_overlap),
                    "optimizations.tp_overlap is on, which overlaps the backward pass's TP "
                    "collectives too",
                    false, "optimizations.tp_overlap"});
  }
  // A window of the whole sequence or more leaves every query every key before it: the step of
  // no window (the default scenario at 100,000 tokens: 6.309 s either way, said by nothing
  // until 2026-12-08, though the system line printed the window).
  if (o.attention_window && in.system.sliding_window && *o.attention_window >= in.model.seq) {
    keys.push_back({"optimizations.attention_window", std::to_string(*o.attention_window),
                    fmt::format("a window of {} tokens holds the model's whole sequence of {}, "
                                "so every query sees every key before it",
                                *o.attention_window, in.model.seq),
                    false, "model.seq"});
  }
  // Buckets are how DP overlap hides the gradients' reduction (step::Pricer, the estimate);
  // without it no bucket goes out beside a pass (unsaid on stderr until 2026-12-08).
  if (o.dp_bucket_overlap && !in.system.dp_overlap) {
    keys.push_back({"optimizations.dp_bucket_overlap", text(*o.dp_bucket_overlap),
                    "optimizations.dp_overlap is off, so no gradient bucket overlaps a pass", false,
                    "optimizations.dp_overlap"});
  }
}

// The keys the plan leaves nothing to apply to.
void plan_keys_not_run(const Inputs& in, std::vector<KeyNotRun>& keys) {
  const Scenario& s = in.scenario;
  const step::SystemOverrides& o = s.optimizations.overrides;
  // Another preset's BF16_Optimizer is refused (check_bf16_optimizer); DeepSpeed's engine
  // takes it for bf16 alone, outside ZeRO-2 and 3 (89.265 s either way on BLOOM's fp16
  // scenario, said by nothing until 2026-12-06).
  if (o.bf16_optimizer && *o.bf16_optimizer && s.optimizations.preset == "deepspeed" &&
      !workload::bf16_optimizer_applies(true, s.plan)) {
    keys.push_back({"optimizations.bf16_optimizer", "true",
                    s.plan.precision != workload::Precision::kBf16
                        ? "BF16_Optimizer runs for plan.precision bf16 only"
                        : "ZeRO-2 and ZeRO-3 run their own optimizers, not BF16_Optimizer",
                    false,
                    s.plan.precision != workload::Precision::kBf16 ? "plan.precision"
                    : s.plan.zero3                                 ? "plan.zero3"
                                                                   : "plan.zero2"});
  }
  // The 2021 code's list-form gather copies what a scatter-gather transfer gathers: with no
  // such transfer (no pipeline, TP 1, sequence parallelism, another framework's sends) there is
  // nothing to copy (said by nothing until a review of 2026-12-07).
  const bool scatter_gathered =
      s.plan.pp > 1 && workload::pp_transfer(s.plan, in.system.scatter_gather_transfers,
                                             in.system.pipe_engine.partitioned_transfers) ==
                           workload::PpTransfer::kScatterGather;
  if (o.scatter_gather_list_copy && *o.scatter_gather_list_copy && !scatter_gathered) {
    keys.push_back({"optimizations.scatter_gather_list_copy", "true",
                    "the plan's stages send no scatter-gather transfer to copy", false,
                    s.plan.pp == 1             ? "plan.pp"
                    : s.plan.tp == 1           ? "plan.tp"
                    : s.plan.sequence_parallel ? "plan.sequence_parallel"
                                               : "optimizations.preset"});
  }
  // ZeRO-3 shards the optimizer states over DP itself (it holds stage 1): the switch of stage 1
  // alone prices the same step either way (said by nothing until 2026-12-06, where ZeRO-2
  // without it is refused).
  if (s.plan.zero3) {
    keys.push_back({"plan.distributed_optimizer", text(s.plan.distributed_optimizer),
                    "plan.zero3 shards the optimizer states over DP itself (ZeRO-3 holds "
                    "stage 1)",
                    false, "plan.zero3"});
  }
  // ZeRO-3 / FSDP gathers and reduces each layer inside its passes, overlapped by the preset's
  // prefetch (step/sharded_pass.h), and its step-end reductions (hybrid shard's rest, the tied
  // embedding's) are no bucket of the DP stream's: DP buckets split nothing (20.691 s either
  // way on OPT-175B at DP 16, micro-batch 2). With one chunk a stage the rest starts as the
  // last backward pass ends, with DP overlap or after it: the switch moves nothing either
  // (16.503 s either way at micro-batch 8; hybrid shard and a tied pipeline the same, a
  // review's trials). Both said by nothing until 2026-12-08. With interleaving DP overlap still
  // moves where the DP group meets at the step's end (0.04 % on OPT-175B at PP 4 × VPP 2), so
  // nothing is said there.
  const workload::ParallelPlan& p = s.plan;
  if (o.dp_bucket_overlap && in.system.dp_overlap && p.zero3) {
    keys.push_back({"optimizations.dp_bucket_overlap", text(*o.dp_bucket_overlap),
                    "plan.zero3 reduces each layer's gradients inside its passes, which leaves "
                    "no gradient bucket for the DP stream",
                    false, "plan.zero3"});
  }
  const std::optional<bool> dp_overlap = switch_written(o, "dp_overlap");
  if (dp_overlap && p.zero3 && p.vpp == 1) {
    keys.push_back({"optimizations.dp_overlap", text(*dp_overlap),
                    "plan.zero3 gathers and reduces each layer's parameters inside its passes, "
                    "and with one chunk a stage what is left starts as the last backward pass "
                    "ends either way",
                    false, "plan.zero3"});
  }
}

}  // namespace

// The keys written that the step does not run as written, found by their effect on the
// system it runs, so a file's own value, a --set of the key and a --set of an object holding
// it are one case.
std::vector<KeyNotRun> keys_not_run(const Inputs& in) {
  std::vector<KeyNotRun> keys;
  switched_keys_not_run(in, keys);
  plan_keys_not_run(in, keys);
  return keys;
}

// The stragglers the scenario states that slow no host: a slowdown of 1, no share of hosts, or
// a share of the job's hosts that rounds to none (step::slowed_hosts). Each case is filed under
// every key that, set, would have slowed a host, so that a --set of either is said.
void stragglers_not_run(const Inputs& in, std::vector<KeyNotRun>& keys) {
  const StragglerSettings& st = in.scenario.stragglers;
  const std::int64_t hosts = step::job_hosts(in.scenario.plan.gpus(), in.cluster.node.gpus);
  if (step::slowed_hosts(st.host_fraction, st.slowdown, hosts) > 0) return;
  const std::string fraction = fmt::format("{:g}", st.host_fraction);
  const std::string slowdown = fmt::format("{:g}", st.slowdown);
  if (st.host_fraction > 0.0 && st.slowdown <= 1.0) {
    keys.push_back({"stragglers.host_fraction", fraction,
                    "stragglers.slowdown is 1, so the hosts it picks run at full speed", false,
                    "stragglers.slowdown"});
  } else if (st.slowdown > 1.0 && st.host_fraction <= 0.0) {
    keys.push_back({"stragglers.slowdown", slowdown,
                    "stragglers.host_fraction is 0, so no host is slowed", false,
                    "stragglers.host_fraction"});
  } else if (st.slowdown > 1.0) {
    const std::string why = fmt::format(
        "stragglers.host_fraction {} of the job's {} hosts rounds to none, so no "
        "host is slowed",
        fraction, hosts);
    keys.push_back({"stragglers.host_fraction", fraction, why, false, "stragglers.host_fraction"});
    keys.push_back({"stragglers.slowdown", slowdown, why, false, "stragglers.host_fraction"});
  }
  // The default (all) is said by no one; forward, written, changes nothing here either.
  if (!st.all_passes) {
    keys.push_back(
        {"stragglers.passes", "forward", "no host is slowed", false, "stragglers.host_fraction"});
  }
}

}  // namespace megasim::io
