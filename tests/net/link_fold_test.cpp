// The network folded onto one replica's links (net/link_fold.h): the same rates as unfolded,
// hand-checked, and the refusals.
#include <doctest/doctest.h>

#include <utility>
#include <vector>

#include "engine/simulator.h"
#include "net/flow_solver.h"
#include "net/link_fold.h"
#include "net/topology.h"

using namespace megasim;

namespace {

// Servers of `per_node` GPUs, one 10 GB/s NIC each, under one ToR.
net::ClusterSpec servers(int count, int per_node) {
  net::ClusterSpec c;
  c.name = "servers";
  c.gpus = count * per_node;
  c.node.gpus = per_node;
  c.node.nvlink_per_gpu = BytesPerSec(1e12);
  c.node.nics = 1;
  c.node.nic = BytesPerSec(10e9);
  c.node.pcie = BytesPerSec(1e12);
  c.fabric.tiers = 2;
  c.fabric.wiring = net::Wiring::kTor;
  c.fabric.radix = 8;
  c.fabric.agg_radix = 8;
  c.fabric.port = BytesPerSec(10e9);
  c.fabric.tor_down_ports = 4;
  c.fabric.pod_tors = 1;
  return c;
}

std::vector<net::Hop> joined(const net::Topology& t, std::vector<std::pair<int, int>> pairs) {
  std::vector<net::Hop> all, one;
  for (auto [src, dst] : pairs) {
    t.route(src, dst, -1, net::Routing::kEcmp, 0, one);
    all.insert(all.end(), one.begin(), one.end());
  }
  return all;
}

}  // namespace

TEST_CASE("fold: two replicas' coflows get the same rates on replica 0's links as on all") {
  // Four single-GPU servers; replica d's stages on GPUs 2d and 2d + 1. A "PP" coflow of the
  // copies 0 -> 1 and 2 -> 3, and a "DP ring" coflow 0 -> 2 -> 0, each of 1e12 bytes. The NIC
  // of GPU 0 sends the PP copy and one ring edge: both coflows at 5 GB/s. Folded, GPU 2's
  // links become GPU 0's and GPU 3's GPU 1's, each hop at half weight: the same 5 GB/s.
  net::Topology topology{servers(4, 1)};
  const auto fold = net::LinkFold::build(topology, {{0, 0}, {1, 1}, {2, 0}, {3, 1}});
  REQUIRE(fold.has_value());
  CHECK(fold->folded_links() > 0);
  for (const bool folded : {false, true}) {
    Simulator sim;
    net::FlowSolver solver(sim, topology, net::Routing::kEcmp);
    auto pp = joined(topology, {{0, 1}, {2, 3}});
    auto ring = joined(topology, {{0, 2}, {2, 0}});
    if (folded) {
      fold->apply(pp);
      fold->apply(ring);
    }
    const auto a = solver.start_path_flow(pp, Bytes(1e12), Time::zero(), [] {});
    const auto b = solver.start_path_flow(ring, Bytes(1e12), Time::zero(), [] {});
    sim.run_until(Time::zero());
    CHECK(solver.rate(a).value() == doctest::Approx(5e9));
    CHECK(solver.rate(b).value() == doctest::Approx(5e9));
  }
}

TEST_CASE("fold: refused where a node holds a GPU outside the map, or links disagree") {
  net::Topology two_per_node{servers(2, 2)};
  // GPU 1 shares GPU 0's server (and its NIC) but is not mapped.
  CHECK_FALSE(net::LinkFold::build(two_per_node, {{0, 0}, {2, 0}, {3, 3}}).has_value());
  // GPU 2 imaged onto both GPU 0 and GPU 1: its links would have two images.
  CHECK_FALSE(net::LinkFold::build(two_per_node, {{0, 0}, {1, 1}, {2, 0}, {2, 1}, {3, 3}}).has_value());
  CHECK(net::LinkFold::build(two_per_node, {{0, 0}, {1, 1}, {2, 0}, {3, 1}}).has_value());
}
