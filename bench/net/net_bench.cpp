// Network benchmarks: building the 12,288-GPU MegaScale fabric, and the cost of one flow
// arrival plus departure while 100k flows are in flight (inter-node flows, which all meet in
// one fabric-wide component, and NVLink-only flows, whose components are single nodes).
#include <benchmark/benchmark.h>

#include <filesystem>
#include <memory>
#include <vector>

#include "engine/simulator.h"
#include "io/cluster_loader.h"
#include "net/flow_solver.h"
#include "net/topology_graph.h"

namespace {

using namespace megasim;

net::ClusterSpec megascale() {
  return io::load_cluster(std::filesystem::path(MEGASIM_SOURCE_DIR) / "topologies" /
                          "megascale-a100-12288.json");
}

void BM_BuildMegaScaleFabric(benchmark::State& state) {
  const net::ClusterSpec spec = megascale();
  for (auto _ : state) {
    net::Topology t(spec);
    benchmark::DoNotOptimize(t.links().size());
  }
  net::Topology t(spec);
  state.counters["vertices"] = static_cast<double>(boost::num_vertices(t.graph().g));
  state.counters["links"] = static_cast<double>(t.links().size());
}
BENCHMARK(BM_BuildMegaScaleFabric)->Unit(benchmark::kMillisecond);

// state.range(0): 1 = flows between random GPUs of different servers, 0 = flows between GPUs
// of the same server (NVLink only).
void BM_FlowArrivalDeparture100k(benchmark::State& state) {
  const bool inter_node = state.range(0) == 1;
  static const net::ClusterSpec spec = megascale();
  static const net::Topology topology(spec);
  Simulator sim(42);
  net::FlowSolver solver(sim, topology, net::Routing::kEcmp);
  Rng& rng = sim.rng();
  const auto pick = [&](int& src, int& dst) {
    src = static_cast<int>(rng.below(static_cast<std::uint64_t>(topology.gpus())));
    if (inter_node) {
      do dst = static_cast<int>(rng.below(static_cast<std::uint64_t>(topology.gpus())));
      while (topology.node_of(dst) == topology.node_of(src));
    } else {
      do dst = topology.node_of(src) * 8 + static_cast<int>(rng.below(8));
      while (dst == src);
    }
  };
  for (int i = 0; i < 100000; ++i) {
    int s, d;
    pick(s, d);
    solver.start_flow(s, d, Bytes(1e15), [] {}, {-1, static_cast<std::uint64_t>(i)});
  }
  sim.run_until(sim.now());
  const auto solved_before = solver.flows_solved();
  std::int64_t pairs = 0;
  for (auto _ : state) {
    int s, d;
    pick(s, d);
    const auto id = solver.start_flow(s, d, Bytes(1e15), [] {});
    sim.run_until(sim.now());  // arrival: the solve event runs
    solver.cancel_flow(id);
    sim.run_until(sim.now());  // departure
    ++pairs;
  }
  state.counters["flows"] = static_cast<double>(solver.active_flows());
  state.counters["flows_resolved_per_change"] =
      static_cast<double>(solver.flows_solved() - solved_before) / static_cast<double>(2 * pairs);
}
BENCHMARK(BM_FlowArrivalDeparture100k)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
