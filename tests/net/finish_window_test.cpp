// FlowSolver's finish window: flows whose finish is within a share of their duration of the
// earliest one's finish with it, under one solve, never later than they would and never more
// than that share early; off by default.
#include <doctest/doctest.h>

#include <vector>

#include "engine/simulator.h"
#include "net/flow_solver.h"

using namespace megasim;
using net::FlowSolver;
using net::Hop;

namespace {

// `n` flows of 1 GB, flow i alone on link i of 1 GB/s × (1 + i·spread) and all of them on
// link n, wide enough never to limit them (so they are one component): flow i ends at
// 1 / (1 + i·spread) s. Returns each flow's end, and the solver's solves and early finishes.
struct Ends {
  std::vector<double> seconds;
  std::uint64_t solves = 0, early = 0;
};

Ends run(int n, double spread, double window) {
  std::vector<BytesPerSec> capacities;
  for (int i = 0; i < n; ++i) capacities.push_back(gbyte_per_s(1.0 + i * spread));
  capacities.push_back(gbyte_per_s(1000.0));
  Simulator sim;
  FlowSolver solver(sim, capacities);
  solver.set_finish_window(window);
  Ends ends;
  ends.seconds.assign(static_cast<std::size_t>(n), 0.0);
  for (int i = 0; i < n; ++i) {
    const std::vector<Hop> path = {Hop{static_cast<net::LinkId>(i), 1.0f},
                                   Hop{static_cast<net::LinkId>(n), 1.0f}};
    solver.start_path_flow(path, Bytes(1e9), Time::zero(),
                           [&ends, &sim, i] { ends.seconds[i] = sim.now().to_seconds(); });
  }
  sim.run();
  ends.solves = solver.solves();
  ends.early = solver.finished_early();
  return ends;
}

}  // namespace

TEST_CASE("finish window: flows ending within it end with the earliest, under one solve") {
  constexpr int kFlows = 50;
  const Ends exact = run(kFlows, 1e-5, 0.0);
  const Ends together = run(kFlows, 1e-5, 1e-3);
  // Off: each departure re-solves the component (the start's solve and one a departure).
  CHECK(exact.solves == kFlows + 1);
  CHECK(exact.early == 0);
  for (int i = 0; i < kFlows; ++i) {
    CAPTURE(i);
    CHECK(exact.seconds[i] == doctest::Approx(1.0 / (1.0 + i * 1e-5)).epsilon(1e-9));
    // On: every flow's end is within 0.049 % of the fastest's, inside the window, so all end
    // with it, each no later than its own end and at most 0.1 % of its duration early.
    CHECK(together.seconds[i] <= exact.seconds[i]);
    CHECK(together.seconds[i] >= exact.seconds[i] * (1.0 - 1e-3));
    CHECK(together.seconds[i] == together.seconds[kFlows - 1]);
  }
  CHECK(together.solves == 2);  // the start's, and the one departure's
  CHECK(together.early == kFlows - 1);
}

TEST_CASE("finish window: a flow ending past it ends at its own time") {
  // Spread 1 %: flow 1 ends at 1/1.01 s, flow 0 0.99 % of its second later, past 0.1 %.
  const Ends ends = run(2, 0.01, 1e-3);
  CHECK(ends.early == 0);
  CHECK(ends.seconds[0] == doctest::Approx(1.0).epsilon(1e-9));
  CHECK(ends.seconds[1] == doctest::Approx(1.0 / 1.01).epsilon(1e-9));
  // Spread 0.05 %: inside it.
  const Ends near = run(2, 5e-4, 1e-3);
  CHECK(near.early == 1);
  CHECK(near.seconds[0] == near.seconds[1]);
}
