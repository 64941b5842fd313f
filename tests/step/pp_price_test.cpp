// Prices follow where the ranks sit: a PP hand-off takes a measured send/recv table only where
// the table's shape is the hand-off's (two stages on one node cross NVLink, which a table
// measured across two nodes does not describe; until 2026-12-03 every hand-off looked up the
// two-node table), and a TP group split over two nodes is priced across them.
#include <doctest/doctest.h>

#include "pricer_fixture.h"

using namespace megasim;

TEST_CASE_FIXTURE(test::PricerFixture,
                  "PP price: a hand-off inside a node does not take a two-node send/recv table") {
  plan.tp = 4;
  plan.pp = 2;
  plan.dp = 1;
  plan.global_batch = 8;
  plan.sequence_parallel = true;
  const workload::StageProgram s = workload::build_stage(model, plan, 0);
  // A send/recv table across two nodes, 1 s at every size around the hand-off's.
  hw::DeviceProfile profile = device.profile;
  for (const double bytes : {s.pp_send_bytes.value() / 2, s.pp_send_bytes.value() * 2}) {
    hw::CollectiveMeasurement m;
    m.op = hw::CollectiveOp::kSendRecv;
    m.ranks = 2;
    m.nodes = 2;
    m.size = Bytes(bytes);
    m.time = Time::from_seconds(1.0);
    profile.collective_table.push_back(m);
  }
  const hw::KernelCostModel measured_kernels(profile);
  const auto price_with = [&](const hw::KernelCostModel& k) {
    const step::SystemOptions system = io::load_system_preset("megatron-core");
    step::Pricer pricer(topology, topology.pack_placement(static_cast<int>(plan.gpus())), constants,
                        k, plan, system);
    step::PricingTally tally;
    return pricer.price(s, tally).pp_activation;
  };
  // Both stages sit on node 0 (TP 4 × PP 2 = 8 GPUs): NVLink prices the hand-off either way.
  CHECK(price_with(measured_kernels) == price_with(kernels));
  CHECK(price_with(measured_kernels).to_seconds() < 1e-2);
}

TEST_CASE_FIXTURE(test::PricerFixture,
                  "TP price: a group a TP size splits over two nodes is priced across them") {
  // 175B (96 heads) at TP 6 on 8-GPU nodes: with DP 4 the second group holds GPUs 6-11, two on
  // node 0 and four on node 1, and its collectives cross the fabric; with DP 1 the one group
  // sits inside node 0. Until 2026-12-03 both took the intra-node price of group 0.
  model = io::load_model(kSource + "/models/korthikanti-175b.json");
  model.layers = 2;
  plan.tp = 6;
  plan.pp = 1;
  plan.sequence_parallel = true;
  const auto tp_time = [&](int dp) {
    plan.dp = dp;
    plan.global_batch = dp;
    const workload::StageProgram s = workload::build_stage(model, plan, 0);
    const step::StageCosts c = price(s, [](step::SystemOptions& o) { o.tp_overlap = false; });
    return c.forward_tp[0].to_seconds();
  };
  const double inside = tp_time(1);
  const double split = tp_time(4);
  CHECK(inside > 0.0);
  CHECK(split > 2.0 * inside);
}

TEST_CASE_FIXTURE(test::PricerFixture, "TP price: each stage's groups are priced where they sit") {
  // TP 6 × PP 2 × DP 1 on 8-GPU nodes: stage 0's group holds GPUs 0-5 (node 0), stage 1's
  // GPUs 6-11 (nodes 0 and 1). Until 2026-12-03 stage 0's placement stood for every stage.
  model = io::load_model(kSource + "/models/korthikanti-175b.json");
  model.layers = 2;
  plan.tp = 6;
  plan.pp = 2;
  plan.dp = 1;
  plan.global_batch = 2;
  plan.sequence_parallel = true;
  const step::SystemOptions system = [] {
    step::SystemOptions o = io::load_system_preset("megatron-core");
    o.tp_overlap = false;
    return o;
  }();
  step::Pricer pricer(topology, topology.pack_placement(static_cast<int>(plan.gpus())), constants,
                      kernels, plan, system);
  const auto tp_time = [&](int stage) {
    step::PricingTally tally;
    return pricer.price(workload::build_stage(model, plan, stage), tally)
        .forward_tp[0]
        .to_seconds();
  };
  const double inside = tp_time(0);
  CHECK(inside > 0.0);
  CHECK(tp_time(1) > 2.0 * inside);
  CHECK(tp_time(0) == inside);  // the split stage's price is its own, not stage 0's
}
