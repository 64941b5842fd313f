#include "plan/assembly.h"

#include <algorithm>

#include <fmt/format.h>

#include "engine/error.h"
#include "io/scenario.h"
#include "workload/memory.h"
#include "workload/rank_index.h"

namespace megasim::plan {
namespace {

// The most a GPU of the published plan needs (tensors and reserve, without the fragmentation
// margin): the scenario file as written, before any --set or --vary.
Bytes published_peak(const io::Inputs& in) {
  io::InputOptions options;
  options.run_level = false;
  const io::Inputs base = io::load_inputs(io::load_scenario(in.scenario.file, {}), options);
  const step::AssembledWorkload w =
      step::assemble_workload(base.model, base.scenario.plan, base.system);
  Bytes peak;
  for (const auto& m : w.memory) peak = std::max(peak, m.required());
  return peak;
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
  // A validation row whose published run ran a plan over megasim's memory model
  // (validation.allow_oom): plans that need no more than it, the published one and variants
  // such as another rank order, run; any that needs more is refused as on any device.
  const bool published_ran_it = in.scenario.validation && in.scenario.validation->allow_oom;
  const Bytes published = published_ran_it ? published_peak(in) : Bytes();
  const Bytes allowed = std::max(in.device.memory, published);
  for (const auto& m : w.memory) {
    if (m.required() <= allowed) continue;
    try {
      workload::check_fits(m, in.device.memory);
    } catch (const OutOfMemoryError& e) {
      std::string why = in.scenario.file.string() + ": " + e.what();
      if (published_ran_it) {
        why += fmt::format(
            "; validation.allow_oom runs a plan up to the {:.1f} GiB the published one needs, "
            "not more",
            published.value() / kGiB.value());
      }
      throw OutOfMemoryError(why);
    }
  }
  return w;
}

step::StepRequest assemble_step(const io::Inputs& in, const net::Topology& topology,
                                const StepOptions& o) {
  const io::Scenario& s = in.scenario;
  step::StepRequest r;
  r.workload = assemble_workload(in);
  r.system = in.system;
  const int gpus = static_cast<int>(s.plan.gpus());
  const std::vector<int> places =
      s.placement == "spread" ? topology.spread_placement(gpus) : topology.pack_placement(gpus);
  // Rank r of the job (workload::RankIndex) on the place its rank order gives it.
  const workload::ParallelPlan& p = r.workload.plan;
  const workload::RankIndex ranks(p);
  r.placement.resize(places.size());
  for (int stage = 0; stage < p.pp; ++stage) {
    for (int d = 0; d < p.dp_cp(); ++d) {
      for (int t = 0; t < p.tp; ++t) {
        const auto slot = static_cast<std::size_t>(workload::placement_slot(p, stage, d, t));
        r.placement[static_cast<std::size_t>(ranks.linear(stage, d, t))] = places[slot];
      }
    }
  }
  r.full = o.full;
  r.trace = o.trace;
  r.network = o.network;
  r.stragglers = {s.stragglers.host_fraction, s.stragglers.slowdown, s.stragglers.all_passes,
                  s.stragglers.seed};
  r.data_per_sample = Time::from_ms(s.data_loading.host_ms_per_sample);
  return r;
}

}  // namespace megasim::plan
