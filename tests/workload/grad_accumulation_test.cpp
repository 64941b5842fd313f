// The gradient accumulation pass of Megatron-LM before gradient-accumulation fusion
// (GeneratorOptions::grad_accumulation_pass), byte by byte on 175B at TP 8, PP 4.
#include <doctest/doctest.h>

#include <string>
#include <variant>

#include "gpt175_plan.h"
#include "workload/program.h"

using namespace megasim;
using namespace megasim::workload;
using megasim::test::gpt175;

namespace {

ParallelPlan plan(Precision precision) {
  ParallelPlan p = test::gpt175_plan(precision);
  p.fp32_gradients = precision == Precision::kBf16;
  return p;
}

struct Accumulation {
  int ops = 0;
  double read = 0.0, written = 0.0;
};

Accumulation accumulation(const StageProgram& stage) {
  Accumulation a;
  for (const ChunkProgram& ch : stage.chunks) {
    for (const Op& op : ch.forward)
      CHECK(op.name.find("gradient accumulation") == std::string::npos);
    for (const Op& op : ch.backward) {
      if (op.name.find("weight gradient accumulation") == std::string::npos) continue;
      CHECK(op.phase == Phase::kBackward);
      CHECK(op.gemm_role == GemmRole::kWeightGrad);  // a split backward's W pass runs it
      const auto* shape = std::get_if<hw::MemoryShape>(op.kernel());
      REQUIRE(shape != nullptr);
      ++a.ops;
      a.read += shape->bytes_read.value();
      a.written += shape->bytes_written.value();
    }
  }
  return a;
}

}  // namespace

TEST_CASE("grad accumulation pass: one add a layer (and the logits), its bytes by hand") {
  const ModelSpec m = gpt175();
  GeneratorOptions on;
  on.grad_accumulation_pass = true;
  // Off (the default, fused into the weight-gradient GEMM): no pass at all.
  for (const StageProgram& s : build_program(m, plan(Precision::kFp16), GeneratorOptions{})) {
    CHECK(accumulation(s).ops == 0);
  }
  const auto fp16 = build_program(m, plan(Precision::kFp16), on);
  const auto bf16 = build_program(m, plan(Precision::kBf16), on);
  // 96 layers over PP 4: 24 a stage. A rank holds 1/8 of the column-parallel weights and
  // biases and of the row-parallel weights (12·h² + 7·h), and whole the two row-parallel biases
  // and the two layer norms (6·h): h = 12,288 gives 226,492,416 + 10,752 + 73,728.
  const double layer = 226'576'896.0;
  const double head = 64'000.0 / 8.0 * 12'288.0;  // the logits' weight shard: 98,304,000
  CHECK(static_cast<double>(rank_layer_parameters(m, 8)) == doctest::Approx(layer));
  // fp16: the micro-batch's gradient (2 B) and the accumulated gradient (2 B) read, 2 B written.
  // The first stage adds its word-embedding shard and the learned positions (2,048 x h) too.
  const double embedding = head + 2'048.0 * 12'288.0;
  const Accumulation first = accumulation(fp16[0]), last = accumulation(fp16[3]);
  CHECK(first.ops == 25);
  CHECK(first.read == doctest::Approx((24 * layer + embedding) * 4.0));
  CHECK(first.written == doctest::Approx((24 * layer + embedding) * 2.0));
  CHECK(accumulation(fp16[1]).ops == 24);
  CHECK(last.ops == 25);  // and the logits
  CHECK(last.read == doctest::Approx((24 * layer + head) * 4.0));
  // bf16 with fp32 gradients (Megatron-LM's rule): 2 + 4 B read, 4 B written.
  const Accumulation wide = accumulation(bf16[1]);
  CHECK(wide.read == doctest::Approx(24 * layer * 6.0));
  CHECK(wide.written == doctest::Approx(24 * layer * 4.0));
  // One stage (PP 1) holding the tied pair adds the shared weight once, with the logits.
  ParallelPlan one = plan(Precision::kFp16);
  one.pp = 1;
  const Accumulation single = accumulation(build_program(m, one, on)[0]);
  CHECK(single.ops == 96 + 2);  // the layers, the logits' (shared) weight, the positions
  CHECK(single.read == doctest::Approx((96 * layer + embedding) * 4.0));
  // ZeRO-3's gradients leave by reduce-scatter: no accumulation pass.
  ParallelPlan z = plan(Precision::kFp16);
  z.pp = 1;
  z.zero3 = true;
  CHECK(accumulation(build_program(m, z, on)[0]).ops == 0);
  // ZeRO-2 reduces each backward pass's gradients and adds them into the rank's shard: the
  // same ops, 1/DP of the bytes.
  ParallelPlan z2 = plan(Precision::kFp16);
  z2.distributed_optimizer = true;
  z2.zero2 = true;
  const Accumulation sharded = accumulation(build_program(m, z2, on)[1]);
  CHECK(z2.dp_cp() > 1);
  CHECK(sharded.ops == 24);
  CHECK(sharded.read == doctest::Approx(24 * layer * 4.0 / static_cast<double>(z2.dp_cp())));
  CHECK(sharded.written == doctest::Approx(24 * layer * 2.0 / static_cast<double>(z2.dp_cp())));
}
