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
