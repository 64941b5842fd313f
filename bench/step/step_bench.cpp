// The default scenario (MegaScale 175B on 12,288 A100s): one step predicted folded (one rank
// per pipeline stage) and with every rank, files loaded once outside the timing. What is timed
// is op generation, pricing on the fabric (collective flow simulations) and execution; the
// last benchmark runs PP and DP traffic on the step's shared network instead.
#include <benchmark/benchmark.h>

#include <string>

#include "hw/kernel_cost_model.h"
#include "io/cluster_loader.h"
#include "io/collective_constants_reader.h"
#include "io/device_profile_loader.h"
#include "io/model_loader.h"
#include "io/scenario.h"
#include "io/system_loader.h"
#include "net/topology.h"
#include "step/step_model.h"

namespace {

using namespace megasim;

struct Setup {
  io::Scenario scenario = io::load_scenario(MEGASIM_SOURCE_DIR "/scenarios/megascale-175b-12288.json");
  net::Topology topology{io::load_cluster(scenario.cluster_file)};
  io::LoadedDeviceProfile device = io::load_device_profile(scenario.device_file);
  hw::CollectiveConstants constants = io::read_collective_constants(scenario.device_file);
  hw::KernelCostModel kernels{device.profile};
  step::StepRequest request;
  Setup() {
    request.model = io::load_model(scenario.model_file);
    request.plan = scenario.plan;
    request.system = io::load_system_preset(scenario.optimizations.preset);
    request.system.attention_window = *scenario.optimizations.attention_window;
    request.placement = topology.pack_placement(static_cast<int>(scenario.plan.gpus()));
  }
};

void run(benchmark::State& state, bool full,
         step::StepRequest::Network network = step::StepRequest::Network::kPriced) {
  Setup s;
  s.request.full = full;
  s.request.network = network;
  std::uint64_t events = 0;
  for (auto _ : state) {
    const auto p = step::predict_step(s.request, s.topology, s.kernels, s.constants);
    events = p.events;
    benchmark::DoNotOptimize(p.step_time);
  }
  state.counters["executor_events"] = static_cast<double>(events);
}

void BM_DefaultScenarioFolded(benchmark::State& state) { run(state, false); }
void BM_DefaultScenarioFull(benchmark::State& state) { run(state, true); }
// PP and DP traffic on the step's shared network (executor.h, "The network").
void BM_DefaultScenarioFoldedNetwork(benchmark::State& state) {
  run(state, false, step::StepRequest::Network::kShared);
}
BENCHMARK(BM_DefaultScenarioFolded)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DefaultScenarioFull)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DefaultScenarioFoldedNetwork)->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
