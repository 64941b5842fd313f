// `megasim search` on the default scenario (MegaScale 175B on 12,288 A100s), stage by stage,
// files loaded once outside the timing. items_per_second is plans per second on one core:
//   Enumerate        the whole space walked and pruned (every plan of the space an item)
//   AnalyticCold     every feasible plan estimated by a new estimator (its price caches empty,
//                    as in one search)
//   AnalyticWarm     the same plans again on an estimator whose caches are full
//   EventLevel       the analytic top 10, each simulated event by event (folded, shared network)
#include <benchmark/benchmark.h>

#include <algorithm>

#include "hw/kernel_cost_model.h"
#include "io/inputs.h"
#include "io/scenario.h"
#include "net/topology.h"
#include "plan/assembly.h"
#include "plan/estimate.h"
#include "plan/plan_space.h"
#include "step/step_model.h"

namespace {

using namespace megasim;

struct Setup {
  io::Inputs inputs = [] {
    io::InputOptions o;
    o.run_level = false;
    return io::load_inputs(
        io::load_scenario(MEGASIM_SOURCE_DIR "/scenarios/megascale-175b-12288.json"), o);
  }();
  net::Topology topology{inputs.cluster};
  hw::KernelCostModel kernels{inputs.device};
  plan::Space space = plan::enumerate_space(inputs, {});
};

void BM_Enumerate(benchmark::State& state) {
  Setup s;
  std::int64_t plans = 0;
  for (auto _ : state) {
    const plan::Space space = plan::enumerate_space(s.inputs, {});
    plans += space.size;
    benchmark::DoNotOptimize(space.feasible.size());
  }
  state.SetItemsProcessed(plans);
  state.counters["space"] = static_cast<double>(s.space.size);
  state.counters["feasible"] = static_cast<double>(s.space.feasible.size());
}

void BM_AnalyticCold(benchmark::State& state) {
  Setup s;
  std::int64_t plans = 0;
  for (auto _ : state) {
    plan::AnalyticEstimator estimator(s.inputs, s.topology, s.kernels);
    for (const auto& c : s.space.feasible)
      benchmark::DoNotOptimize(estimator.estimate(c).step_time);
    plans += static_cast<std::int64_t>(s.space.feasible.size());
  }
  state.SetItemsProcessed(plans);
}

void BM_AnalyticWarm(benchmark::State& state) {
  Setup s;
  plan::AnalyticEstimator estimator(s.inputs, s.topology, s.kernels);
  for (const auto& c : s.space.feasible) estimator.estimate(c);
  std::int64_t plans = 0;
  for (auto _ : state) {
    for (const auto& c : s.space.feasible)
      benchmark::DoNotOptimize(estimator.estimate(c).step_time);
    plans += static_cast<std::int64_t>(s.space.feasible.size());
  }
  state.SetItemsProcessed(plans);
}

void BM_EventLevel(benchmark::State& state) {
  Setup s;
  plan::AnalyticEstimator estimator(s.inputs, s.topology, s.kernels);
  std::vector<std::pair<double, const plan::Candidate*>> by_estimate;
  for (const auto& c : s.space.feasible) {
    by_estimate.emplace_back(estimator.estimate(c).step_time.to_seconds(), &c);
  }
  std::sort(by_estimate.begin(), by_estimate.end());
  by_estimate.resize(10);
  std::int64_t plans = 0;
  for (auto _ : state) {
    for (const auto& [t, c] : by_estimate) {
      io::Inputs in = s.inputs;
      in.scenario.plan = c->plan;
      in.system = c->system;
      const step::StepRequest request = plan::assemble_step(in, s.topology);
      benchmark::DoNotOptimize(
          step::predict_step(request, s.topology, s.kernels, in.collective).step_time);
    }
    plans += static_cast<std::int64_t>(by_estimate.size());
  }
  state.SetItemsProcessed(plans);
}

BENCHMARK(BM_Enumerate)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AnalyticCold)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AnalyticWarm)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_EventLevel)->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
