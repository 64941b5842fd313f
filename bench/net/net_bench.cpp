// Network benchmarks: building the 12,288-GPU MegaScale fabric, the cost of one flow
// arrival plus departure while 100k flows are in flight (inter-node flows, which all meet in
// one fabric-wide component, and NVLink-only flows, whose components are single nodes), and
// draining 5,000 flows of many rates with and without the finish window.
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

// The Llama 3 fabric with its ToRs at 4:1 (the uplinks ECMP spreads flows over unevenly).
net::ClusterSpec llama3_tor4() {
  net::ClusterSpec spec = io::load_cluster(std::filesystem::path(MEGASIM_SOURCE_DIR) /
                                           "topologies" / "llama3-h100-24576.json");
  spec.fabric.tor_oversubscription = 4.0;
  return spec;
}

// 5,000 flows of 1 GB between random GPUs of different servers, started together and run to
// the last one's end: on the oversubscribed ToRs ECMP's collisions give them many rates, so
// each departure re-solves the fabric-wide component unless the finish window (state.range(0)
// ppm of a flow's duration, FlowSolver::set_finish_window) lets the flows ending near it go
// with it.
void BM_DrainUneven5k(benchmark::State& state) {
  static const net::ClusterSpec spec = llama3_tor4();
  static const net::Topology topology(spec);
  std::uint64_t solves = 0, early = 0;
  for (auto _ : state) {
    Simulator sim(42);
    net::FlowSolver solver(sim, topology, net::Routing::kEcmp);
    solver.set_finish_window(static_cast<double>(state.range(0)) * 1e-6);
    Rng& rng = sim.rng();
    for (int i = 0; i < 5000; ++i) {
      const auto g = static_cast<std::uint64_t>(topology.gpus());
      const int src = static_cast<int>(rng.below(g));
      int dst = src;
      while (topology.node_of(dst) == topology.node_of(src)) dst = static_cast<int>(rng.below(g));
      solver.start_flow(src, dst, Bytes(1e9), [] {}, {-1, static_cast<std::uint64_t>(i)});
    }
    sim.run();
    solves = solver.solves();
    early = solver.finished_early();
  }
  state.counters["solves"] = static_cast<double>(solves);
  state.counters["finished_early"] = static_cast<double>(early);
}
BENCHMARK(BM_DrainUneven5k)->Arg(0)->Arg(1000)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
