// DeepSpeed's pipeline engine's own work in the op programs (workload/pipe_engine_ops.h),
// byte by byte against the engine's code, worked by hand on 175B at TP 8, PP 4.
#include <doctest/doctest.h>

#include "gpt175_plan.h"
#include "workload/program.h"

using namespace megasim;
using namespace megasim::workload;
using megasim::test::gpt175;

namespace {

// TP 8 × PP 4 × DP 2, micro-batch 1, full recompute, no SP (DeepSpeed's engine has none).
ParallelPlan plan(Precision precision) {
  ParallelPlan p = test::gpt175_plan(precision);
  p.recompute = Recompute::kFull;
  p.distributed_optimizer = true;
  return p;
}

GeneratorOptions engine(bool partitioned, bool bf16) {
  GeneratorOptions o;
  o.fused_attention = false;
  o.pipe_partitioned_transfers = partitioned;
  o.pipe_bf16_optimizer = bf16;
  return o;
}

struct EngineWork {
  double memory_bytes = 0.0;  // read + written by the engine's kernels
  int gathers = 0;            // TP all-gathers
  double gathered = 0.0;      // their gathered bytes
};

EngineWork engine_work(const std::vector<Op>& ops) {
  EngineWork w;
  for (const Op& op : ops) {
    if (!op.pipe_engine) continue;
    if (const CommOp* c = op.comm()) {
      CHECK(c->group == Group::kTp);
      CHECK(c->kind == CollectiveOp::kAllGather);
      ++w.gathers;
      w.gathered += c->size.value();
    } else {
      w.memory_bytes += op.bytes().value();
    }
  }
  return w;
}

}  // namespace

TEST_CASE("pipe engine: partitioned transfers, stage by stage, as PartitionedTensor moves them") {
  // S = 2048 tokens × 12288 × 2 B = 50,331,648 B, a slice S/8. full(): fill S, own slice
  // 2·S/8, 8 per-rank copies 2·S/8 each, clone 2S: 5S + 2S/8 = 5.25 S of memory traffic and
  // one all-gather of S. Slice clones 2·S/8 = 0.25 S each.
  const double S = 2048.0 * 12288.0 * 2.0;
  const ModelSpec m = gpt175();
  const auto stages = build_program(m, plan(Precision::kFp16), engine(true, false));
  // First stage: forward partitions its output (0.25 S); backward rebuilds its output and the
  // received gradient (2 fulls), sends no gradient.
  auto f = engine_work(stages[0].chunks[0].forward);
  auto b = engine_work(stages[0].chunks[0].backward);
  CHECK(f.memory_bytes == doctest::Approx(0.25 * S));
  CHECK(f.gathers == 0);
  CHECK(b.memory_bytes == doctest::Approx(2 * 5.25 * S));
  CHECK(b.gathers == 2);
  CHECK(b.gathered == doctest::Approx(2 * S));
  // A middle stage: forward clones the received slice twice, full(), partitions its output
  // (3 × 0.25 S + 5.25 S); backward as the first plus the input gradient's partition.
  f = engine_work(stages[1].chunks[0].forward);
  b = engine_work(stages[1].chunks[0].backward);
  CHECK(f.memory_bytes == doctest::Approx(6.0 * S));
  CHECK(f.gathers == 1);
  CHECK(f.gathered == doctest::Approx(S));
  CHECK(b.memory_bytes == doctest::Approx(10.75 * S));
  CHECK(b.gathers == 2);
  // The last stage: only the received input (0.5 S + 5.25 S) and the gradient's partition.
  f = engine_work(stages[3].chunks[0].forward);
  b = engine_work(stages[3].chunks[0].backward);
  CHECK(f.memory_bytes == doctest::Approx(5.75 * S));
  CHECK(f.gathers == 1);
  CHECK(b.memory_bytes == doctest::Approx(0.25 * S));
  CHECK(b.gathers == 0);
  // The rebuilds come before the backward's first compute (the recompute), the partition of
  // the output after the forward's last.
  CHECK(stages[1].chunks[0].backward.front().pipe_engine);
  CHECK(stages[1].chunks[0].forward.back().pipe_engine);
  // Without TP there is nothing to partition.
  ParallelPlan tp1 = plan(Precision::kFp16);
  tp1.tp = 1;
  tp1.dp = 16;
  tp1.global_batch = 16;
  for (const auto& st : build_program(m, tp1, engine(true, false))) {
    CHECK(engine_work(st.chunks[0].forward).memory_bytes == 0.0);
    CHECK(engine_work(st.chunks[0].backward).memory_bytes == 0.0);
  }
}

TEST_CASE("pipe engine: BF16_Optimizer updates fp32 gradients per micro-batch, all-reduces bf16") {
  const ModelSpec m = gpt175();
  const std::int64_t n = stage_parameters_per_rank(m, plan(Precision::kBf16), 1);
  const StageProgram st = build_stage(m, plan(Precision::kBf16), 1, engine(false, true));
  // After the backward: cast (2 B read, 4 B written) and add (8 B read, 4 B written) a
  // parameter, 18 B.
  CHECK(engine_work(st.chunks[0].backward).memory_bytes == doctest::Approx(18.0 * n));
  CHECK(engine_work(st.chunks[0].forward).memory_bytes == 0.0);
  // One all-reduce of every gradient in bf16 (2 B), no reduce-scatter; the parameters'
  // all-gather of the partitioned optimizer stays.
  REQUIRE(st.dp_gradient_comm.size() == 1);
  CHECK(st.dp_gradient_comm[0].comm()->kind == CollectiveOp::kAllReduce);
  CHECK(st.dp_gradient_comm[0].comm()->size.value() == doctest::Approx(2.0 * n));
  CHECK(!st.dp_param_comm.empty());
  // At the step: casts to bf16 and back and the average (6 + 4 + 6 B), and the norm of all
  // fp32 gradients (4 B), not of the DP shard.
  double optimizer_bytes = 0.0;
  for (const Op& op : st.optimizer) {
    if (op.name.find("adam") == std::string::npos) optimizer_bytes += op.bytes().value();
  }
  CHECK(optimizer_bytes == doctest::Approx(20.0 * n));
  // fp16 runs through DeepSpeed's fp16/ZeRO optimizer: none of this.
  const StageProgram fp16 = build_stage(m, plan(Precision::kFp16), 1, engine(false, true));
  CHECK(engine_work(fp16.chunks[0].backward).memory_bytes == 0.0);
  CHECK(fp16.dp_gradient_comm[0].comm()->kind == CollectiveOp::kReduceScatter);
}

TEST_CASE("pipe engine: an interleaved stage updates its fp32 gradients once a micro-batch") {
  // With two chunks a stage, the update over the stage's parameters follows the stage's last
  // backward of a micro-batch (chunk 0's: backward runs the chunks in reverse), not every chunk.
  const ModelSpec m = gpt175();
  ParallelPlan p = plan(Precision::kBf16);
  p.vpp = 2;
  const std::int64_t n = stage_parameters_per_rank(m, p, 1);
  const StageProgram st = build_stage(m, p, 1, engine(false, true));
  REQUIRE(st.chunks.size() == 2);
  CHECK(engine_work(st.chunks[0].backward).memory_bytes == doctest::Approx(18.0 * n));
  CHECK(engine_work(st.chunks[1].backward).memory_bytes == 0.0);
}

TEST_CASE("pipe engine: ZeRO-2 takes DeepSpeed's ZeRO optimizer, not BF16_Optimizer") {
  const ModelSpec m = gpt175();
  ParallelPlan p = plan(Precision::kBf16);
  p.zero2 = true;
  const StageProgram st = build_stage(m, p, 1, engine(false, true));
  CHECK(engine_work(st.chunks[0].backward).memory_bytes == 0.0);
  REQUIRE(!st.dp_gradient_comm.empty());
  CHECK(st.dp_gradient_comm[0].comm()->kind == CollectiveOp::kReduceScatter);
}

TEST_CASE("pipe engine: with sequence parallelism nothing is partitioned or rebuilt") {
  // Each TP rank holds its 1/tp of the activation already; PartitionedTensor has nothing to do.
  const ModelSpec m = gpt175();
  ParallelPlan p = plan(Precision::kFp16);
  p.sequence_parallel = true;
  const StageProgram st = build_stage(m, p, 1, engine(true, false));
  const EngineWork fwd = engine_work(st.chunks[0].forward);
  const EngineWork bwd = engine_work(st.chunks[0].backward);
  CHECK(fwd.gathers + bwd.gathers == 0);
  CHECK(fwd.memory_bytes + bwd.memory_bytes == 0.0);
  p.sequence_parallel = false;
  const StageProgram without = build_stage(m, p, 1, engine(true, false));
  CHECK(engine_work(without.chunks[0].forward).gathers > 0);
}
