#include "plan/assembly.h"

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "engine/error.h"
#include "io/scenario.h"
#include "workload/memory.h"
#include "workload/rank_index.h"

namespace megasim::plan {
namespace {

// How much more a GPU the published run shows megasim's memory model overstates, on its own
// device: the scenario file as written (before any --set or --vary), when it says its run
// happened (validation.allow_oom), needs this much more than that device has; else zero.
Bytes published_excess(const io::Inputs& in) {
  const io::Scenario file = io::load_scenario(in.scenario.file, {});
  if (!file.validation || !file.validation->allow_oom) return Bytes();
  io::InputOptions options;
  options.run_level = false;
  const io::Inputs base = io::load_inputs(file, options);
  const step::AssembledWorkload w =
      step::assemble_workload(base.model, base.scenario.plan, base.system);
  Bytes peak;
  for (const auto& m : w.memory) peak = std::max(peak, m.required());
  return std::max(Bytes(), peak - base.device.memory);
}

}  // namespace

Bytes memory_allowance(const io::Inputs& in) {
  // The key turned off with --set is off; turned on with --set it is not the file's statement.
  const bool on = in.scenario.validation && in.scenario.validation->allow_oom;
  return on ? published_excess(in) : Bytes();
}

namespace {

// The plan's keys that would lower its memory from where it stands: a recomputation short of
// full, a micro-batch above 1, more TP or PP, sequence parallelism where TP has none, a schedule
// holding more micro-batches than 1F1B's (GPipe's every one, so its batch too; zero-bubble's
// deferred weight gradients), the optimizer's states, then its gradients and parameters sharded
// over DP where there are replicas (the distributed optimizer's switch is ZeRO-3's own there), a
// ZeRO-3 shard group wider, FP8 weights kept alone, and context parallelism where the attention
// is fused.
std::vector<std::string> keys_lowering_memory(const io::Inputs& in) {
  const workload::ParallelPlan& p = in.scenario.plan;
  std::vector<std::string> keys;
  if (p.recompute != workload::Recompute::kFull) keys.emplace_back("plan.recompute");
  if (p.micro_batch > 1) keys.emplace_back("plan.micro_batch");
  keys.emplace_back("plan.tp");
  keys.emplace_back("plan.pp");
  if (p.tp > 1 && !p.sequence_parallel) keys.emplace_back("plan.sequence_parallel");
  if (p.schedule == workload::Schedule::kGpipe || p.schedule == workload::Schedule::kZeroBubble)
    keys.emplace_back("plan.schedule");
  if (p.schedule == workload::Schedule::kGpipe) keys.emplace_back("plan.global_batch");
  if (p.dp * p.cp > 1) {
    if (!p.distributed_optimizer && !p.zero3) keys.emplace_back("plan.distributed_optimizer");
    if (!p.zero2 && !p.zero3) keys.emplace_back("plan.zero2");
    if (!p.zero3) keys.emplace_back("plan.zero3");
    if (p.zero3 && p.shard_group > 0 && p.shard_group < p.dp) keys.emplace_back("plan.shard_group");
  }
  if (p.fp8 && !p.fp8_params) keys.emplace_back("plan.fp8_params");
  if (in.system.attention_kernel() != step::AttentionKernel::kUnfused) keys.emplace_back("plan.cp");
  return keys;
}

}  // namespace

step::AssembledWorkload assemble_workload(const io::Inputs& in, const WorkloadOptions& o) {
  step::SystemOptions system = in.system;
  if (o.attention) {
    system.attention = *o.attention;
    system.efficient_operators = false;
  }
  step::AssembledWorkload w = step::assemble_workload(in.model, in.scenario.plan, system);
  if (o.allow_oom) return w;
  const Bytes capacity = in.device.memory;
  Bytes peak;
  for (const auto& m : w.memory) peak = std::max(peak, m.required());
  if (peak <= capacity) return w;
  // A validation row whose published run ran a plan over megasim's memory model
  // (validation.allow_oom in the file as written): a plan, the published one or a variant such
  // as another rank order, runs when it is over its device by no more than the published plan
  // was over the published device; any other is refused as on any device.
  const Bytes excess = memory_allowance(in);
  for (const auto& m : w.memory) {
    if (m.required() <= capacity + excess) continue;
    try {
      workload::check_fits(m, capacity);
    } catch (const OutOfMemoryError& e) {
      std::string why = in.scenario.file.string() + ": " + e.what();
      if (excess > Bytes()) {
        why += fmt::format(
            "; validation.allow_oom runs a plan over the device by at most the {:.1f} GiB the "
            "published one is, not more",
            excess.value() / kGiB.value());
      }
      // No one key is at fault: say which keys lower it from where the plan is (until
      // 2026-12-06 a fixed list, which named switches already on and left out ZeRO-3 and CP).
      why += fmt::format(
          "; the keys that lower it: {} (`megasim inspect --allow-oom` shows every "
          "stage)",
          fmt::join(keys_lowering_memory(in), ", "));
      throw OutOfMemoryError(why);
    }
  }
  return w;
}

std::vector<int> job_placement(const std::string& placement, const net::Topology& topology,
                               const workload::ParallelPlan& p) {
  const int gpus = static_cast<int>(p.gpus());
  const std::vector<int> places =
      placement == "spread" ? topology.spread_placement(gpus) : topology.pack_placement(gpus);
  // Rank r of the job (workload::RankIndex) on the place its rank order gives it.
  const workload::RankIndex ranks(p);
  std::vector<int> by_rank(places.size());
  for (int stage = 0; stage < p.pp; ++stage) {
    for (int d = 0; d < p.dp_cp(); ++d) {
      for (int t = 0; t < p.tp; ++t) {
        const auto slot = static_cast<std::size_t>(workload::placement_slot(p, stage, d, t));
        by_rank[static_cast<std::size_t>(ranks.linear(stage, d, t))] = places[slot];
      }
    }
  }
  return by_rank;
}

step::StepRequest assemble_step(const io::Inputs& in, const net::Topology& topology,
                                const StepOptions& o) {
  const io::Scenario& s = in.scenario;
  step::StepRequest r;
  r.workload = assemble_workload(in);
  r.system = in.system;
  r.placement = job_placement(s.placement, topology, r.workload.plan);
  r.full = o.full;
  r.trace = o.trace;
  r.network = o.network;
  r.stragglers = {s.stragglers.host_fraction, s.stragglers.slowdown, s.stragglers.all_passes,
                  s.stragglers.seed};
  r.data_per_sample = Time::from_ms(s.data_loading.host_ms_per_sample);
  return r;
}

}  // namespace megasim::plan
