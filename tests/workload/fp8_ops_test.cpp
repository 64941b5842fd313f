// Transformer Engine's FP8 as the workload builds it (plan.fp8, plan.fp8_params): the GEMMs'
// dtype and layout, every cast's bytes with sequence parallelism and without, the amax
// all-reduces and the once-a-step weight work, each worked by hand.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "test_models.h"

using namespace megasim;
using namespace megasim::workload;
using megasim::test::gpt175;
using megasim::test::layer_ops;
using megasim::test::megascale_plan;

TEST_CASE("ops: FP8 runs a layer's linear GEMMs in FP8 with Transformer Engine's casts") {
  const ModelSpec m = gpt175();
  ParallelPlan p = megascale_plan();  // TP 8 with SP, PP 8, VPP 6: 2 layers a chunk
  p.fp8 = true;
  const StageProgram st = build_stage(m, p, 1);
  const ChunkProgram& ch = st.chunks[0];  // layers 2 and 3
  const auto find = [](const std::vector<const Op*>& ops, const std::string& name) -> const Op& {
    const auto it =
        std::find_if(ops.begin(), ops.end(), [&](const Op* o) { return o->name == name; });
    REQUIRE(it != ops.end());
    return **it;
  };
  const auto memory = [](const Op& op) { return std::get<hw::MemoryShape>(*op.kernel()); };
  const auto fwd = layer_ops(ch.forward, 2, Phase::kForward);
  const auto bwd = layer_ops(ch.backward, 2, Phase::kBackward);
  for (const auto* ops : {&fwd, &bwd}) {
    for (const Op* op : *ops) {
      if (op->gemm_role == GemmRole::kNone) continue;
      // FP8, in the TN layout cuBLASLt's FP8 kernels take (TE's transposed copies give it).
      const auto& g = std::get<hw::GemmShape>(*op->kernel());
      CHECK(g.dtype == hw::DType::kFp8);
      CHECK(g.transpose_a);
      CHECK_FALSE(g.transpose_b);
      // The forward's fast accumulation, the dgrad's and wgrad's split one (TE's module/base.py).
      CHECK(g.fast_accum == (op->gemm_role == GemmRole::kForward));
    }
  }
  CHECK(std::get<hw::AttentionShape>(*find(fwd, "layer 2 attention core fwd").kernel()).dtype ==
        hw::DType::kBf16);
  // The norm writes its 256-token shard in FP8 (256 · 12288 · 1 B); the all-gather behind it
  // moves 2048 · 12288 · 1 B, the reduce-scatters still 2 B an element.
  CHECK(memory(find(fwd, "layer 2 input norm fwd")).bytes_written.value() == 3145728.0);
  CHECK(find(fwd, "layer 2 attention input all-gather fwd").comm()->size.value() == 25165824.0);
  CHECK(find(fwd, "layer 2 attention output reduce-scatter fwd").comm()->size.value() ==
        50331648.0);
  // Row-parallel inputs cast with SP: 2048 × 1536 (attention output) and 2048 × 6144 (fc2's).
  const hw::MemoryShape proj_cast = memory(find(fwd, "layer 2 attention out fp8 cast fwd"));
  CHECK(proj_cast.bytes_read.value() == 2048.0 * 1536 * 2);
  CHECK(proj_cast.bytes_written.value() == 2048.0 * 1536);
  CHECK(memory(find(fwd, "layer 2 mlp fc2 fp8 cast fwd")).bytes_read.value() == 2048.0 * 6144 * 2);
  // Backward: fc2's output gradient cast on its 256-token shard, gathered in FP8 and the
  // gathered 2048 × 12288 transposed; fc2's saved input transposed; QKV's output gradient
  // (2048 × 4608) cast with its transpose, and its gathered input transposed.
  const hw::MemoryShape shard_cast = memory(find(bwd, "layer 2 mlp output grad fp8 cast bwd"));
  CHECK(shard_cast.bytes_read.value() == 256.0 * 12288 * 2);
  CHECK(shard_cast.bytes_written.value() == 256.0 * 12288);
  CHECK(find(bwd, "layer 2 mlp output grad all-gather bwd").comm()->size.value() == 25165824.0);
  const hw::MemoryShape fc2_grad = memory(find(bwd, "layer 2 mlp fc2 grad fp8 transpose bwd"));
  CHECK(fc2_grad.bytes_read.value() == 2048.0 * 12288);
  CHECK(fc2_grad.bytes_written.value() == 2048.0 * 12288);
  CHECK(memory(find(bwd, "layer 2 mlp fc2 input fp8 transpose bwd")).bytes_read.value() ==
        2048.0 * 6144);
  CHECK(memory(find(bwd, "layer 2 attention qkv grad fp8 cast-transpose bwd")).bytes_read.value() ==
        2048.0 * 4608 * 2);
  CHECK(memory(find(bwd, "layer 2 attention qkv input fp8 transpose bwd")).bytes_read.value() ==
        2048.0 * 12288);
  CHECK(find(bwd, "layer 2 attention input all-gather bwd").comm()->size.value() == 25165824.0);
  // Each chunk's amax all-reduces cover every FP8 module of the rank: the stage's 12 layers ×
  // 4 GEMMs × (3 forward, 2 backward) × 4 B, over DP.
  CHECK(ch.forward.back().name == "fp8 amax all-reduce fwd");
  CHECK(ch.forward.back().comm()->size.value() == 576.0);
  CHECK(ch.forward.back().comm()->group == Group::kDp);
  CHECK(ch.backward.back().comm()->size.value() == 384.0);
  // Once a step every linear weight of the stage's 12 layers is cast with its transpose:
  // 12288 × (4608 + 1536 + 6144 + 6144) per layer on a rank, 2 B read and 2 B written each.
  const double weights = 12.0 * 12288.0 * (4608 + 1536 + 6144 + 6144);
  CHECK(static_cast<double>(stage_linear_weights_per_rank(m, p, 1)) == weights);
  const auto cast = std::find_if(st.optimizer.begin(), st.optimizer.end(),
                                 [](const Op& o) { return o.name == "fp8 weight cast-transpose"; });
  REQUIRE(cast != st.optimizer.end());
  CHECK(std::get<hw::MemoryShape>(*cast->kernel()).bytes_read.value() == 2.0 * weights);
  // The logits head is Megatron-Core's own layer: 16-bit.
  const StageProgram last = build_stage(m, p, p.pp - 1);
  int logits = 0;
  for (const auto* ops : {&last.chunks.back().forward, &last.chunks.back().backward}) {
    for (const Op& op : *ops) {
      if (op.name.rfind("logits", 0) != 0 || op.gemm_role == GemmRole::kNone) continue;
      CHECK(std::get<hw::GemmShape>(*op.kernel()).dtype == hw::DType::kBf16);
      ++logits;
    }
  }
  CHECK(logits == 3);  // forward, dgrad, wgrad
  // FP8 weights (fp8_params): transposed once a step, not cast; the distributed optimizer
  // all-gathers the linear weights in one byte and the rest (norms, biases) in two.
  ParallelPlan fp8_weights = p;
  fp8_weights.fp8_params = true;
  const StageProgram fw = build_stage(m, fp8_weights, 1);
  REQUIRE(fw.optimizer.back().name == "fp8 weight transpose");
  CHECK(std::get<hw::MemoryShape>(*fw.optimizer.back().kernel()).bytes_read.value() == weights);
  const auto gathered = [](const StageProgram& sp) {
    double bytes = 0.0;
    for (const Op& op : sp.dp_param_comm) bytes += op.comm()->size.value();
    return bytes;
  };
  const double params = static_cast<double>(st.parameters_per_rank);
  CHECK(gathered(st) == doctest::Approx(2.0 * params));
  CHECK(gathered(fw) == doctest::Approx(2.0 * params - weights));
  p.fp8 = false;
  const StageProgram bf16 = build_stage(m, p, 1);
  for (const Op& op : bf16.chunks[0].forward) CHECK(op.name.find("fp8") == std::string::npos);
}

TEST_CASE("ops: FP8 without SP casts with the transpose, not in a full recompute's first forward") {
  const ModelSpec m = gpt175();
  ParallelPlan p = megascale_plan();
  p.fp8 = true;
  p.sequence_parallel = false;
  p.dp = 1;
  p.global_batch = 192;
  const auto names = [](const std::vector<Op>& ops) {
    std::vector<std::string> out;
    for (const Op& op : ops) out.push_back(op.name);
    return out;
  };
  const auto memory_op = [](const std::vector<Op>& ops, const std::string& name) {
    const auto it = std::find_if(ops.begin(), ops.end(), [&](const Op& o) { return o.name == name; });
    REQUIRE(it != ops.end());
    return std::get<hw::MemoryShape>(*it->kernel());
  };
  const StageProgram st = build_stage(m, p, 1);
  const ChunkProgram& ch = st.chunks[0];
  // TE's fp8_cast_transpose_fused writes the cast and its transpose: 2048 × 1536, 1 B each.
  CHECK(memory_op(ch.forward, "layer 2 attention out fp8 cast fwd").bytes_written.value() ==
        2.0 * 2048 * 1536);
  // The gradient is not gathered: one fused cast-transpose of 2048 × 12288, and the saved
  // transpose needs no second one.
  CHECK(memory_op(ch.backward, "layer 2 mlp fc2 grad fp8 cast-transpose bwd").bytes_read.value() ==
        2048.0 * 12288 * 2);
  const auto bwd = names(ch.backward);
  CHECK(std::find(bwd.begin(), bwd.end(), "layer 2 mlp fc2 input fp8 transpose bwd") == bwd.end());
  CHECK(std::find(bwd.begin(), bwd.end(), "layer 2 attention qkv input fp8 transpose bwd") !=
        bwd.end());
  // Without DP the amax all-reduces run on the TP group.
  CHECK(ch.forward.back().comm()->group == Group::kTp);
  // Full recompute: the first forward runs under no_grad (the cast alone), the recompute with
  // autograd (the cast and its transpose).
  p.recompute = Recompute::kFull;
  const StageProgram full = build_stage(m, p, 1);
  CHECK(memory_op(full.chunks[0].forward, "layer 2 attention out fp8 cast fwd")
            .bytes_written.value() == 2048.0 * 1536);
  CHECK(memory_op(full.chunks[0].backward, "layer 2 attention out fp8 cast recompute")
            .bytes_written.value() == 2.0 * 2048 * 1536);
}
