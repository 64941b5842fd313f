// NCCL 2.7.5's A100 tuning model where it differs from the generic table (calibrate/profiles/
// a100-sxm4-80gb.json, src/graph/tuning.cc at tag v2.7.5-1): the tree's one-node caps, the
// mid-size tree correction in NCCL's choice, the LL128 ring with one GPU a node and the LL ring
// of a one-node all-gather. Every figure is worked by hand from the profile in the comment above
// its check (found by a review against NCCL's code on 2026-12-03).
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <fstream>
#include <string>
#include <vector>

#include "collective_bench.h"

using namespace megasim;
using megasim::hw::CollAlgorithm;
using megasim::hw::CollectiveOp;
using megasim::hw::CollProtocol;
using megasim::testing::all_reduce;
using megasim::testing::call;

namespace {

struct Ampere : testing::CollectiveBench {
  explicit Ampere(const std::string& cluster) : CollectiveBench(cluster, "a100-sxm4-80gb") {}
  double bus_gbps(const collective::CollectiveCall& c, CollAlgorithm a, CollProtocol p) const {
    const auto shape = collective::comm_shape(topology, c.gpus);
    return engine.model().bus_bandwidth(shape, a, p, c.op).value() / 1e9;
  }
  double model_us(const collective::CollectiveCall& c, CollAlgorithm a, CollProtocol p) const {
    const auto shape = collective::comm_shape(topology, c.gpus);
    return engine.model().cost(c, shape, a, p).time.to_us();
  }
};

}  // namespace

TEST_CASE("ampere: the LL128 tree on one node is capped at 130 x 7/9 GB/s") {
  // min(busBw x 0.9, 130) x 7/9: 235 x 0.9 x 7/9 = 164.5 passes 101.11, so 101.11 GB/s. Until
  // 2026-12-03 the two-node cap (130 x 0.915 = 118.95) stood for one node.
  Ampere a("dgx-a100-8");
  const auto c = all_reduce(a.topology.pack_placement(8), 1048576.0);
  CHECK(a.bus_gbps(c, CollAlgorithm::kTree, CollProtocol::kLL128) == doctest::Approx(101.11));
  CHECK(a.bus_gbps(c, CollAlgorithm::kTree, CollProtocol::kSimple) == doctest::Approx(110.0));
}

TEST_CASE("ampere: NCCL 2.7.5 picks the LL ring for a 1 MiB all-reduce on one DGX A100") {
  // Tree LL128: 4.4 + 2 x 7 x 1.2 = 21.2 us and 1 MiB / (101.11 / 2 x 0.6 correction) = 34.6
  // us: 55.8 us. Ring LL: 3.6 + 14 x 0.47 = 10.18 us and 1 MiB / (235 / 4 x 8 / 14) = 31.2
  // us: 41.4 us. Before the one-node cap and the correction the tree took it at 38.8 us.
  Ampere a("dgx-a100-8");
  const auto c = all_reduce(a.topology.pack_placement(8), 1048576.0);
  const auto p = a.engine.predict(c);
  CHECK(p.algorithm == CollAlgorithm::kRing);
  CHECK(p.protocol == CollProtocol::kLL);
  CHECK(p.time.to_us() == doctest::Approx(41.41).epsilon(1e-3));
  CHECK(a.model_us(c, CollAlgorithm::kRing, CollProtocol::kLL) < 55.8);
}

TEST_CASE("ampere: the tree correction moves NCCL's pick, not the tree's time") {
  // 128 GPUs on 16 nodes, 320,000 B: NCCL's estimate slows tree LL by its correction (0.4 at
  // log2(5000) = 12) and tree LL128 by 0.6, so LL128 wins the choice at this size; the time of
  // a forced tree is the same with and without the correction (the pipeline's fill times it).
  Ampere a("megascale-a100-12288");
  const auto c = all_reduce(a.topology.pack_placement(128), 320000.0);
  const auto p = a.engine.predict(c);
  CHECK(p.algorithm == CollAlgorithm::kTree);
  CHECK(p.protocol == CollProtocol::kLL128);
  Ampere without("megascale-a100-12288");
  without.constants.has_tree_correction = false;
  CHECK(without.model_us(c, CollAlgorithm::kTree, CollProtocol::kLL) ==
        doctest::Approx(a.model_us(c, CollAlgorithm::kTree, CollProtocol::kLL)));
  CHECK(without.engine.predict(c).protocol == CollProtocol::kLL);  // it held LL to 400 KB
}

TEST_CASE("ampere: the LL128 ring with one GPU a node runs at 0.7 of the link") {
  // 4 GPUs, one a node: ppn 1 < 2, so busBw 24.5 x 0.7 (one 200G NIC at 0.98) = 17.15 GB/s,
  // which an all-gather keeps (its LL128 cap, 18.3 GB/s x one channel, is above).
  Ampere a("megascale-a100-12288");
  std::vector<int> spread;
  for (int n = 0; n < 4; ++n) spread.push_back(n * 8);
  const auto gather = call(CollectiveOp::kAllGather, spread, 2097152.0);
  CHECK(a.bus_gbps(gather, CollAlgorithm::kRing, CollProtocol::kLL128) == doctest::Approx(17.15));
  // Eight a node keep 0.92: 196 x 0.92 = 180.3, under the all-gather's 18.3 x 8 = 146.4 cap.
  const auto packed = call(CollectiveOp::kAllGather, a.topology.pack_placement(16), 2097152.0);
  CHECK(a.bus_gbps(packed, CollAlgorithm::kRing, CollProtocol::kLL128) == doctest::Approx(146.4));
}

TEST_CASE("ampere: LL128 is capped per channel of NCCL's search graph, by collective") {
  // NCCL 2.7.5 ll128MaxBwPerCh: all-reduce 16.7, reduce-scatter 15.2 GB/s a channel; the
  // graph holds one channel a NIC across nodes and 12 on one node. Until 2026-12-07 megasim
  // had no such cap, and mid-size LL128 calls ran 5-33 % under NCCL's model (a review).
  Ampere a("megascale-a100-12288");
  std::vector<int> spread;
  for (int n = 0; n < 4; ++n) spread.push_back(n * 8);
  // One GPU a node: ring min(17.15, 16.7) = 16.7; 2 MiB all-reduce: 34 us of latency and
  // 2 MiB / (16.7 x 4/6) = 188.4 us, 222.4 us. Tree: min(24.5 x 0.9 x 0.915 = 20.18, 16.7 x
  // 7/9 = 12.99).
  const auto c = all_reduce(spread, 2097152.0, CollAlgorithm::kRing, CollProtocol::kLL128);
  CHECK(a.bus_gbps(c, CollAlgorithm::kRing, CollProtocol::kLL128) == doctest::Approx(16.7));
  CHECK(a.model_us(c, CollAlgorithm::kRing, CollProtocol::kLL128) ==
        doctest::Approx(222.4).epsilon(1e-3));
  CHECK(a.bus_gbps(c, CollAlgorithm::kTree, CollProtocol::kLL128) ==
        doctest::Approx(16.7 * 7.0 / 9.0));
  const auto scatter = call(CollectiveOp::kReduceScatter, spread, 2097152.0);
  CHECK(a.bus_gbps(scatter, CollAlgorithm::kRing, CollProtocol::kLL128) == doctest::Approx(15.2));
  // Whole nodes: 196 x 0.92 = 180.3 against 16.7 x 8 = 133.6.
  const auto packed = all_reduce(a.topology.pack_placement(16), 2097152.0);
  CHECK(a.bus_gbps(packed, CollAlgorithm::kRing, CollProtocol::kLL128) == doctest::Approx(133.6));
  // One node: 235 x 0.92 = 216.2 against 15.2 x 12 = 182.4, so an 8 MiB reduce-scatter goes
  // Simple, as NCCL's model has it: 8.4 + 7 x 3.4 = 32.2 us and 8 MiB x 7/8 / 235 = 31.2 us.
  Ampere one("dgx-a100-8");
  const auto node = call(CollectiveOp::kReduceScatter, one.topology.pack_placement(8), 8388608.0);
  CHECK(one.bus_gbps(node, CollAlgorithm::kRing, CollProtocol::kLL128) == doctest::Approx(182.4));
  const auto pick = one.engine.predict(node);
  CHECK(pick.protocol == CollProtocol::kSimple);
  CHECK(pick.time.to_us() == doctest::Approx(63.43).epsilon(1e-3));
}

TEST_CASE(
    "ampere: a one-node all-gather's LL ring runs at a third of the link, all-reduce at a "
    "quarter") {
  // 235 / 3 = 78.3 GB/s for all-gather (and reduce-scatter, broadcast); 235 / 4 = 58.75 for
  // all-reduce. 512 KiB all-gather: 3.6 + 7 x 0.47 = 6.89 us and 512 KiB / (78.3 x 8/7) = 5.86
  // us, 12.75 us.
  Ampere a("dgx-a100-8");
  const auto gpus = a.topology.pack_placement(8);
  const auto gather = call(CollectiveOp::kAllGather, gpus, 524288.0);
  CHECK(a.bus_gbps(gather, CollAlgorithm::kRing, CollProtocol::kLL) ==
        doctest::Approx(235.0 / 3.0));
  CHECK(a.model_us(gather, CollAlgorithm::kRing, CollProtocol::kLL) ==
        doctest::Approx(12.75).epsilon(1e-3));
  const auto reduce = all_reduce(gpus, 524288.0);
  CHECK(a.bus_gbps(reduce, CollAlgorithm::kRing, CollProtocol::kLL) ==
        doctest::Approx(235.0 / 4.0));
  // Across nodes every operation keeps a quarter (eight 200G NICs at 0.98: 196 GB/s).
  Ampere two("megascale-a100-12288");
  const auto wide = call(CollectiveOp::kAllGather, two.topology.pack_placement(16), 524288.0);
  CHECK(two.bus_gbps(wide, CollAlgorithm::kRing, CollProtocol::kLL) == doctest::Approx(196.0 / 4));
}

TEST_CASE(
    "ampere: a node's ranks drive the NICs of the rails they sit on, in the model and flows") {
  // Jean Zay: 4 NICs for 8 GPUs, GPUs 2k and 2k + 1 on rail k. The first 4 GPUs of two nodes
  // sit on rails 0, 0, 1, 1: two NICs' worth, where the all-to-all model gave each sender a
  // NIC (4) until 2026-12-05 and took half the flows' time. The first 3 sit on rails 0, 0, 1:
  // 1.5 NICs' worth, where the ring's model counted 1 (its share rounded down) and took a third
  // more than the flows.
  Ampere a("jean-zay-a100-384");
  const auto first = [&](int per_node) {
    std::vector<int> gpus;
    for (int node = 0; node < 2; ++node) {
      for (int i = 0; i < per_node; ++i) gpus.push_back(node * 8 + i);
    }
    return gpus;
  };
  const auto a2a = call(CollectiveOp::kAllToAll, first(4), 1073741824.0);
  CHECK(a.engine.predict(a2a).time.to_us() ==
        doctest::Approx(a.model_us(a2a, CollAlgorithm::kDirect, CollProtocol::kSimple))
            .epsilon(0.02));
  // Nodes of 8, 8 and 4 Selene GPUs: the full nodes' messages to the third leave by its four
  // rails, the busiest NICs (the model charged each sender a NIC's share of its node until
  // 2026-12-05: a third over the flows).
  Ampere selene("selene-a100-4480");
  std::vector<int> uneven(20);
  for (int i = 0; i < 20; ++i) uneven[static_cast<std::size_t>(i)] = i;
  const auto a2a_uneven = call(CollectiveOp::kAllToAll, uneven, 1073741760.0);
  CHECK(selene.engine.predict(a2a_uneven).time.to_us() ==
        doctest::Approx(selene.model_us(a2a_uneven, CollAlgorithm::kDirect, CollProtocol::kSimple))
            .epsilon(0.02));
  const auto shape = collective::comm_shape(a.topology, first(3));
  CHECK(shape.min_nic_share == doctest::Approx(1.5));
  const auto ring = all_reduce(first(3), 1073741824.0, CollAlgorithm::kRing, CollProtocol::kSimple);
  const double flows = a.engine.predict(ring).time.to_us();
  const double model = a.model_us(ring, CollAlgorithm::kRing, CollProtocol::kSimple);
  CHECK(model < flows * 1.15);
  CHECK(model > flows * 0.85);
}

TEST_CASE("ampere: the 40 GB A100's NCCL constants are the 80 GB one's") {
  // One chip, one NCCL: the 40 GB profile's section is a copy, and missed the LL128 caps the
  // day they came (a review, 2026-12-07).
  const auto section = [](const std::string& name) {
    std::ifstream in(std::string(MEGASIM_SOURCE_DIR) + "/calibrate/profiles/" + name + ".json");
    return nlohmann::json::parse(in).at("collective");
  };
  CHECK(section("a100-sxm4-40gb") == section("a100-sxm4-80gb"));
}
