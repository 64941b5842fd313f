// Transformer Engine's userbuffers as the pricer runs them (SystemOptions::tp_decomposition,
// the megatron-core preset): each overlapped TP collective and its GEMM, priced alone, against
// the pair put together from the kernel model's pieces and the collective's own time.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <variant>

#include "pricer_fixture.h"

using namespace megasim;
using workload::Group;
using workload::Op;

namespace {

// Korthikanti's 22B (s 2048) on TP 8 with sequence parallelism, one node of the MegaScale
// cluster (A100: 108 SMs).
struct Fixture : test::PricerFixture {
  workload::StageProgram whole_model;
  Fixture() {
    plan.tp = 8;
    plan.global_batch = 1;
    plan.sequence_parallel = true;
    whole_model = workload::build_stage(model, plan, 0);
  }
  // The whole-model stage with its first layer's pass cut down to `ops`.
  workload::StageProgram alone(std::vector<Op> ops, bool backward) const {
    workload::StageProgram s = whole_model;
    s.chunks.resize(1);
    s.chunks[0].forward.clear();
    s.chunks[0].backward.clear();
    (backward ? s.chunks[0].backward : s.chunks[0].forward) = std::move(ops);
    return s;
  }
  // The pass's time under megatron-core with `edit` applied to the preset.
  Time pass(const workload::StageProgram& s, bool backward,
            void (*edit)(step::SystemOptions&)) const {
    const step::StageCosts c = price(s, edit);
    return backward ? c.backward[0] : c.forward[0];
  }
  const std::vector<Op>& layer0(bool backward) const {
    return backward ? whole_model.chunks[0].backward : whole_model.chunks[0].forward;
  }
  // The first TP collective of layer 0 matching `want`, and the GEMM named `gemm`.
  std::vector<Op> pair(bool backward, bool (*want)(const Op&), const std::string& gemm) const {
    const Op* c = nullptr;
    const Op* g = nullptr;
    for (const Op& op : layer0(backward)) {
      if (op.layer != 0) continue;
      if (!c && op.comm() && op.comm()->group == Group::kTp && want(op)) c = &op;
      if (!g && op.kernel() && op.name.find(gemm) != std::string::npos) g = &op;
    }
    REQUIRE(c);
    REQUIRE(g);
    const bool gemm_first = !backward && c->comm()->kind == hw::CollectiveOp::kReduceScatter;
    return gemm_first ? std::vector<Op>{*g, *c} : std::vector<Op>{*c, *g};
  }
  const hw::GemmShape& shape(const std::vector<Op>& ops) const {
    for (const Op& op : ops) {
      if (op.kernel()) return std::get<hw::GemmShape>(*op.kernel());
    }
    FAIL("no GEMM");
    return std::get<hw::GemmShape>(*ops.front().kernel());
  }
};

// Distinct SM counts, so that a method reading the other's would show.
void decomposed(step::SystemOptions& s) {
  s.tp_decomposition.pipeline_comm_sms = 16;
  s.tp_decomposition.bulk_comm_sms = 8;
}
void whole(step::SystemOptions& s) {
  s.tp_decomposition.enabled = false;
}
// Without --tp-comm-overlap TE's userbuffers are off: the backward's pairs (Megatron's
// asynchronous all-gather and reduce-scatter beside dgrad/wgrad) run whole.
void no_userbuffers(step::SystemOptions& s) {
  s.tp_overlap = false;
}
void in_line(step::SystemOptions& s) {
  s.tp_overlap = false;
  s.backward_tp_overlap = false;
}

bool feeding_gather(const Op& op) {
  return op.tp_feeds_gemm && op.comm()->kind == hw::CollectiveOp::kAllGather;
}
bool feeding_scatter(const Op& op) {
  return op.tp_feeds_gemm && op.comm()->kind == hw::CollectiveOp::kReduceScatter;
}
bool beside_gather(const Op& op) {
  return op.tp_overlappable && !op.tp_feeds_gemm && op.comm()->kind == hw::CollectiveOp::kAllGather;
}

hw::GemmShape rows(hw::GemmShape g, std::int64_t pieces) {
  g.m = (g.m + pieces - 1) / pieces;
  return g;
}

Time pipelined(Time g, Time c, std::int64_t pieces) {
  return std::max(g, c) + Time::from_ns(std::min(g, c).ns() / pieces);
}

// One pair of layer 0 alone: its stage, its GEMM, and the collective's own time (the pass run
// in line, GEMM then collective, less the GEMM).
struct Isolated {
  workload::StageProgram stage;
  hw::GemmShape gemm;
  Time collective;
};
Isolated isolate(const Fixture& f, bool backward, bool (*want)(const Op&),
                 const std::string& name) {
  const auto ops = f.pair(backward, want, name);
  Isolated p{f.alone(ops, backward), f.shape(ops), Time::zero()};
  p.collective = f.pass(p.stage, backward, in_line) - f.kernels.gemm(p.gemm).time;
  return p;
}

}  // namespace

TEST_CASE("TE's ring exchange: the QKV GEMM as tp pieces beside the input's all-gather") {
  Fixture f;
  const Isolated p = isolate(f, false, feeding_gather, "attention qkv");
  CHECK(p.gemm.m == 2048);
  const Time gemm = f.kernels.gemm(p.gemm).time;
  const double slow = f.kernels.profile().interference.compute_slowdown;
  // Eight GEMMs of 256 rows, slowed by the copy engines' traffic, the exchange pipelined.
  const Time pieces = f.kernels.gemm(rows(p.gemm, 8)).time * 8 * slow;
  CHECK(f.pass(p.stage, false, decomposed) == pipelined(pieces, p.collective, 8));
  CHECK(f.pass(p.stage, false, whole) == pipelined(gemm * slow, p.collective, 8));
  // 256-row pieces fill fewer SMs than the whole GEMM's waves: the decomposition costs time.
  CHECK(pieces > gemm * slow);
}

TEST_CASE("TE's pipeline: the attention output GEMM in 4 pieces on the SMs the scatter leaves") {
  Fixture f;
  const Isolated p = isolate(f, false, feeding_scatter, "attention out");
  const Time pieces = f.kernels.gemm_on_sms(rows(p.gemm, 4), 108 - 16).time * 4;
  CHECK(f.pass(p.stage, false, decomposed) == pipelined(pieces, p.collective, 4));
}

TEST_CASE("TE's bulk overlap: the backward's input re-gather beside fc1's dgrad, on its own SMs") {
  Fixture f;
  const Isolated p = isolate(f, true, beside_gather, "mlp fc1 dgrad");
  // Side by side, nothing pipelined: the longer of the two, the GEMM on 108 - 8 SMs.
  CHECK(f.pass(p.stage, true, decomposed) ==
        std::max(f.kernels.gemm_on_sms(p.gemm, 100).time, p.collective));
  // Without tp_overlap the pair runs whole, the GEMM slowed by interference.
  const Time slowed =
      f.kernels.gemm(p.gemm).time * f.kernels.profile().interference.compute_slowdown;
  CHECK(f.pass(p.stage, true, no_userbuffers) == pipelined(slowed, p.collective, 8));
}

TEST_CASE("which collectives feed their GEMM: the forward's four and the output gradients'") {
  Fixture f;
  int forward = 0, backward_feeding = 0, backward_beside = 0;
  for (const Op& op : f.layer0(false)) {
    if (op.layer == 0 && op.comm() && op.comm()->group == Group::kTp && op.tp_feeds_gemm) ++forward;
  }
  for (const Op& op : f.layer0(true)) {
    if (op.layer != 0 || !op.comm() || op.comm()->group != Group::kTp) continue;
    (op.tp_feeds_gemm ? backward_feeding : backward_beside) += 1;
  }
  CHECK(forward == 4);           // QKV's and fc1's all-gathers, attention out's and fc2's scatters
  CHECK(backward_feeding == 2);  // the output gradients' all-gathers before the row dgrads
  CHECK(backward_beside == 4);   // the inputs' re-gathers and the gradients' reduce-scatters
}
