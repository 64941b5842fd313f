// An LL or LL128 call's pace is the GPUs' (CollectiveEngine::pace_by_protocol): its flows carry
// the protocol's wire bytes at a capped rate, so beside other traffic, or where ECMP lays two of
// its channels on one uplink, it takes only the link capacity its pace uses.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "collective_bench.h"
#include "io/device_profile_loader.h"

using namespace megasim;
using hw::CollAlgorithm;
using hw::CollectiveOp;
using hw::CollProtocol;
using testing::all_reduce;

namespace {

struct Fixture : testing::CollectiveBench {
  Fixture(const std::string& cluster, const std::string& profile,
          net::Routing routing = net::Routing::kEcmp)
      : CollectiveBench(cluster, profile, routing) {}
};

// The first `nodes` x `per_node` GPUs, `per_node` of each node from its first.
std::vector<int> gpus(const net::Topology& t, int nodes, int per_node) {
  std::vector<int> out;
  const int k = t.spec().node.gpus;
  for (int n = 0; n < nodes; ++n)
    for (int g = 0; g < per_node; ++g) out.push_back(n * k + g);
  return out;
}

}  // namespace

TEST_CASE("an LL all-reduce beside a large Simple one on one DGX A100 keeps its pace") {
  // The LL ring runs far below NVLink (its pace is the GPUs'): beside a 1 GiB Simple ring on the
  // same GPUs it takes its capped share and ends as it would alone. Carried as wire bytes
  // sized to its pace (before 2026-12-03) it took half of every port and ran about twice as
  // long.
  Fixture f("dgx-a100-8", "a100-sxm4-80gb");
  const auto ll =
      all_reduce(gpus(f.topology, 1, 8), 1 << 20, CollAlgorithm::kRing, CollProtocol::kLL);
  const auto big =
      all_reduce(gpus(f.topology, 1, 8), 1073741824.0, CollAlgorithm::kRing, CollProtocol::kSimple);
  const Time alone = f.engine.predict(ll).time;
  Time ll_done, big_done;
  f.engine.launch(big, [&] { big_done = f.sim.now(); });
  f.engine.launch(ll, [&] { ll_done = f.sim.now(); });
  f.sim.run();
  MESSAGE("LL 1 MiB alone " << alone.to_seconds() * 1e6 << " us, beside 1 GiB Simple "
                            << ll_done.to_seconds() * 1e6 << " us");
  CHECK(ll_done > Time::zero());
  CHECK(ll_done.to_seconds() <= 1.02 * alone.to_seconds());
  CHECK(big_done > ll_done);
}

TEST_CASE("on a hashed fabric an LL tree runs at NCCL's rate, as sprayed") {
  // 2,048 H100s of a SuperPOD (`megasim collective`'s placement), tree LL at 256 KiB: hashing
  // lays channels on shared uplinks, but at the LL pace two of them fit on one. It took 275 us
  // hashed against 155 sprayed before 2026-12-03; NCCL's model says 159.
  Time t[2];
  int i = 0;
  for (auto routing : {net::Routing::kEcmp, net::Routing::kSpray}) {
    Fixture f("dgx-h100-superpod-6144", "h100-sxm5-80gb", routing);
    // The profile's fitted bandwidth scales, as `megasim collective` applies them.
    f.constants.scale = hw::collective_scale(
        io::load_device_profile(testing::source("calibrate/profiles/h100-sxm5-80gb.json"))
            .profile.collective_scales);
    const auto c = all_reduce(f.topology.pack_placement(2048), 262144.0, CollAlgorithm::kTree,
                              CollProtocol::kLL);
    const auto p = f.engine.predict(c);
    t[i++] = p.time;
    CHECK(p.time.to_seconds() == doctest::Approx(p.model_time.to_seconds()).epsilon(0.01).scale(0));
  }
  CHECK(t[0].to_seconds() == doctest::Approx(t[1].to_seconds()).epsilon(0.01).scale(0));
}

TEST_CASE("a coflow of an LL call is capped at its pace, one of a Simple call is not") {
  // The coflow moves its largest member's bytes; its cap is the rate that moves them in the
  // model's bandwidth time, the call's time less its latency term.
  Fixture f("megascale-a100-12288", "a100-sxm4-80gb");
  const auto ll =
      all_reduce(gpus(f.topology, 16, 1), 65536.0, CollAlgorithm::kRing, CollProtocol::kLL);
  const auto simple =
      all_reduce(gpus(f.topology, 16, 1), 1 << 26, CollAlgorithm::kRing, CollProtocol::kSimple);
  const auto c = f.engine.coflow({ll});
  const auto shape = collective::comm_shape(f.topology, ll.gpus);
  const auto cost = f.engine.model().cost(ll, shape, CollAlgorithm::kRing, CollProtocol::kLL);
  CHECK(c.max_rate.value() ==
        doctest::Approx(c.bytes.value() / (cost.time - cost.latency).to_seconds()).epsilon(1e-9));
  CHECK(std::isinf(f.engine.coflow({simple}).max_rate.value()));
  // Run as one coflow, alone, the call takes the model's time.
  f.engine.use_coflows(true);
  Time done;
  f.engine.launch(ll, [&] { done = f.sim.now(); });
  f.sim.run();
  CHECK(done.to_seconds() == doctest::Approx(cost.time.to_seconds()).epsilon(0.01).scale(0));
}
