// NCCL's chunked pipeline across nodes (collective/nccl_pipeline.cpp) and point-to-point over
// NVLink: the chunk NCCL's enqueue.cc picks per size, the fill it adds to trees and NVLSTree
// (2 x log2(nodes) network hops, one loop of chunks each, at the algorithm's own bandwidth),
// NCCL's choice made without it, the shipped 2-node H100 log reproduced by the datasheet
// profile with half the peak reached at 32-64 MiB, and the A100 send/recv rate.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "collective_bench.h"

using namespace megasim;
using collective::CollectiveCall;
using megasim::hw::CollAlgorithm;
using megasim::hw::CollectiveOp;
using megasim::hw::CollProtocol;
using megasim::testing::all_reduce;
using megasim::testing::busbw_gbps;

namespace {

constexpr double kOneMiB = 1048576.0;


// The out-of-place (size, time us) rows of an nccl-tests log.
std::vector<std::pair<double, double>> log_rows(const std::string& rel) {
  std::ifstream in(testing::source(rel));
  std::vector<std::pair<double, double>> rows;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream s(line);
    double size = 0.0, count = 0.0, root = 0.0, time = 0.0;
    std::string type, op;
    if (s >> size >> count >> type >> op >> root >> time) rows.emplace_back(size, time);
  }
  return rows;
}

}  // namespace

TEST_CASE("NVLSTree's chunk follows NCCL 2.30's calcCollChunking") {
  // 8 heads x 16 NVLS channels = 128 concurrent pipelines. 2 nodes: 128 KiB, cut to 64 KiB
  // below 4 x 128 x 128 KiB = 64 MiB and to 32 KiB below 128 x 64 KiB = 8 MiB. 4 nodes or
  // more: at most 64 KiB (treeMaxChunkSize).
  testing::CollectiveBench h("dgx-h100-superpod-6144", "h100-sxm5-80gb");
  const auto two = collective::comm_shape(h.topology, h.topology.pack_placement(16));
  const auto four = collective::comm_shape(h.topology, h.topology.pack_placement(32));
  const auto& model = h.engine.model();
  CHECK(model.nvls_tree_chunk_bytes(4 * kOneMiB, two, 8) == 32768.0);
  CHECK(model.nvls_tree_chunk_bytes(8 * kOneMiB, two, 8) == 65536.0);
  CHECK(model.nvls_tree_chunk_bytes(32 * kOneMiB, two, 8) == 65536.0);
  CHECK(model.nvls_tree_chunk_bytes(64 * kOneMiB, two, 8) == 131072.0);
  CHECK(model.nvls_tree_chunk_bytes(1024 * kOneMiB, two, 8) == 131072.0);
  CHECK(model.nvls_tree_chunk_bytes(1024 * kOneMiB, four, 8) == 65536.0);
}

TEST_CASE("the A100 tree's chunk follows NCCL 2.8's computeColl") {
  // 2 nodes of 8: depth 7 + 1 = 8, 16 channels, Simple step 512 KiB. 1 GiB: 1 GiB / (16 x
  // 512 KiB) = 128 >= 64 chunks per channel, kept. 64 MiB: 8 < 64, halved to 128 KiB (not
  // below); 32 >= 32, kept. 16 MiB: 128 KiB, then 8 < 32: 64 KiB. LL128 on 16 nodes of 8:
  // 614400 B steps, nsteps 1 + 4 + 0.8 = 5.8; 16 MiB: halved to 76800 B (the 128 KiB floor),
  // 13 >= 5.8 x 16 / 8 chunks, kept; 15/16 of it is data: 72000 B.
  testing::CollectiveBench a("megascale-a100-12288", "a100-sxm4-80gb");
  const auto two = collective::comm_shape(a.topology, a.topology.pack_placement(16));
  const auto sixteen = collective::comm_shape(a.topology, a.topology.pack_placement(128));
  const auto& model = a.engine.model();
  CHECK(model.tree_chunk_bytes(1024 * kOneMiB, two, CollProtocol::kSimple) == 524288.0);
  CHECK(model.tree_chunk_bytes(64 * kOneMiB, two, CollProtocol::kSimple) == 131072.0);
  CHECK(model.tree_chunk_bytes(16 * kOneMiB, two, CollProtocol::kSimple) == 65536.0);
  CHECK(model.tree_chunk_bytes(16 * kOneMiB, sixteen, CollProtocol::kLL128) == 72000.0);
}

TEST_CASE("the fill is one loop of chunks per network hop, at the algorithm's bandwidth") {
  // A100, 2 nodes, forced Simple tree at 64 MiB: loop 16 x 128 KiB = 2 MiB, 2 network hops
  // (up and down a tree of 2 nodes), algbw = bus bandwidth x 1/2. One node: no network, no fill.
  testing::CollectiveBench a("megascale-a100-12288", "a100-sxm4-80gb");
  const auto& model = a.engine.model();
  const auto c = all_reduce(a.topology.pack_placement(16), 64 * kOneMiB, CollAlgorithm::kTree,
                            CollProtocol::kSimple);
  const auto shape = collective::comm_shape(a.topology, c.gpus);
  const auto cost = model.cost(c, shape, CollAlgorithm::kTree, CollProtocol::kSimple);
  const double algbw = cost.bus_bandwidth.value() * 0.5;
  // The clock holds whole nanoseconds: each fill is the formula's seconds, rounded.
  CHECK(cost.pipeline_fill == Time::from_seconds(4.0 * kOneMiB / algbw));
  CHECK(cost.time.to_seconds() ==
        doctest::Approx((cost.latency + cost.pipeline_fill).to_seconds() + 64 * kOneMiB / algbw)
            .scale(0));
  // Smaller than a loop (the chunk stops at 32 KiB: 16 x 32 KiB = 512 KiB): one chunk per
  // pipeline, of the call's own size.
  const auto small = all_reduce(c.gpus, kOneMiB / 4, CollAlgorithm::kTree, CollProtocol::kSimple);
  const auto s = model.cost(small, shape, CollAlgorithm::kTree, CollProtocol::kSimple);
  CHECK(s.pipeline_fill == Time::from_seconds(2 * kOneMiB / 4 / (s.bus_bandwidth.value() * 0.5)));
  const auto one = all_reduce(a.topology.pack_placement(8), 64 * kOneMiB, CollAlgorithm::kRing);
  const auto one_shape = collective::comm_shape(a.topology, one.gpus);
  CHECK(model.cost(one, one_shape, CollAlgorithm::kRing, CollProtocol::kSimple).pipeline_fill ==
        Time::zero());
  // On Hopper NCCL 2.30's own tree correction stands for the tree's mid sizes: no fill there.
  testing::CollectiveBench h("dgx-h100-superpod-6144", "h100-sxm5-80gb");
  const auto ht = all_reduce(h.topology.pack_placement(16), 64 * kOneMiB);
  const auto hs = collective::comm_shape(h.topology, ht.gpus);
  CHECK(h.engine.model().cost(ht, hs, CollAlgorithm::kTree, CollProtocol::kSimple).pipeline_fill ==
        Time::zero());
}

TEST_CASE("NCCL chooses by its estimate, without the fill, the time has it") {
  // 2 H100 nodes, 8 MiB: NVLSTree by NCCL's estimate (100.9 us, below tree LL128's 106.8),
  // though with its fill it takes 169 us: 64 KiB chunks x 128 pipelines = 8 MiB per loop, 2
  // hops at algbw 461.6 x 16/30 = 246.2 GB/s: 68.1 us.
  testing::CollectiveBench h("dgx-h100-superpod-6144", "h100-sxm5-80gb");
  const auto c = all_reduce(h.topology.pack_placement(16), 8 * kOneMiB);
  const auto p = h.engine.predict(c);
  CHECK(p.nccl_algorithm == CollAlgorithm::kNvlsTree);
  CHECK(p.algorithm == CollAlgorithm::kNvlsTree);
  const auto shape = collective::comm_shape(h.topology, c.gpus);
  const auto cost =
      h.engine.model().cost(c, shape, CollAlgorithm::kNvlsTree, CollProtocol::kSimple);
  CHECK((cost.time - cost.pipeline_fill).to_us() == doctest::Approx(100.9).epsilon(2e-3));
  CHECK(cost.pipeline_fill.to_us() == doctest::Approx(68.1).epsilon(2e-3));
  CHECK(p.time.to_us() == doctest::Approx(cost.time.to_us()).epsilon(1e-3));
}

TEST_CASE("2 H100 nodes: the datasheet profile follows the shipped log, half the peak at 32 MiB") {
  // tests/data/nccl-tests/h100-2node-all_reduce.log (2 x 8 H100, NCCL 2.29.7, 8 MiB-16 GiB),
  // out-of-place. Nothing was fitted to it: the chunk rules are NCCL's, the hops the tree's.
  // Without the fill the model was 43 % fast at 8 MiB and 29 % at 64 MiB.
  testing::CollectiveBench h("dgx-h100-superpod-6144", "h100-sxm5-80gb");
  const auto gpus = h.topology.pack_placement(16);
  const auto rows = log_rows("tests/data/nccl-tests/h100-2node-all_reduce.log");
  REQUIRE(rows.size() == 12);
  double peak = 0.0, at16 = 0.0, at32 = 0.0;
  for (const auto& [size, us] : rows) {
    const auto c = all_reduce(gpus, size);
    const auto p = h.engine.predict(c);
    INFO(size);
    CHECK(p.algorithm == CollAlgorithm::kNvlsTree);
    CHECK(std::fabs(p.time.to_us() / us - 1.0) < 0.05);
    const double bw = busbw_gbps(c, p.time);
    peak = std::max(peak, bw);
    if (size == 16 * kOneMiB) at16 = bw;
    if (size == 32 * kOneMiB) at32 = bw;
  }
  CHECK(at16 < peak / 2);
  CHECK(at32 >= peak / 2);
}

TEST_CASE("send/recv inside a DGX A100 runs at NCCL's point-to-point NVLink rate") {
  // 300 GB/s x 0.72 (nccl-tests#331: 72 % of the raw rate) = 216 GB/s, where the collectives
  // get 240; 4 GiB: 19.88 ms + 12.4 us latency. H100 has no p2p figure: its collectives' 370.8.
  testing::CollectiveBench a("dgx-a100-8", "a100-sxm4-80gb");
  const auto c =
      testing::call(CollectiveOp::kSendRecv, a.topology.pack_placement(8), 4096 * kOneMiB);
  const auto p = a.engine.predict(c);
  CHECK(busbw_gbps(c, p.time) == doctest::Approx(215.9).epsilon(1e-3));
  CHECK(busbw_gbps(c, p.model_time) == doctest::Approx(215.9).epsilon(1e-3));
  testing::CollectiveBench h("dgx-h100-superpod-6144", "h100-sxm5-80gb");
  const auto hc =
      testing::call(CollectiveOp::kSendRecv, h.topology.pack_placement(8), 4096 * kOneMiB);
  CHECK(busbw_gbps(hc, h.engine.predict(hc).time) == doctest::Approx(370.8).epsilon(2e-3));
  // A pipeline send inside a node carries 0.8 / 0.72 of its payload on NVLink; across nodes
  // its payload.
  CHECK(a.engine.wire_bytes(0, 1, Bytes(9.0)).value() == doctest::Approx(10.0));
  CHECK(a.engine.wire_bytes(0, 0, Bytes(9.0)).value() == doctest::Approx(9.0));
  testing::CollectiveBench m("megascale-a100-12288", "a100-sxm4-80gb");
  CHECK(m.engine.wire_bytes(0, 8, Bytes(9.0)).value() == doctest::Approx(9.0));
}

TEST_CASE("send/recv across two Jean Zay nodes: the one rank a node that crosses has a whole NIC") {
  // 8 A100s and 4 Omni-Path NICs a node (100 Gb/s x 0.9937 = 12.42 GB/s). A ring's send/recv
  // over 16 packed GPUs crosses the network from one rank a node, so NCCL's model, like the
  // flow-level time, gives it a whole NIC (it gave nics / gpus, half, until 2026-12-03); an
  // all-to-all sends off the node from all 8 ranks, each at half a NIC.
  testing::CollectiveBench j("jean-zay-a100-384", "a100-sxm4-80gb");
  const double gib = 1024.0 * kOneMiB;
  const auto sr = testing::call(CollectiveOp::kSendRecv, j.topology.pack_placement(16), gib);
  const auto p = j.engine.predict(sr);
  CHECK(p.model_time.to_seconds() ==
        doctest::Approx(gib / 12.421875e9 + 10.0e-6).epsilon(2e-3).scale(0));
  CHECK(p.model_time.to_seconds() == doctest::Approx(p.time.to_seconds()).epsilon(1e-3).scale(0));
  const auto a2a = testing::call(CollectiveOp::kAllToAll, j.topology.pack_placement(16), gib);
  const auto q = j.engine.predict(a2a);
  CHECK(q.model_time.to_seconds() ==
        doctest::Approx(gib / 2.0 / (12.421875e9 / 2.0)).epsilon(2e-3).scale(0));
}

TEST_CASE(
    "2 H100 nodes in a second public log from 8 B to 16 GiB: latency and bandwidth within the "
    "aims") {
  // tests/data/nccl-tests/h100-2node-ib-8B-16G-all_reduce.log (nccl-tests#309: 2 x 8 H100,
  // NDR InfiniBand, NCCL 2.26.2), the faster of out-of-place and in-place (the first 8-byte
  // row is a warm-up outlier, 68.5 us against 24.7). Nothing was fitted to it. Today: 8 B
  // +2.0 %, bus bandwidth MAPE 7.2 % at 1 MiB and up (4 and 8 MiB the worst, +25 and +29 %:
  // NVLSTree where NCCL 2.26 was quicker). Issue 14's aims: 15 % and 10 %.
  testing::CollectiveBench h("dgx-h100-superpod-6144", "h100-sxm5-80gb");
  const auto gpus = h.topology.pack_placement(16);
  std::ifstream in(testing::source("tests/data/nccl-tests/h100-2node-ib-8B-16G-all_reduce.log"));
  double sum = 0.0;
  int large = 0, rows = 0;
  for (std::string line; std::getline(in, line);) {
    std::istringstream s(line);
    double size = 0.0, count = 0.0, root = 0.0, out = 0.0, algbw = 0.0, busbw = 0.0, in_place = 0.0;
    std::string type, op, wrong;
    if (line.empty() || line[0] == '#') continue;
    if (!(s >> size >> count >> type >> op >> root >> out >> algbw >> busbw >> wrong >> in_place)) {
      continue;
    }
    ++rows;
    const double error =
        h.engine.predict(all_reduce(gpus, size)).time.to_us() / std::min(out, in_place) - 1.0;
    INFO(size);
    if (size == 8.0) CHECK(std::fabs(error) < 0.05);
    if (size >= kOneMiB) {
      sum += std::fabs(error);
      ++large;
    }
  }
  CHECK(rows == 32);
  REQUIRE(large == 15);
  CHECK(sum / large < 0.10);
}

TEST_CASE(
    "Hopper: a tree over nodes of one GPU each runs at 0.85 of its bandwidth, as NCCL's TREE "
    "pattern") {
  // 16 H100s, one a node (a DP group of a TP-8 job): NCCL 2.30's search takes the TREE pattern
  // there and tuning.cc multiplies the tree's bus bandwidth by 0.85. 2 MiB: tree LL128 at
  // 273.9 us (245.1 without the factor); 16 MiB: the tree (1,105 us by NCCL's model) loses to
  // the LL128 ring, 957 us (megasim kept the tree, 952 us). With all 8 GPUs of each node the
  // pattern is balanced and nothing changes.
  testing::CollectiveBench h("dgx-h100-superpod-6144", "h100-sxm5-80gb");
  std::vector<int> one_a_node;
  for (int n = 0; n < 16; ++n) one_a_node.push_back(8 * n);
  const auto small = testing::call(CollectiveOp::kAllReduce, one_a_node, 2 * kOneMiB);
  const auto p = h.engine.predict(small);
  CHECK(p.algorithm == CollAlgorithm::kTree);
  CHECK(p.protocol == CollProtocol::kLL128);
  CHECK(p.model_time.to_us() == doctest::Approx(273.9).epsilon(2e-3));
  const auto large = testing::call(CollectiveOp::kAllReduce, one_a_node, 16 * kOneMiB);
  const auto q = h.engine.predict(large);
  CHECK(q.algorithm == CollAlgorithm::kRing);
  CHECK(q.model_time.to_us() == doctest::Approx(957.2).epsilon(2e-3));
}

TEST_CASE(
    "NVLSTree across nodes searches the inter-node speeds, each node alone, the slowest taken") {
  // Two H100 nodes holding 2 GPUs each: the search across nodes tries sm90SpeedArrayInter, so
  // 48 GB/s a channel (intra's 60 made NVLSTree's bus bandwidth 102, above the ring's 99.4,
  // where NCCL's is 81.6): NCCL runs the ring. With all 8 GPUs a node, 40 in both arrays:
  // unchanged, NVLSTree at 441 GB/s busbw for 1 GiB.
  testing::CollectiveBench h("dgx-h100-superpod-6144", "h100-sxm5-80gb");
  const auto two_a_node = testing::call(CollectiveOp::kAllReduce, {0, 1, 8, 9}, 1024 * kOneMiB);
  CHECK(h.engine.predict(two_a_node).algorithm == CollAlgorithm::kRing);
  const auto full =
      testing::call(CollectiveOp::kAllReduce, h.topology.pack_placement(16), 1024 * kOneMiB);
  const auto p = h.engine.predict(full);
  CHECK(p.algorithm == CollAlgorithm::kNvlsTree);
  CHECK(busbw_gbps(full, p.time) == doctest::Approx(441.06).epsilon(1e-3));
}
