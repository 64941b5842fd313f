// Context parallelism (plan.cp) as the pricer runs it: the K/V all-gather before each layer's
// attention and, in the backward, the all-gather again and the dK/dV reduce-scatter, on the CP
// group; exposed (Llama 3's all-gather first) or beside the attention, pipelined over the cp
// ring steps (Transformer Engine's AttnFuncWithCPAndKVP2P).
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>
#include <variant>

#include "pricer_fixture.h"

using namespace megasim;
using workload::Group;
using workload::Op;

namespace {

// TP 8 × CP 2 × PP 4: 64 GPUs of the MegaScale cluster, 12 layers a stage; TP fills a node, so
// the two CP ranks are on two nodes.
struct Fixture : test::PricerFixture {
  Fixture() {
    plan.tp = 8;
    plan.cp = 2;
    plan.pp = 4;
    plan.global_batch = 8;
    plan.sequence_parallel = true;
  }
  workload::StageProgram stage() const { return workload::build_stage(model, plan, 1); }
  step::StageCosts price(const workload::StageProgram& s, bool overlap) const {
    return PricerFixture::price(s,
                                [&](step::SystemOptions& system) { system.cp_overlap = overlap; });
  }
};

bool is_cp(const Op& op) { return op.comm() && op.comm()->group == Group::kCp; }

workload::StageProgram without_exchange(workload::StageProgram s) {
  for (auto& chunk : s.chunks) {
    std::erase_if(chunk.forward, is_cp);
    std::erase_if(chunk.backward, is_cp);
  }
  return s;
}

}  // namespace

TEST_CASE("context parallelism: the K/V exchange of every layer, sized by hand") {
  Fixture f;
  const workload::StageProgram s = f.stage();
  // Per layer, the whole sequence's K and V of this TP rank's 8 heads of 96:
  // b·s·2·(8·96)·2 B = 1 · 2048 · 2 · 768 · 2 = 6,291,456 B (nccl-tests' all-gather size).
  int forward = 0, gathers = 0, scatters = 0;
  for (const Op& op : s.chunks[0].forward) {
    if (!is_cp(op)) continue;
    ++forward;
    CHECK(op.comm()->kind == hw::CollectiveOp::kAllGather);
    CHECK(op.comm()->size.value() == 6291456.0);
  }
  for (const Op& op : s.chunks[0].backward) {
    if (!is_cp(op)) continue;
    (op.comm()->kind == hw::CollectiveOp::kAllGather ? gathers : scatters) += 1;
    CHECK(op.comm()->size.value() == 6291456.0);
  }
  CHECK(forward == 12);
  CHECK(gathers == 12);
  CHECK(scatters == 12);
  // Every GEMM has this rank's 1,024 tokens; the attention kernel a cp of 2.
  int qkv = 0, attention = 0;
  for (const Op& op : s.chunks[0].forward) {
    if (const auto* k = op.kernel()) {
      if (const auto* g = std::get_if<hw::GemmShape>(k); g && op.name.find("qkv") != std::string::npos) {
        CHECK(g->m == 1024);
        ++qkv;
      }
      if (const auto* a = std::get_if<hw::AttentionShape>(k)) {
        CHECK(a->cp == 2);
        ++attention;
      }
    }
  }
  CHECK(qkv == 12);  // one a layer, as the exchanges above
  CHECK(attention == 12);
}

TEST_CASE("context parallelism: the exchange exposed, or beside the attention in cp steps") {
  Fixture f;
  const workload::StageProgram s = f.stage();
  const workload::StageProgram bare = without_exchange(s);
  const step::StageCosts exposed = f.price(s, false), hidden = f.price(s, true),
                         none = f.price(bare, false);
  // Exposed: each of the 12 layers' forward waits for its all-gather, c, counted as exposed
  // model-parallel time.
  const Time c = (exposed.forward[0] - none.forward[0]) / 12;
  CHECK(exposed.forward_tp[0] - none.forward_tp[0] == exposed.forward[0] - none.forward[0]);
  // c moves 3 MiB each way between two nodes over one 200 Gb/s NIC (25 GB/s): at least 126 µs
  // on the wire, and NCCL's ring of two ranks adds its latencies, well under 100 µs.
  CHECK(c.to_seconds() > 3.0 * 1024 * 1024 / 25e9);
  CHECK(c.to_seconds() < 3.0 * 1024 * 1024 / 25e9 * 1.25 + 100e-6);
  // Beside the attention a, slowed by the profile's interference to a': a layer costs
  // max(a', c) + min(a', c)/2 instead of a + c.
  hw::AttentionShape shape;
  for (const Op& op : s.chunks[0].forward) {
    if (const auto* k = op.kernel(); k && std::holds_alternative<hw::AttentionShape>(*k)) {
      shape = std::get<hw::AttentionShape>(*k);
    }
  }
  shape.flash_version = 2;  // megatron-core runs FlashAttention-2 (efficient operators)
  const Time a = f.kernels.cost(hw::KernelShape{shape}).time;
  const Time slowed = a * f.kernels.profile().interference.compute_slowdown;
  const Time pair = std::max(slowed, c) + Time::from_ns(std::min(slowed, c).ns() / 2);
  const Time per_layer = (hidden.forward[0] - none.forward[0]) / 12;
  CHECK(std::abs((per_layer - (pair - a)).ns()) <= 1);
  CHECK(hidden.forward[0] < exposed.forward[0]);
}
