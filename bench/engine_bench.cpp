// The classic hold model (Vaucher and Duval, 1975): N events pending; each event, when run,
// schedules one successor at now + an exponential delay, so the queue size stays at N. The
// rate of events run is the engine's throughput at that queue size.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "engine/simulator.h"

namespace {

using megasim::Simulator;
using megasim::Time;

struct HoldModel {
  explicit HoldModel(std::size_t pending, std::uint64_t seed) : sim(seed) {
    delays.reserve(1 << 16);
    for (int i = 0; i < (1 << 16); ++i) {
      delays.push_back(Time::from_ns(1 + static_cast<std::int64_t>(sim.rng().exponential(1e6))));
    }
    for (std::size_t i = 0; i < pending; ++i) sim.at(delays[i & 0xffff], [this] { hold(); });
  }
  void hold() { sim.after(delays[next++ & 0xffff], [this] { hold(); }); }
  Simulator sim;
  std::vector<Time> delays;  // precomputed so the benchmark measures the engine, not the RNG
  std::uint64_t next = 0;
};

void BM_HoldModel(benchmark::State& state) {
  HoldModel model(static_cast<std::size_t>(state.range(0)), 42);
  const std::uint64_t batch = 1 << 20;
  for (auto _ : state) {
    const std::uint64_t target = model.sim.events_run() + batch;
    while (model.sim.events_run() < target) {
      model.sim.run_until(model.sim.now() + Time::from_ms(1));
    }
  }
  state.counters["events_per_s"] =
      benchmark::Counter(static_cast<double>(model.sim.events_run()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_HoldModel)->Arg(1 << 10)->Arg(1 << 20)->Unit(benchmark::kMillisecond);

void BM_ScheduleCancel(benchmark::State& state) {
  Simulator sim(1);
  std::vector<megasim::EventId> ids(1 << 16);
  std::uint64_t i = 0;
  for (auto& id : ids) id = sim.at(Time::from_ns(static_cast<std::int64_t>(++i)), [] {});
  for (auto _ : state) {
    auto& id = ids[i & 0xffff];
    sim.cancel(id);
    id = sim.at(Time::from_ns(static_cast<std::int64_t>(++i)), [] {});
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ScheduleCancel);

}  // namespace

BENCHMARK_MAIN();
