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

// The highest of the stages' memory needs.
Bytes peak_memory(const step::AssembledWorkload& w) {
  Bytes peak;
  for (const auto& m : w.memory) peak = std::max(peak, m.required());
  return peak;
}

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
  return std::max(Bytes(), peak_memory(w) - base.device.memory);
}

}  // namespace

Bytes memory_allowance(const io::Inputs& in) {
  // The key turned off with --set is off; turned on with --set it is not the file's statement.
  const bool on = in.scenario.validation && in.scenario.validation->allow_oom;
  return on ? published_excess(in) : Bytes();
}

namespace {

// Whether the plan with `change` made is one the inputs' system runs (io::check_plan) and
// needs less memory than `peak` under `system` (the inputs' own, or inspect's with another
// attention kernel, which `peak` was taken under).
template <typename Change>
bool switch_lowers(const io::Inputs& in, const step::SystemOptions& system, Bytes peak,
                   Change change) {
  io::Inputs v = in;
  change(v.scenario.plan);
  try {
    io::check_plan(v);
    return peak_memory(step::assemble_workload(v.model, v.scenario.plan, system)) < peak;
  } catch (const InputError&) {
    return false;
  }
}

// The plan's keys that would lower its memory from where it stands: a recomputation short of
// full, a micro-batch above 1, more TP or PP, a schedule holding more micro-batches than
// 1F1B's (GPipe's every one, so its batch too; zero-bubble's deferred weight gradients), more
// DP where states are sharded over it, context parallelism where the attention is fused, and
// each switch (sequence parallelism, the optimizer's states, gradients and parameters sharded,
// a ZeRO-3 shard group as wide as DP, FP8 weights kept alone) that, turned, gives a plan the
// system runs and needs less. Until 2026-12-06 the switches were named by rule: ZeRO-2 where it
// takes more (pp 1 without DP overlap), ZeRO-2 and 3 where the preset refuses them beside a
// pipeline, and never plan.dp.
std::vector<std::string> keys_lowering_memory(const io::Inputs& in,
                                              const step::SystemOptions& system, Bytes peak) {
  const workload::ParallelPlan& p = in.scenario.plan;
  std::vector<std::string> keys;
  if (p.recompute != workload::Recompute::kFull) keys.emplace_back("plan.recompute");
  if (p.micro_batch > 1) keys.emplace_back("plan.micro_batch");
  keys.emplace_back("plan.tp");
  keys.emplace_back("plan.pp");
  if (p.tp > 1 && !p.sequence_parallel &&
      switch_lowers(in, system, peak,
                    [](workload::ParallelPlan& q) { q.sequence_parallel = true; }))
    keys.emplace_back("plan.sequence_parallel");
  if (p.schedule == workload::Schedule::kGpipe || p.schedule == workload::Schedule::kZeroBubble)
    keys.emplace_back("plan.schedule");
  if (p.schedule == workload::Schedule::kGpipe) keys.emplace_back("plan.global_batch");
  // A hybrid shard's states are sharded over its shard group, not DP.
  if (p.zero3 ? !p.hybrid_shard() : p.distributed_optimizer || p.zero2)
    keys.emplace_back("plan.dp");
  if (p.dp * p.cp > 1) {
    using Turn = void (*)(workload::ParallelPlan&);
    struct Switch {
      const char* key;
      bool on;  // already where it lowers the memory
      Turn turn;
    };
    const Switch switches[] = {
        {"plan.distributed_optimizer", p.distributed_optimizer || p.zero3,
         [](workload::ParallelPlan& q) { q.distributed_optimizer = true; }},
        // ZeRO-2 with the optimizer's states sharded too, as it must be (io::plan_clash).
        {"plan.zero2", p.zero2 || p.zero3,
         [](workload::ParallelPlan& q) { q.zero2 = q.distributed_optimizer = true; }},
        // ZeRO-3 in ZeRO-2's place (the two are one choice: io::plan_clash).
        {"plan.zero3", p.zero3,
         [](workload::ParallelPlan& q) {
           q.zero3 = true;
           q.zero2 = false;
         }},
        {"plan.shard_group", !p.hybrid_shard(),
         [](workload::ParallelPlan& q) { q.shard_group = 0; }},
    };
    for (const Switch& s : switches) {
      if (!s.on && switch_lowers(in, system, peak, s.turn)) keys.emplace_back(s.key);
    }
  }
  if (p.fp8 && !p.fp8_params &&
      switch_lowers(in, system, peak, [](workload::ParallelPlan& q) { q.fp8_params = true; }))
    keys.emplace_back("plan.fp8_params");
  if (system.attention_kernel() != step::AttentionKernel::kUnfused && !p.zero3)
    keys.emplace_back("plan.cp");  // not beside ZeRO-3 (io::plan_clash)
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
  const Bytes peak = peak_memory(w);
  if (peak <= capacity) return w;
  // A validation row whose published run ran a plan over megasim's memory model
  // (validation.allow_oom in the file as written): a plan, the published one or a variant such
  // as another rank order, runs when it is over its device by no more than the published plan
  // was over the published device; any other is refused as on any device.
  const Bytes excess = memory_allowance(in);
  // The stage that needs the most, not the first over the device: stage 0 of the 530B plan at
  // micro-batch 4 read 74.5 GiB on the 40 GB part where stage 34 needs 84.8, more than the
  // 80 GB part holds too (a user's trial, 2026-12-06).
  const auto worst =
      std::max_element(w.memory.begin(), w.memory.end(),
                       [](const auto& a, const auto& b) { return a.required() < b.required(); });
  if (worst != w.memory.end() && worst->required() > capacity + excess) {
    const auto& m = *worst;
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
          fmt::join(keys_lowering_memory(in, system, peak), ", "));
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
