// A MegaScale-like data-parallel phase: `groups` concurrent ring reduce-scatters of 192 ranks
// (one GPU per server, same rail, as TP 8 x PP 8 x DP 192 lays out DP groups) on the 12,288-GPU
// fabric under ECMP, simulated to completion. Measures what one such phase costs the step
// simulator.
#include <benchmark/benchmark.h>

#include <filesystem>

#include "collective/collective_engine.h"
#include "engine/simulator.h"
#include "io/cluster_loader.h"
#include "io/collective_constants_reader.h"
#include "net/flow_solver.h"
#include "net/topology.h"

namespace {

using namespace megasim;

void BM_MegaScaleDpReduceScatter(benchmark::State& state) {
  const auto root = std::filesystem::path(MEGASIM_SOURCE_DIR);
  static const net::Topology topology(io::load_cluster(root / "topologies/megascale-a100-12288.json"));
  static const hw::CollectiveConstants constants =
      io::read_collective_constants(root / "calibrate/profiles/a100-sxm4-80gb.json");
  const int groups = static_cast<int>(state.range(0));
  std::uint64_t solves = 0, flows = 0;
  double simulated_ms = 0.0;
  for (auto _ : state) {
    Simulator sim;
    net::FlowSolver solver(sim, topology, net::Routing::kEcmp);
    collective::CollectiveEngine engine(sim, topology, solver, constants);
    for (int g = 0; g < groups; ++g) {
      collective::CollectiveCall call;
      call.op = hw::CollectiveOp::kReduceScatter;
      call.algorithm = hw::CollAlgorithm::kRing;
      call.protocol = hw::CollProtocol::kSimple;
      call.bytes = Bytes(512.0 * 1024 * 1024);
      call.tag = static_cast<std::uint64_t>(g);
      // Group g: GPU (g % 8) of servers g / 8, g / 8 + 8, ... (one pipeline replica = 8 servers).
      for (int r = 0; r < 192; ++r) call.gpus.push_back((g / 8 + 8 * r) * 8 + g % 8);
      engine.launch(call, [] {});
      flows += engine.last_flow_count();
    }
    sim.run();
    solves += solver.solves();
    simulated_ms = sim.now().to_ms();
  }
  state.counters["flows"] = static_cast<double>(flows) / static_cast<double>(state.iterations());
  state.counters["solves"] = static_cast<double>(solves) / static_cast<double>(state.iterations());
  state.counters["simulated_ms"] = simulated_ms;
}
BENCHMARK(BM_MegaScaleDpReduceScatter)->Arg(8)->Arg(64)->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
