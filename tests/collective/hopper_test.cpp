// Collectives on HGX H100 nodes (NCCL 2.30's Hopper constants in calibrate/profiles/
// h100-sxm5-80gb.json): NVLink SHARP inside a node and NVLSTree across nodes, NCCL's choice on
// known cases, the node-count trend on a rail-optimised fabric, the mid-size tree correction,
// the Simple ring's latency floor, and the flow-level check of the choice on an ECMP fabric.
// Every figure is worked by hand from the profile's constants in the comment above its check.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "collective_bench.h"
#include "collective/collective_engine.h"
#include "engine/error.h"
#include "io/cluster_loader.h"
#include "io/collective_constants_reader.h"

using namespace megasim;
using collective::CollectiveCall;
using megasim::hw::CollAlgorithm;
using megasim::hw::CollectiveOp;
using megasim::hw::CollProtocol;

using megasim::testing::all_reduce;
using megasim::testing::busbw_gbps;

namespace {

using testing::source;

constexpr double kOneGiB = 1073741824.0;

using testing::Hopper;


}  // namespace

TEST_CASE("one HGX H100: a 1 GiB all-reduce runs as NVLS at NCCL's NVLS bandwidth") {
  // NVLink 4: 450 GB/s x 0.824 = 370.8 GB/s per GPU. 8 heads: the fastest channel speed with
  // 9 x speed <= 370.8 is 40 GB/s (60 and 50 do not fit). Bus bandwidth 8 x 40 x 0.85 x 7/8 x 2
  // = 476 GB/s; algbw 476 x 8/14 = 272 GB/s; 1 GiB takes 25 us + 3947.6 us = 3972.6 us, busbw
  // 1 GiB / 3972.6 us x 14/8 = 473.0 GB/s (measured ~474-480: nccl-tests#212, nccl#1455),
  // above any ring (370.8 GB/s of NVLink).
  Hopper h;
  const auto c = all_reduce(h.topology.pack_placement(8), kOneGiB);
  const auto p = h.engine.predict(c);
  CHECK(p.algorithm == CollAlgorithm::kNvls);
  CHECK(p.protocol == CollProtocol::kSimple);
  CHECK(p.time.to_us() == doctest::Approx(3972.6).epsilon(1e-3));
  CHECK(busbw_gbps(c, p.time) == doctest::Approx(473.0).epsilon(1e-3));
  CHECK(busbw_gbps(c, p.time) < 476.0);
}

TEST_CASE("NVLS bandwidth by GPUs per node, and where NCCL's model prefers the ring") {
  // Speed s: the fastest of 60, 50, 40, ... with (h + 1) x s <= 370.8. Bus bandwidth
  // h x s x 0.85 x (h-1)/h x 2: h=4: s=60, 306; h=5: s=60, 408; h=6: s=50, 425; h=8: s=40, 476.
  Hopper h;
  const collective::NcclModel& m = h.engine.model();
  auto bus = [&](int gpus) {
    const auto c = all_reduce(h.topology.pack_placement(gpus), kOneGiB);
    const auto shape = collective::comm_shape(h.topology, c.gpus);
    return m.cost(c, shape, CollAlgorithm::kNvls, CollProtocol::kSimple).bus_bandwidth.value() /
           1e9;
  };
  CHECK(bus(4) == doctest::Approx(306.0));
  CHECK(bus(5) == doctest::Approx(408.0));
  CHECK(bus(6) == doctest::Approx(425.0));
  CHECK(bus(8) == doctest::Approx(476.0));
  // On 4 GPUs the ring's 370.8 GB/s beats NVLS's 306: NCCL runs the ring there.
  CHECK(h.engine.predict(all_reduce(h.topology.pack_placement(4), kOneGiB)).algorithm ==
        CollAlgorithm::kRing);
}

TEST_CASE("an NVLink domain of more than 32 GPUs runs NVLS on 32 heads, NCCL's arity") {
  // NCCL_MAX_NVLS_ARITY is 32 from NCCL 2.20 (search.cc: maxChannels = min(arity, GPUs)); every
  // GPU of a 64- or 72-GPU domain was a head until 2026-12-07, so a channel's speed fell to
  // 3 GB/s ((h + 1) x speed <= 370.8): 321 and 362 GB/s of bus bandwidth. With 32 heads: 11 GB/s
  // (33 x 11 <= 370.8), 32 x 11 x 0.85 x 31/32 x 2 = 579.7 GB/s on both. A NIC a GPU, as
  // an NVL72's trays have: node.nics took at most 64 until the same day. Across two domains
  // the cap comes after the NICs' share of the node's GPUs: 36 NICs still give 36 heads, so 32,
  // as 72 do (the cap taken first gave 36 NICs 16 heads and a faster bus: a review).
  const auto dir = std::filesystem::temp_directory_path() / "megasim_nvls_arity";
  std::filesystem::create_directories(dir);
  auto bus = [&](int gpus, int nodes, int nics) {
    const auto file = dir / ("domain" + std::to_string(gpus) + "x" + std::to_string(nodes) + "-" +
                             std::to_string(nics) + ".json");
    std::ofstream(file)
        << "{\"name\": \"domain\", \"source\": \"a test\", \"gpus\": " << gpus * nodes
        << ", \"node\": {\"source\": \"a test\", \"gpus\": " << gpus
        << ", \"gpu\": \"h100-sxm5-80gb\", \"nvlink_gbps_per_gpu\": 3600, "
           "\"nvlink_efficiency\": 0.824, \"nvlink_latency_ns\": 150, \"nics\": "
        << nics
        << ", \"nic_gbps\": 400, \"nic_efficiency\": 0.9937, \"pcie_gbps\": 504, "
           "\"pcie_latency_ns\": 500}"
        << (nodes == 1 ? ""
                       : ", \"fabric\": {\"source\": \"a test\", \"tiers\": 3, \"wiring\": "
                         "\"rail\", \"switch_radix\": 64, \"port_gbps\": 400, \"port_split\": 1, "
                         "\"tor_down_ports\": 32, \"pod_tors\": 32, \"tor_oversubscription\": 1, "
                         "\"agg_oversubscription\": 1, \"link_efficiency\": 0.9937, "
                         "\"hop_latency_ns\": 130}")
        << "}";
    Hopper h(io::load_cluster(file));
    const auto c = all_reduce(h.topology.pack_placement(gpus * nodes), kOneGiB);
    const auto shape = collective::comm_shape(h.topology, c.gpus);
    const CollAlgorithm a = nodes == 1 ? CollAlgorithm::kNvls : CollAlgorithm::kNvlsTree;
    return h.engine.model().cost(c, shape, a, CollProtocol::kSimple).bus_bandwidth.value() / 1e9;
  };
  CHECK(bus(64, 1, 64) == doctest::Approx(579.7).epsilon(1e-3));
  CHECK(bus(72, 1, 72) == doctest::Approx(579.7).epsilon(1e-3));
  CHECK(bus(72, 2, 36) == doctest::Approx(bus(72, 2, 72)).epsilon(1e-9));
  std::filesystem::remove_all(dir);
}

TEST_CASE("NCCL's choice on known Hopper cases") {
  Hopper h;
  const auto one = h.topology.pack_placement(8), two = h.topology.pack_placement(16);
  // 8 B on one node: ring LL, 6.6 + 14 x 0.6 = 15.0 us.
  auto p = h.engine.predict(all_reduce(one, 8));
  CHECK(p.algorithm == CollAlgorithm::kRing);
  CHECK(p.protocol == CollProtocol::kLL);
  CHECK(p.model_time.to_us() == doctest::Approx(15.0).epsilon(1e-3));
  // 8 B on two nodes: tree LL, 6.8 + 2 x (7 x 0.6 + 1 x 5.0) = 25.2 us (NCCL 2.30 has no LL
  // intra factor; NCCL 2.8's x 1.8 made it 31.9).
  p = h.engine.predict(all_reduce(two, 8));
  CHECK(p.algorithm == CollAlgorithm::kTree);
  CHECK(p.protocol == CollProtocol::kLL);
  CHECK(p.model_time.to_us() == doctest::Approx(25.2).epsilon(1e-3));
  // 1 GiB on two nodes: NVLSTree.
  CHECK(h.engine.predict(all_reduce(two, kOneGiB)).algorithm == CollAlgorithm::kNvlsTree);
  // One GPU per node (a DP group): no NVLink SHARP; forcing it says why.
  std::vector<int> spread;
  for (int n = 0; n < 4; ++n) spread.push_back(n * 8);
  CHECK(h.engine.predict(all_reduce(spread, kOneGiB)).algorithm != CollAlgorithm::kNvlsTree);
  CHECK_THROWS_AS(h.engine.predict(all_reduce(spread, kOneGiB, CollAlgorithm::kNvlsTree)),
                  InputError);
  CHECK_THROWS_AS(
      h.engine.predict(all_reduce(one, kOneGiB, CollAlgorithm::kNvls, CollProtocol::kLL)),
      InputError);
  // An A100 profile has no "nvls" group: never chosen, and forcing it is an error.
  Hopper a("dgx-a100-8", "a100-sxm4-80gb");
  CHECK(a.engine.predict(all_reduce(a.topology.pack_placement(8), kOneGiB)).algorithm ==
        CollAlgorithm::kRing);
  CHECK_THROWS_AS(
      a.engine.predict(all_reduce(a.topology.pack_placement(8), kOneGiB, CollAlgorithm::kNvls)),
      InputError);
}

TEST_CASE("on a rail-optimised SuperPOD the 1 GiB all-reduce never speeds up with more nodes") {
  // NVLSTree per channel: min(NVLS 40 x 0.85 x 7/8 x 2 = 59.5, NIC 49.7 (x 2 on 2 nodes),
  // cap 57.7 on 2 nodes / 45.5 on more) = 57.7 / 45.5 GB/s, x 8 heads = 461.6 / 364 GB/s.
  // Latency 25 + 2 log2(nodes) x 20.9 us. The pipeline's fill (nccl_pipeline.cpp): 2 log2(nodes)
  // network hops, each one loop of 64 KiB chunks (4 nodes or more) x 16 channels x 8 heads
  // = 8 MiB. 4 nodes: algbw 364 x 32/62 = 187.87 GB/s, 5715.4 + 108.6 + 4 x 44.65 = 6002.6 us,
  // busbw 346.6; 8 nodes: 364 x 64/126 = 184.89 GB/s, 5807.4 + 150.4 + 6 x 45.37 = 6230.0 us,
  // busbw 339.3. Measured on healthy systems: ~474, ~469, 325-366, 321-391.
  Hopper h;
  std::vector<double> bw;
  for (int nodes : {1, 2, 4, 8}) {
    const auto c = all_reduce(h.topology.pack_placement(8 * nodes), kOneGiB);
    bw.push_back(busbw_gbps(c, h.engine.predict(c).time));
  }
  CHECK(bw[0] == doctest::Approx(473.0).epsilon(1e-3));
  CHECK(bw[1] > 440.0);
  CHECK(bw[2] == doctest::Approx(346.6).epsilon(1e-3));
  CHECK(bw[3] == doctest::Approx(339.3).epsilon(1e-3));
  for (std::size_t i = 1; i < bw.size(); ++i) CHECK(bw[i] <= bw[i - 1]);
}

TEST_CASE("mid sizes: NCCL's tree correction slows the tree, in the model and in the flows") {
  // Tree LL128 on 2 nodes at 2 MiB: latency 14 + 2 x (7 x 1.25 + 8.5) = 48.5 us; bus
  // min(370.8 x 0.8625 = 319.8, 36.7 x 8 channels = 293.6) GB/s, algbw x 0.5 x 0.6
  // (treeCorrectionFactor LL128, log2(2 MiB / 64) = 15) = 88.08 GB/s: 23.81 us more, 72.31 us.
  // The flows carry the correction too: a
  // tree's flows load NVLink ~13 % less than NCCL's formula (the ends of a node's chain send
  // once per channel, not twice), so alone they come within 5 % of the model; without the
  // correction they took 48.5 + 11.5 = 60.0 us.
  Hopper h;
  const auto c = all_reduce(h.topology.pack_placement(16), 2097152.0, CollAlgorithm::kTree,
                            CollProtocol::kLL128);
  const auto p = h.engine.predict(c);
  CHECK(p.model_time.to_us() == doctest::Approx(72.31).epsilon(1e-3));
  CHECK(p.time.to_us() == doctest::Approx(p.model_time.to_us()).epsilon(0.05));
  CHECK(p.time.to_us() > 65.0);
  // The ramp: at 1 MiB the 2-node all-reduce is under a fifth of its 1 GiB bus bandwidth.
  const auto small = all_reduce(h.topology.pack_placement(16), 1048576.0);
  const auto large = all_reduce(h.topology.pack_placement(16), kOneGiB);
  CHECK(busbw_gbps(small, h.engine.predict(small).time) <
        0.2 * busbw_gbps(large, h.engine.predict(large).time));
}

TEST_CASE("Hopper's per-channel caps count the search graph's 8 channels, not 16") {
  // NCCL 2.30 multiplies perChMax*Bws by graphs[a]->nChannels, and a Hopper node with eight
  // 400G NICs searched at 48 GB/s keeps 8 (search.cc ncclTopoDupChannels). Across nodes:
  // ring LL128 min(370.8 x 0.92, 36.7 x 8 = 293.6); tree Simple min(370.8 x 0.92 = 341.1,
  // 41.4 x 8 = 331.2) on 2 nodes and 36.0 x 8 = 288 on 4; tree LL128 36.7 x 8 = 293.6 on 2
  // and 29.0 x 8 = 232 on 4.
  Hopper h;
  auto bus = [&](int gpus, CollAlgorithm a, CollProtocol p) {
    const auto c = all_reduce(h.topology.pack_placement(gpus), 1048576.0);
    const auto shape = collective::comm_shape(h.topology, c.gpus);
    return h.engine.model().bus_bandwidth(shape, a, p).value() / 1e9;
  };
  CHECK(bus(16, CollAlgorithm::kRing, CollProtocol::kLL128) == doctest::Approx(293.6));
  CHECK(bus(16, CollAlgorithm::kTree, CollProtocol::kSimple) == doctest::Approx(331.2));
  CHECK(bus(32, CollAlgorithm::kTree, CollProtocol::kSimple) == doctest::Approx(288.0));
  CHECK(bus(16, CollAlgorithm::kTree, CollProtocol::kLL128) == doctest::Approx(293.6));
  CHECK(bus(32, CollAlgorithm::kTree, CollProtocol::kLL128) == doctest::Approx(232.0));
  // One node keeps its ring LL128 uncapped: 370.8 x 0.92.
  CHECK(bus(8, CollAlgorithm::kRing, CollProtocol::kLL128) ==
        doctest::Approx(370.8 * 0.92).epsilon(1e-3));
  // So at 16 MiB on 4 nodes NCCL's pick is NVLSTree, no longer the capped tree's LL128.
  const auto c = all_reduce(h.topology.pack_placement(32), 16777216.0);
  CHECK(h.engine.predict(c).nccl_algorithm == CollAlgorithm::kNvlsTree);
}

TEST_CASE("the LL ring's bandwidth is NCCL 2.30's llMaxBws, not the link's half") {
  // busBw = min(llMaxBw, 370.8 x 0.5 = 185.4): 141 GB/s on one node (Hopper), 39 on two and
  // 20.4 on more (x86 Intel hosts).
  Hopper h;
  auto bus = [&](int gpus) {
    const auto c = all_reduce(h.topology.pack_placement(gpus), 1048576.0);
    const auto shape = collective::comm_shape(h.topology, c.gpus);
    return h.engine.model().bus_bandwidth(shape, CollAlgorithm::kRing, CollProtocol::kLL).value() /
           1e9;
  };
  CHECK(bus(8) == doctest::Approx(141.0));
  CHECK(bus(16) == doctest::Approx(39.0));
  CHECK(bus(32) == doctest::Approx(20.4));
}

TEST_CASE("the LL tree's cap on one node is NCCL 2.30's llMaxBws by GPU, as the LL ring's") {
  // Tree LL: min(busBw / 3.8, llMaxBw), llMaxBw indexed by GPU on one node: Hopper-N1, 141 GB/s
  // (until 2026-12-03 the profile had the Volta row's 39). One node's link: 370.8 GB/s x 0.92
  // (the tree's factor) / 3.8 = 89.77 GB/s, under 141: the cap does not bind.
  Hopper h;
  const auto c = all_reduce(h.topology.pack_placement(8), 1048576.0);
  const auto shape = collective::comm_shape(h.topology, c.gpus);
  const double bus =
      h.engine.model().bus_bandwidth(shape, CollAlgorithm::kTree, CollProtocol::kLL).value() / 1e9;
  CHECK(bus == doctest::Approx(370.8 * 0.92 / 3.8).epsilon(1e-3));
}

TEST_CASE("an uneven communicator runs at its emptiest node's NICs, in the model and the flows") {
  // 8 GPUs on one node and 1 on the next: every ring channel crosses the second node through
  // its one GPU's NIC (NCCL takes each graph's speed as the minimum over the ranks), so a
  // forced Simple ring of 1 GiB moves 2 x 8/9 GiB through one 400G NIC at the cluster's
  // efficiency. Until 2026-12-03 the model took the fuller node's eight NICs: 5.3 ms, where
  // the flows took 38.5 ms.
  Hopper h;
  std::vector<int> gpus = h.topology.pack_placement(9);
  const auto c = all_reduce(gpus, kOneGiB, CollAlgorithm::kRing, CollProtocol::kSimple);
  const auto shape = collective::comm_shape(h.topology, c.gpus);
  CHECK(shape.max_per_node == 8);
  CHECK(shape.min_per_node == 1);
  const auto cost = h.engine.model().cost(c, shape, CollAlgorithm::kRing, CollProtocol::kSimple);
  const auto timed = h.engine.predict(c);
  CHECK(timed.time.to_us() == doctest::Approx(cost.time.to_us()).epsilon(0.01));
  const net::NodeSpec& node = h.topology.spec().node;
  const double one_nic = node.nic.value() * node.nic_efficiency;
  CHECK(cost.time.to_seconds() > 2.0 * 8.0 / 9.0 * kOneGiB / one_nic);
}

TEST_CASE("the Simple ring's latency floor across two H100 nodes") {
  // 16 ranks, 2 nodes: 30 steps, 2 across the network. Intra step max(3.4, 3 x 1.0 us net
  // overhead) = 3.4 us, network step 14 us: 8.4 + 28 x 3.4 + 2 x 14 = 131.6 us, x 1.4 plateau
  // (1 MiB >= 1024 B x 16 ranks) = 184.24 us.
  Hopper h;
  const auto c = all_reduce(h.topology.pack_placement(16), 1048576.0, CollAlgorithm::kRing,
                            CollProtocol::kSimple);
  const auto shape = collective::comm_shape(h.topology, c.gpus);
  const auto cost = h.engine.model().cost(c, shape, CollAlgorithm::kRing, CollProtocol::kSimple);
  CHECK(cost.latency.to_us() == doctest::Approx(184.24).epsilon(1e-4));
  // The three posts of a Simple step set the floor where they pass NCCL's NVLink latency
  // (no shipped profile's overhead does, so the case above cannot see them): at 2 us of
  // overhead, max(3.4, 3 x 2.0) = 6.0 us a step: (8.4 + 28 x 6.0 + 2 x 14) x 1.4 = 286.16 us.
  h.constants.ring_net_overhead_us = 2.0;
  const auto posted = h.engine.model().cost(c, shape, CollAlgorithm::kRing, CollProtocol::kSimple);
  CHECK(posted.latency.to_us() == doctest::Approx(286.16).epsilon(1e-4));
}

TEST_CASE("on an ECMP fabric no forced algorithm beats the one the engine runs") {
  // Llama-3-like cluster: two servers per ToR, so 4 and 8 servers cross ECMP uplinks where
  // channels collide. The engine times NCCL's pick alone and, when the fabric slows it, every
  // candidate: what it runs is never slower than any algorithm forced.
  Hopper h("llama3-h100-24576");
  for (int nodes : {4, 8}) {
    CAPTURE(nodes);
    const auto gpus = h.topology.pack_placement(8 * nodes);
    const Time chosen = h.engine.predict(all_reduce(gpus, kOneGiB)).time;
    for (CollAlgorithm a : {CollAlgorithm::kRing, CollAlgorithm::kTree, CollAlgorithm::kNvlsTree}) {
      CAPTURE(hw::to_string(a));
      CHECK(chosen <= h.engine.predict(all_reduce(gpus, kOneGiB, a)).time);
    }
  }
}

TEST_CASE("one rank per node: NCCL 2.30 charges the tree's network latency to the ring") {
  // 4 ranks on 4 nodes, all-reduce ring LL: 6 steps, all across the network, each at the
  // tree's LL network latency 5.0 us instead of the ring's 2.7: 6.6 + 6 x 5.0 = 36.6 us.
  Hopper h;
  std::vector<int> spread;
  for (int n = 0; n < 4; ++n) spread.push_back(n * 8);
  const auto c = all_reduce(spread, 8, CollAlgorithm::kRing, CollProtocol::kLL);
  const auto shape = collective::comm_shape(h.topology, c.gpus);
  const auto cost = h.engine.model().cost(c, shape, CollAlgorithm::kRing, CollProtocol::kLL);
  CHECK(cost.latency.to_us() == doctest::Approx(36.6).epsilon(1e-4));
}

TEST_CASE("hopper: a fitted bandwidth scale speeds or slows the ring's flows as it does the model") {
  // One DGX H100, a forced Simple ring at 1 GiB: the flows carry the bytes the model's bus
  // bandwidth implies, so a fitted NVLink scale of 1.15 (or 0.8) divides the bandwidth-bound
  // time by about 1.15 (or 0.8), above as well as below the link's own rate.
  const CollectiveCall call = all_reduce({0, 1, 2, 3, 4, 5, 6, 7}, kOneGiB, CollAlgorithm::kRing,
                                         CollProtocol::kSimple);
  Hopper plain;
  const Time base = plain.engine.predict(call).time;
  for (double k : {1.15, 0.8}) {
    Hopper scaled;
    scaled.constants.scale.nvlink_bandwidth = k;
    const auto p = scaled.engine.predict(call);
    CHECK(base.to_seconds() / p.time.to_seconds() == doctest::Approx(k).epsilon(0.02).scale(0));
    CHECK(p.time.to_seconds() == doctest::Approx(p.model_time.to_seconds()).epsilon(0.02).scale(0));
  }
}

TEST_CASE("a ring broadcast's latency is NCCL's: one hop on a node, a hop per rank across nodes") {
  // tuning.cc: one node replays one channel's GPU order (sameChannels), so one NVLink hop: LL
  // 6.6 + 0.6 = 7.2 us. Across nodes the channels differ: a hop per rank at the network's
  // latency, LL 6.6 + 16 x 2.7 = 49.8 us on 2 nodes, 6.6 + 32 x 2.7 = 93.0 us on 4; Simple
  // takes the tree's network latency, 8.4 + 16 x 14 = 232.4 us.
  Hopper h;
  const auto bcast = [&](int gpus, CollProtocol p) {
    return h.engine
        .predict(testing::call(CollectiveOp::kBroadcast, h.topology.pack_placement(gpus), 8,
                               CollAlgorithm::kRing, p))
        .model_time.to_us();
  };
  CHECK(bcast(8, CollProtocol::kLL) == doctest::Approx(7.2).epsilon(1e-3));
  CHECK(bcast(16, CollProtocol::kLL) == doctest::Approx(49.8).epsilon(1e-3));
  CHECK(bcast(32, CollProtocol::kLL) == doctest::Approx(93.0).epsilon(1e-3));
  CHECK(bcast(16, CollProtocol::kSimple) == doctest::Approx(232.4).epsilon(1e-3));
}

TEST_CASE("NVLSTree with half as many NICs as GPUs: a head a NIC, in the flows as in the model") {
  // The model gives a node of 4 NICs for 8 GPUs 4 heads, each on a NIC of its own. The flows
  // put head c on GPU c until 2026-12-05, so two heads shared each of two NICs and the other
  // two stood idle: 1 GiB took twice the model's time on 16 GPUs, 1.5 times on 32.
  net::ClusterSpec spec = io::load_cluster(source("topologies/dgx-h100-superpod-6144.json"));
  spec.node.nics = 4;
  Simulator sim;
  const net::Topology topology(spec);
  const hw::CollectiveConstants constants =
      io::read_collective_constants(source("calibrate/profiles/h100-sxm5-80gb.json"));
  net::FlowSolver solver(sim, topology, net::Routing::kEcmp);
  collective::CollectiveEngine engine(sim, topology, solver, constants);
  for (const int gpus : {16, 32}) {
    CAPTURE(gpus);
    const auto c = all_reduce(topology.pack_placement(gpus), kOneGiB, CollAlgorithm::kNvlsTree,
                              CollProtocol::kSimple);
    const auto shape = collective::comm_shape(topology, c.gpus);
    const auto cost =
        engine.model().cost(c, shape, CollAlgorithm::kNvlsTree, CollProtocol::kSimple);
    CHECK(engine.predict(c).time.to_us() == doctest::Approx(cost.time.to_us()).epsilon(0.02));
  }
}

TEST_CASE("NVLSTree's heads run at the slower of NIC and PCIe, in the model as in the flows") {
  // 64 GPUs, 256 MiB. At 400G and at 800G NICs behind the DGX H100's PCIe Gen5 (504 Gb/s) a
  // head's channel is capped by the profile's tree_channel_cap (45.5 GB/s, below both): the
  // model gives 1,874.5 µs either way, but the flows were sized at the NIC's line rate and ran
  // at the PCIe's, 2,870 µs at 800G, until 2026-12-06 (a metamorphic trial: a faster NIC made
  // the all-reduce slower). A PCIe link slower than the cap (126 Gb/s) slows the model, as
  // NCCL's path search takes the slowest link from GPU to NIC, and the flows with it.
  const net::ClusterSpec spec = io::load_cluster(source("topologies/dgx-h100-superpod-6144.json"));
  const hw::CollectiveConstants constants =
      io::read_collective_constants(source("calibrate/profiles/h100-sxm5-80gb.json"));
  struct Times {
    double model_us, flows_us;
  };
  const auto times = [&](double nic_scale, double pcie_scale) {
    net::ClusterSpec s = spec;
    s.node.nic = s.node.nic * nic_scale;
    s.fabric.port = s.fabric.port * nic_scale;
    s.node.pcie = s.node.pcie * pcie_scale;
    Simulator sim;
    const net::Topology topology(s);
    net::FlowSolver solver(sim, topology, net::Routing::kEcmp);
    collective::CollectiveEngine engine(sim, topology, solver, constants);
    const auto c = all_reduce(topology.pack_placement(64), 256.0 * 1048576.0,
                              CollAlgorithm::kNvlsTree, CollProtocol::kSimple);
    const auto shape = collective::comm_shape(topology, c.gpus);
    return Times{
        engine.model().cost(c, shape, CollAlgorithm::kNvlsTree, CollProtocol::kSimple).time.to_us(),
        engine.predict(c).time.to_us()};
  };
  REQUIRE(spec.node.nic.value() < spec.node.pcie.value());
  REQUIRE(spec.node.nic.value() * 2.0 > spec.node.pcie.value());
  const Times at_400 = times(1.0, 1.0), at_800 = times(2.0, 1.0);
  CHECK(at_400.model_us == doctest::Approx(1874.5).epsilon(1e-3));
  CHECK(at_800.model_us == doctest::Approx(1874.5).epsilon(1e-3));
  CHECK(at_400.flows_us == doctest::Approx(1874.5).epsilon(1e-3));
  CHECK(at_800.flows_us <= at_400.flows_us * (1.0 + 1e-9));
  // PCIe at a quarter, 126 Gb/s = 15.75 GB/s: 8 heads on 8 NICs, 15.75 GB/s a head.
  const Times slow_pcie = times(1.0, 0.25);
  CHECK(slow_pcie.model_us > 2.0 * at_400.model_us);
  CHECK(slow_pcie.flows_us == doctest::Approx(slow_pcie.model_us).epsilon(0.02));
}
