// Megatron-LM's scatter-gather transfers between pipeline stages (GeneratorOptions::
// pp_scatter_gather, workload/pipe_engine_ops.h) against Megatron-Core's whole-tensor sends,
// worked by hand on 175B at TP 8, PP 4, without sequence parallelism.
#include <doctest/doctest.h>

#include <string>

#include "gpt175_plan.h"
#include "workload/program.h"

using namespace megasim;
using namespace megasim::workload;
using megasim::test::gpt175;

namespace {

GeneratorOptions transfers(bool scatter_gather) {
  GeneratorOptions o;
  o.pp_scatter_gather = scatter_gather;
  return o;
}

struct Gathers {
  int count = 0;
  double bytes = 0.0;
};

// The receiver's TP all-gathers of a pass's ops: where they sit and what they gather.
Gathers gathers(const std::vector<Op>& ops) {
  Gathers g;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].name.find("pp scatter-gather all-gather") == std::string::npos) continue;
    const CommOp* c = ops[i].comm();
    REQUIRE(c != nullptr);
    CHECK(c->group == Group::kTp);
    CHECK(c->kind == CollectiveOp::kAllGather);
    CHECK(i == 0);  // before the pass's first compute: the pass takes the whole tensor
    CHECK(!ops[i].pipe_engine);
    ++g.count;
    g.bytes += c->size.value();
  }
  return g;
}

}  // namespace

TEST_CASE("scatter-gather: a 1/tp slice sent, the whole all-gathered by the receiver") {
  // S = 2048 tokens × 12288 × 2 B = 50,331,648 B.
  const double S = 2048.0 * 12288.0 * 2.0;
  const ModelSpec m = gpt175();
  const ParallelPlan p = test::gpt175_plan(Precision::kBf16);  // no sequence parallelism
  const auto stages = build_program(m, p, transfers(true));
  for (const StageProgram& st : stages) CHECK(st.pp_send_bytes.value() == doctest::Approx(S / 8));
  // The first stage receives no activation, the last no gradient; a middle one receives both.
  CHECK(gathers(stages[0].chunks[0].forward).count == 0);
  CHECK(gathers(stages[0].chunks[0].backward).bytes == doctest::Approx(S));
  CHECK(gathers(stages[1].chunks[0].forward).bytes == doctest::Approx(S));
  CHECK(gathers(stages[1].chunks[0].backward).bytes == doctest::Approx(S));
  CHECK(gathers(stages[3].chunks[0].forward).count == 1);
  CHECK(gathers(stages[3].chunks[0].backward).count == 0);
  // Interleaved: every chunk but the pipeline's first and last receives both.
  ParallelPlan v = p;
  v.vpp = 2;
  const auto chunks = build_program(m, v, transfers(true));
  CHECK(gathers(chunks[0].chunks[1].forward).count == 1);
  CHECK(gathers(chunks[3].chunks[0].backward).count == 1);
  CHECK(gathers(chunks[3].chunks[1].backward).count == 0);
}

TEST_CASE("scatter-gather: Megatron-Core sends the whole tensor from every TP rank") {
  const double S = 2048.0 * 12288.0 * 2.0;
  const ModelSpec m = gpt175();
  ParallelPlan p = test::gpt175_plan(Precision::kBf16);
  for (const StageProgram& st : build_program(m, p, transfers(false))) {
    CHECK(st.pp_send_bytes.value() == doctest::Approx(S));
    for (const ChunkProgram& ch : st.chunks) {
      CHECK(gathers(ch.forward).count + gathers(ch.backward).count == 0);
    }
  }
  // With sequence parallelism each rank holds its 1/tp already: sent as it is, either way.
  p.sequence_parallel = true;
  for (const bool scatter_gather : {true, false}) {
    const StageProgram st = build_stage(m, p, 1, transfers(scatter_gather));
    CHECK(st.pp_send_bytes.value() == doctest::Approx(S / 8));
    CHECK(gathers(st.chunks[0].forward).count + gathers(st.chunks[0].backward).count == 0);
  }
  // DeepSpeed's engine partitions its own: no Megatron gather beside its full().
  p.sequence_parallel = false;
  GeneratorOptions engine = transfers(true);
  engine.pipe_partitioned_transfers = true;
  const StageProgram ds = build_stage(m, p, 1, engine);
  CHECK(ds.pp_send_bytes.value() == doctest::Approx(S / 8));
  CHECK(gathers(ds.chunks[0].forward).count == 0);
}

TEST_CASE("pp transfer: one kind for each plan and framework, and the bytes sent follow it") {
  const double S = 2048.0 * 12288.0 * 2.0;
  const ModelSpec m = gpt175();
  ParallelPlan p = test::gpt175_plan(Precision::kBf16);
  struct Row {
    int tp;
    bool sequence_parallel, scatter_gather, partitioned;
    PpTransfer kind;
    const char* name;
    double share;  // of the whole tensor each TP rank sends
  };
  for (const Row& r :
       {Row{1, false, true, true, PpTransfer::kWhole, "whole", 1.0},
        Row{8, true, false, true, PpTransfer::kSequenceParallelShard, "sequence-parallel shard",
            1.0 / 8},
        Row{8, false, true, true, PpTransfer::kPartitioned, "partitioned", 1.0 / 8},
        Row{8, false, true, false, PpTransfer::kScatterGather, "scatter-gather", 1.0 / 8},
        Row{8, false, false, false, PpTransfer::kWholeFromEveryTpRank, "whole from every tp rank",
            1.0}}) {
    CAPTURE(r.name);
    p.tp = r.tp;
    p.sequence_parallel = r.sequence_parallel;
    CHECK(pp_transfer(p, r.scatter_gather, r.partitioned) == r.kind);
    CHECK(std::string(to_string(r.kind)) == r.name);
    GeneratorOptions o = transfers(r.scatter_gather);
    o.pipe_partitioned_transfers = r.partitioned;
    CHECK(build_stage(m, p, 1, o).pp_send_bytes.value() == doctest::Approx(S * r.share));
  }
}

TEST_CASE("scatter-gather: the 2021 code's list-form gather copies the whole tensor out") {
  // gather_split_1d_tensor before 37181ef4 (February 2022) all-gathered into a list of per-rank
  // views: PyTorch's NCCL backend copies each rank's share out of its flat buffer, tp copies
  // after the gather and before the pass.
  const double S = 2048.0 * 12288.0 * 2.0;
  const ModelSpec m = gpt175();
  const ParallelPlan p = test::gpt175_plan(Precision::kBf16);
  GeneratorOptions o = transfers(true);
  o.pp_gather_list_copy = true;
  const StageProgram st = build_stage(m, p, 1, o);
  const std::vector<Op>& f = st.chunks[0].forward;
  REQUIRE(f.size() > 9);
  CHECK(f[0].comm() != nullptr);  // the gather first
  double moved = 0.0;             // read and written
  for (std::size_t i = 1; i <= 8; ++i) {
    CHECK(f[i].name == "pp scatter-gather list copy (received activation) fwd");
    CHECK(f[i].kind() == OpKind::kMemory);
    moved += f[i].bytes().value();
  }
  CHECK(moved == doctest::Approx(2.0 * S));
  CHECK(f[9].name.find("list copy") == std::string::npos);
  // The received gradient's gather before the backward, likewise.
  int backward_copies = 0;
  for (const Op& op : st.chunks[0].backward)
    backward_copies += op.name == "pp scatter-gather list copy (received gradient) bwd";
  CHECK(backward_copies == 8);
  // Without the flag, or without a gather (sequence parallelism), no copy.
  ParallelPlan sp = p;
  sp.sequence_parallel = true;
  for (const StageProgram& none :
       {build_stage(m, p, 1, transfers(true)), build_stage(m, sp, 1, o)}) {
    for (const Op& op : none.chunks[0].forward)
      CHECK(op.name.find("list copy") == std::string::npos);
  }
}
