// NCCL 2.23+'s PAT on DGX H100 nodes (the "pat" group of calibrate/profiles/h100-sxm5-80gb.json):
// all-gather and reduce-scatter over one GPU a node, chosen where NCCL's estimate is least.
// Every figure is worked by hand from the profile's constants in the comment above its check.
#include <doctest/doctest.h>

#include <vector>

#include "collective_bench.h"
#include "collective/collective_engine.h"
#include "engine/error.h"

using namespace megasim;
using megasim::hw::CollAlgorithm;
using megasim::hw::CollectiveOp;
using megasim::hw::CollProtocol;
using megasim::testing::call;

namespace {

constexpr double kOneGiB = 1073741824.0;
constexpr double kTwoMiB = 2097152.0;

using testing::Hopper;

// The first GPU of each of `nodes` consecutive 8-GPU nodes: a DP group of a TP-8 job.
std::vector<int> one_a_node(int nodes) {
  std::vector<int> g;
  for (int n = 0; n < nodes; ++n) g.push_back(8 * n);
  return g;
}

}  // namespace

TEST_CASE("PAT: all-gather over one GPU a node, by NCCL's estimate, small and mid sizes only") {
  // 16 nodes: latency 8.0 + log2(16) x 14 / 3.5 + 16 x 2.8 = 8 + 16 + 44.8 = 68.8 us (14: the
  // tree's Simple network latency, NCCL's with one rank a node). Bus bandwidth: one 400 Gb/s NIC
  // x 0.9937 = 49.685 GB/s, x 0.75 = 37.264 GB/s, taken as the algorithm bandwidth.
  Hopper h;
  const auto g = one_a_node(16);
  auto p = h.engine.predict(call(CollectiveOp::kAllGather, g, 8));
  CHECK(p.algorithm == CollAlgorithm::kPat);
  CHECK(p.protocol == CollProtocol::kSimple);
  CHECK(p.model_time.to_us() == doctest::Approx(68.8).epsilon(1e-4));
  // 2 MiB: 68.8 + 2,097,152 / 37.264e9 s = 68.8 + 56.28 = 125.08 us; the flows, laid on the
  // ring's and carrying the model's bandwidth term, take as long on idle links.
  p = h.engine.predict(call(CollectiveOp::kAllGather, g, kTwoMiB));
  CHECK(p.algorithm == CollAlgorithm::kPat);
  CHECK(p.model_time.to_us() == doctest::Approx(125.08).epsilon(1e-3));
  CHECK(p.time.to_us() == doctest::Approx(125.08).epsilon(1e-2));
  // The ring LL's 8 B latency would be 6.6 + 15 x 5.0 = 81.6 us; at 1 GiB the ring's Simple
  // bandwidth (no x 0.75) wins: 8.4 + 15 x 14 = 218.4 us + 1 GiB x 15/16 / 49.685 GB/s.
  p = h.engine.predict(call(CollectiveOp::kAllGather, g, kOneGiB));
  CHECK(p.algorithm == CollAlgorithm::kRing);
  CHECK(p.model_time.to_us() == doctest::Approx(218.4 + kOneGiB * 15 / 16 / 49.685e3).epsilon(1e-3));
  // A reduce-scatter alike.
  CHECK(h.engine.predict(call(CollectiveOp::kReduceScatter, g, 8)).algorithm == CollAlgorithm::kPat);
}

TEST_CASE("PAT: never with two GPUs a node, for an all-reduce, or on a profile without it") {
  Hopper h;
  std::vector<int> two_a_node;
  for (int n = 0; n < 8; ++n) {
    two_a_node.push_back(8 * n);
    two_a_node.push_back(8 * n + 1);
  }
  CHECK(h.engine.predict(call(CollectiveOp::kAllGather, two_a_node, 8)).algorithm !=
        CollAlgorithm::kPat);
  CHECK_THROWS_AS(h.engine.predict(call(CollectiveOp::kAllGather, two_a_node, 8, CollAlgorithm::kPat)),
                  InputError);
  CHECK_THROWS_AS(h.engine.predict(call(CollectiveOp::kAllReduce, one_a_node(4), 8, CollAlgorithm::kPat)),
                  InputError);
  CHECK_THROWS_AS(h.engine.predict(call(CollectiveOp::kAllGather, one_a_node(4), 8, CollAlgorithm::kPat,
                                        CollProtocol::kLL)),
                  InputError);
  // Forced where it runs: the same cost as NCCL's own pick.
  CHECK(h.engine.predict(call(CollectiveOp::kAllGather, one_a_node(16), 8, CollAlgorithm::kPat))
            .model_time.to_us() == doctest::Approx(68.8).epsilon(1e-4));
  // The A100 profile is NCCL 2.7.5's: no PAT.
  Hopper a("megascale-a100-12288", "a100-sxm4-80gb");
  CHECK(a.engine.predict(call(CollectiveOp::kAllGather, one_a_node(16), 8)).algorithm ==
        CollAlgorithm::kRing);
  CHECK_THROWS_AS(a.engine.predict(call(CollectiveOp::kAllGather, one_a_node(16), 8, CollAlgorithm::kPat)),
                  InputError);
}
