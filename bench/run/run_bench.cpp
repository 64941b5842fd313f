// Run-level simulation speed on MegaScale's 530B production run (12,288 A100, 2e12 tokens,
// checkpoint every 10 min: ~5,600 checkpoints and ~230 failures per trial), and its headline
// figures as counters (days, goodput, restarts, MW) so `bench/run.sh` output records them.
#include <string>

#include <benchmark/benchmark.h>

#include "io/device_profile_loader.h"
#include "io/reliability_loader.h"
#include "io/scenario.h"
#include "run/run_simulation.h"
#include "test_profiles.h"

namespace {

using namespace megasim;

// MegaScale's fabric (topologies/megascale-a100-12288.json): 64×400G switches, each leaf's 32
// downlinks split into 64×200G NIC ports, 1:1. Leaves 12,288/64 = 192; spines take 192×32
// uplinks on 32 down-ports each = 192; cores take 192×32 uplinks on 64 ports = 96. Total 480.
constexpr std::int64_t kMegaScaleSwitches = 192 + 192 + 96;

run::StepProfile production_step() {
  run::StepProfile p = run::testing::megascale_530b(12288);
  p.switches = kMegaScaleSwitches;
  return p;
}

// MegaScale checkpoints every 10 min (the scenario's choice); Megatron-LM's synchronous save
// keeps its preset's 30 min, near its Daly optimum.
void run_production(benchmark::State& state, const char* preset) {
  const run::StepProfile step = production_step();
  run::ReliabilityModel m = io::load_reliability_preset(preset);
  if (std::string(preset) == "megascale") m.checkpoint_interval = Time::from_minutes(10);
  // The GPU's watts are the device profile's, the rest the scenario's power preset (as simulate).
  const std::string root = MEGASIM_SOURCE_DIR;
  const run::PowerInputs power = io::power_for(
      io::load_scenario(root + "/scenarios/megascale-production-530b.json"),
      io::load_device_profile(root + "/calibrate/profiles/a100-sxm4-80gb.json").profile);
  run::RunSpec spec;
  spec.tokens = 2e12;
  spec.trials = static_cast<int>(state.range(0));
  spec.sweep_checkpoint_interval = state.range(1) != 0;
  run::RunResult r;
  for (auto _ : state) {
    r = run::simulate_run(step, spec, m, power);
    benchmark::DoNotOptimize(r.days.mean);
  }
  state.counters["days_p50"] = r.days.p50;
  state.counters["goodput"] = r.goodput.mean;
  state.counters["restarts"] = r.restarts.mean;
  state.counters["best_interval_min"] = r.best_interval.to_seconds() / 60.0;
  state.counters["daly_min"] = r.daly.to_seconds() / 60.0;
  state.counters["it_peak_mw"] = r.power.it_peak.value() * 1e-6;
  state.counters["facility_peak_mw"] = r.power.it_peak.value() * 1e-6 * power.pue;
  state.counters["facility_run_mw"] = r.energy.facility_average.value() * 1e-6;
  state.counters["facility_mwh"] = r.energy.facility_mwh;
}

void BM_ProductionMegaScale(benchmark::State& s) {
  run_production(s, "megascale");
}
void BM_ProductionMegatronLM(benchmark::State& s) {
  run_production(s, "megatron-lm");
}

BENCHMARK(BM_ProductionMegaScale)
    ->Args({1, 0})
    ->Args({100, 0})
    ->Args({20, 1})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ProductionMegatronLM)->Args({100, 0})->Args({20, 1})->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
