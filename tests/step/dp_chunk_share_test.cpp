// How the pricer splits a stage's DP collectives over its model chunks: by parameters, so a
// chunk that holds only the embedding (Llama 3's first stage) reduces the embedding's gradients
// when its backward ends.
#include <doctest/doctest.h>

#include <numeric>

#include "pricer_fixture.h"

using namespace megasim;

namespace {
struct ShareFixture : test::PricerFixture {
  ShareFixture() {
    plan.tp = 8;
    plan.pp = 4;
    plan.vpp = 2;
    plan.dp = 4;
    plan.global_batch = 32;
    plan.sequence_parallel = true;
    plan.distributed_optimizer = true;
    // 48 layers over 8 virtual stages; stage 0's first chunk holds only the embedding.
    plan.layer_split = {0, 6, 6, 6, 12, 6, 6, 6};
  }
};
}  // namespace

TEST_CASE_FIXTURE(ShareFixture,
                  "DP chunk shares: each chunk's reduce-scatter is its share of the parameters") {
  const workload::StageProgram s = workload::build_stage(model, plan, 0);
  const step::StageCosts c = price(s, [](step::SystemOptions&) {});
  REQUIRE(c.dp_reduce_scatter.size() == 2);
  REQUIRE(s.chunks[0].layers.count == 0);
  const double total = std::accumulate(c.dp_reduce_scatter.begin(), c.dp_reduce_scatter.end(), 0.0,
                                       [](double a, Time t) { return a + t.to_seconds(); });
  const double embedding_share =
      static_cast<double>(s.chunks[0].parameters) / static_cast<double>(s.parameters_per_rank);
  CHECK(embedding_share > 0.05);  // the 51,200 × 6,144 embedding beside 12 layers of 22B
  CHECK(c.dp_reduce_scatter[0].to_seconds() == doctest::Approx(embedding_share * total).scale(0));
  CHECK(c.dp_all_gather[0].to_seconds() > 0.0);
}

TEST_CASE_FIXTURE(test::PricerFixture,
                  "DP price: a bucket within 2x of a priced one scales its bandwidth part only") {
  // 192 DP ranks, one per node: a 64 MiB reduce-scatter's ring is 40 % latency, so scaling the
  // whole price to 128 MiB (as before 2026-12-03) was 25 % over simulating it.
  plan.tp = 8;
  plan.dp = 192;
  plan.global_batch = 192;
  const auto op = [](double mib) {
    return workload::CommOp{hw::CollectiveOp::kReduceScatter, workload::Group::kDp,
                            Bytes(mib * 1024 * 1024)};
  };
  const step::SystemOptions system = io::load_system_preset("megatron-core");
  const auto placement = topology.pack_placement(static_cast<int>(plan.gpus()));
  step::Pricer scaled(topology, placement, constants, kernels, plan, system);
  const Time small = step::PricerProbe::dp(scaled, op(64));
  const Time from_scaling = step::PricerProbe::dp(scaled, op(128));
  step::Pricer alone(topology, placement, constants, kernels, plan, system);
  const Time simulated = step::PricerProbe::dp(alone, op(128));
  CHECK(simulated.to_seconds() < 1.8 * small.to_seconds());  // the latency is not doubled
  CHECK(from_scaling.to_seconds() ==
        doctest::Approx(simulated.to_seconds()).epsilon(0.03).scale(0));
}
