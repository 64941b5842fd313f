// The default scenario (MegaScale 175B on 12,288 A100s): one step predicted folded (one rank
// per pipeline stage) and with every rank, files loaded once outside the timing. What is timed
// is op generation, pricing and execution, with PP and DP traffic as coflows on the step's
// shared network (the default); the *Priced benchmarks price that traffic beforehand instead
// (collective flow simulations, each alone), as every step was before the shared network.
#include <benchmark/benchmark.h>

#include <string>

#include "hw/kernel_cost_model.h"
#include "io/inputs.h"
#include "io/scenario.h"
#include "net/topology.h"
#include "plan/assembly.h"
#include "step/step_model.h"

namespace {

using namespace megasim;

struct Setup {
  io::Inputs inputs = io::load_inputs(
      io::load_scenario(MEGASIM_SOURCE_DIR "/scenarios/megascale-175b-12288.json"));
  net::Topology topology{inputs.cluster};
  hw::KernelCostModel kernels{inputs.device};
};

void run(benchmark::State& state, bool full,
         step::StepRequest::Network network = step::StepRequest::Network::kShared) {
  Setup s;
  std::uint64_t events = 0, solves = 0;
  for (auto _ : state) {
    step::StepRequest request = plan::assemble_step(s.inputs, s.topology, {full, false});
    request.network = network;
    const auto p = step::predict_step(request, s.topology, s.kernels, s.inputs.collective);
    events = p.events;
    solves = p.network_solves;
    benchmark::DoNotOptimize(p.step_time);
  }
  state.counters["executor_events"] = static_cast<double>(events);
  state.counters["network_solves"] = static_cast<double>(solves);
}

void BM_DefaultScenarioFolded(benchmark::State& state) { run(state, false); }
void BM_DefaultScenarioFull(benchmark::State& state) { run(state, true); }
void BM_DefaultScenarioFoldedPriced(benchmark::State& state) {
  run(state, false, step::StepRequest::Network::kPriced);
}
void BM_DefaultScenarioFullPriced(benchmark::State& state) {
  run(state, true, step::StepRequest::Network::kPriced);
}
BENCHMARK(BM_DefaultScenarioFolded)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DefaultScenarioFull)->Unit(benchmark::kMillisecond)->Iterations(2);
BENCHMARK(BM_DefaultScenarioFoldedPriced)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DefaultScenarioFullPriced)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
