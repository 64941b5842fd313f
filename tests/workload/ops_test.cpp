#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "test_models.h"

using namespace megasim;
using namespace megasim::workload;
using megasim::test::megascale_plan;

namespace {

ModelSpec gpt175() {
  return io::load_model(std::string(MEGASIM_SOURCE_DIR) + "/models/gpt-175b-megascale.json");
}


std::vector<const Op*> layer_ops(const std::vector<Op>& ops, int layer, Phase phase) {
  std::vector<const Op*> out;
  for (const Op& op : ops) {
    if (op.layer == layer && op.phase == phase) out.push_back(&op);
  }
  return out;
}

// Collectives of `kind` on `group` in the first chunk's forward and backward passes.
int comm_count(const StageProgram& st, Group group, CollectiveOp kind) {
  int n = 0;
  for (const auto* ops : {&st.chunks[0].forward, &st.chunks[0].backward}) {
    for (const Op& op : *ops) {
      const CommOp* c = op.comm();
      n += c && c->group == group && c->kind == kind;
    }
  }
  return n;
}

// ZeRO-3 over 8 ranks, one micro-batch each, full recompute.
ParallelPlan zero3_over_8() {
  ParallelPlan p;
  p.dp = 8;
  p.global_batch = 8;
  p.zero3 = true;
  p.recompute = Recompute::kFull;
  return p;
}

// One collective per tensor, gathered again after the recompute (DeepSpeed of 2021).
GeneratorOptions per_tensor_regather() {
  GeneratorOptions o;
  o.shard_per_tensor = true;
  o.regather_after_recompute = true;
  return o;
}

// Stage 0 of `m` as DeepSpeed of 2021 runs it: the above, fetched per sub-module, tensors under
// `persistence` elements kept gathered.
StageProgram deepspeed_zero3_stage(const ModelSpec& m, std::int64_t persistence) {
  GeneratorOptions o = per_tensor_regather();
  o.shard_per_sub_module = true;
  o.shard_persistence_threshold = persistence;
  return build_stage(m, zero3_over_8(), 0, o);
}

}  // namespace

TEST_CASE("ops: interleaved layer placement follows Megatron-LM") {
  const ModelSpec m = gpt175();
  const ParallelPlan p = megascale_plan();
  // 96 layers over 8 stages × 6 chunks: chunks of 2; chunk c of stage i starts at 16c + 2i.
  CHECK(chunk_layers(m, p, 0, 0).first == 0);
  CHECK(chunk_layers(m, p, 3, 0).first == 6);
  CHECK(chunk_layers(m, p, 3, 2).first == 38);
  CHECK(chunk_layers(m, p, 7, 5).first == 94);
  CHECK(chunk_layers(m, p, 7, 5).count == 2);
  const StageProgram last = build_stage(m, p, 7);
  CHECK(last.chunks.size() == 6);
  CHECK(last.chunks.back().has_logits);
  CHECK_FALSE(last.chunks.front().has_logits);
  CHECK(build_stage(m, p, 0).chunks.front().has_embedding);
}

TEST_CASE("ops: TP collectives of a sequence-parallel layer and their sizes") {
  const ModelSpec m = gpt175();
  const ParallelPlan p = megascale_plan();
  const StageProgram st = build_stage(m, p, 1);
  const ChunkProgram& ch = st.chunks[0];  // layers 2 and 3
  const auto fwd = layer_ops(ch.forward, 2, Phase::kForward);
  int gathers = 0, scatters = 0, reduces = 0;
  for (const Op* op : fwd) {
    if (const CommOp* c = op->comm()) {
      // s·b·h bf16 elements: 2048 · 1 · 12288 · 2 B = 50,331,648 B.
      CHECK(c->size.value() == 50331648.0);
      CHECK(c->group == Group::kTp);
      CHECK(op->tp_overlappable);
      gathers += c->kind == CollectiveOp::kAllGather;
      scatters += c->kind == CollectiveOp::kReduceScatter;
      reduces += c->kind == CollectiveOp::kAllReduce;
    }
  }
  CHECK(gathers == 2);
  CHECK(scatters == 2);
  CHECK(reduces == 0);
  // The QKV GEMM of one rank: 2048 tokens × (3·12288/8 = 4608) × 12288.
  const auto qkv = std::find_if(fwd.begin(), fwd.end(),
                                [](const Op* o) { return o->name == "layer 2 attention qkv fwd"; });
  REQUIRE(qkv != fwd.end());
  const auto& g = std::get<hw::GemmShape>(*(*qkv)->kernel());
  CHECK(g.m == 2048);
  CHECK(g.n == 4608);
  CHECK(g.k == 12288);
  // PP activation: s·b·h·2 / tp with SP = 6,291,456 B.
  CHECK(st.pp_send_bytes.value() == 6291456.0);
}

TEST_CASE("ops: without SP each sublayer all-reduces once forward and once backward") {
  const ModelSpec m = gpt175();
  ParallelPlan p = megascale_plan();
  p.sequence_parallel = false;
  const ChunkProgram ch = build_stage(m, p, 1).chunks[0];
  int fwd = 0, bwd = 0;
  for (const Op* op : layer_ops(ch.forward, 2, Phase::kForward)) fwd += op->comm() != nullptr;
  for (const Op* op : layer_ops(ch.backward, 2, Phase::kBackward)) bwd += op->comm() != nullptr;
  CHECK(fwd == 2);
  CHECK(bwd == 2);
}

TEST_CASE("ops: a parallel block gathers and reduces once per layer") {
  ModelSpec m = gpt175();
  m.parallel_block = true;
  const ChunkProgram ch = build_stage(m, megascale_plan(), 1).chunks[0];
  int comms = 0;
  for (const Op* op : layer_ops(ch.forward, 2, Phase::kForward)) comms += op->comm() != nullptr;
  CHECK(comms == 2);  // one all-gather in, one reduce-scatter out
}

TEST_CASE("ops: recompute ops open the backward of a chunk") {
  const ModelSpec m = gpt175();
  ParallelPlan p = megascale_plan();
  for (Recompute rc : {Recompute::kSelective, Recompute::kFull}) {
    p.recompute = rc;
    const ChunkProgram ch = build_stage(m, p, 2).chunks[1];
    REQUIRE_FALSE(ch.backward.empty());
    CHECK(ch.backward.front().phase == Phase::kRecompute);
    const auto first_bwd = std::find_if(ch.backward.begin(), ch.backward.end(),
                                        [](const Op& o) { return o.phase == Phase::kBackward; });
    const bool all_recompute_first = std::all_of(
        ch.backward.begin(), first_bwd, [](const Op& o) { return o.phase == Phase::kRecompute; });
    CHECK(all_recompute_first);
    CHECK(std::none_of(first_bwd, ch.backward.end(),
                       [](const Op& o) { return o.phase == Phase::kRecompute; }));
    for (auto it = ch.backward.begin(); it != first_bwd; ++it)
      CHECK(it->model_flops.value() == 0.0);
  }
  p.recompute = Recompute::kNone;
  CHECK(build_stage(m, p, 2).chunks[1].backward.front().phase == Phase::kBackward);
}

TEST_CASE(
    "ops: DP gradient buckets and the distributed optimizer all-gather cover every parameter") {
  const ModelSpec m = gpt175();
  const ParallelPlan p = megascale_plan();
  const StageProgram st = build_stage(m, p, 3);
  // Bucket = max(40e6, 1e6 · 192) = 192e6 parameters.
  double rs = 0, ag = 0;
  for (const Op& op : st.dp_gradient_comm) {
    CHECK(op.comm()->kind == CollectiveOp::kReduceScatter);
    CHECK(op.comm()->size.value() <= 192e6 * 4.0);
    rs += op.comm()->size.value();
  }
  for (const Op& op : st.dp_param_comm) {
    CHECK(op.comm()->kind == CollectiveOp::kAllGather);
    ag += op.comm()->size.value();
  }
  const double params = static_cast<double>(st.parameters_per_rank);
  CHECK(rs == params * 4.0);  // fp32 gradients
  CHECK(ag == params * 2.0);  // bf16 parameters
  // Stage 3 of 8 holds 12 layers. Per rank: weights 12·h²/8 = 1.5·h²; split QKV and fc1
  // biases 3h/8 + 4h/8 = 0.875·h; replicated attention-out and fc2 biases 2h; two
  // LayerNorms 4h.
  const double h = 12288;
  CHECK(params == 12.0 * (1.5 * h * h + 0.875 * h + 2.0 * h + 4.0 * h));
  // Adam over this rank's 1/192 shard.
  REQUIRE(st.optimizer.size() == 2);
  CHECK(std::get<hw::MemoryShape>(*st.optimizer[1].kernel()).bytes_read.value() ==
        doctest::Approx(params / 192.0 * 16.0));
}

TEST_CASE("ops: ZeRO-3 gathers each layer's parameters and scatters its gradients") {
  const ModelSpec m = test::tiny_gqa();
  ParallelPlan p;
  p.dp = 4;
  p.global_batch = 4;
  p.zero3 = true;
  const StageProgram st = build_stage(m, p, 0);
  const int gathers = comm_count(st, Group::kDp, CollectiveOp::kAllGather);
  const int scatters = comm_count(st, Group::kDp, CollectiveOp::kReduceScatter);
  CHECK(gathers == 4);   // 2 layers × (forward + backward)
  CHECK(scatters == 2);  // 2 layers
  CHECK(st.dp_gradient_comm.empty());
  CHECK(st.dp_param_comm.empty());
}

TEST_CASE("ops: ZeRO-3 per tensor, with full recompute gathering again, and hybrid shard") {
  const ModelSpec m = test::tiny_gqa();
  ParallelPlan p = zero3_over_8();
  GeneratorOptions o = per_tensor_regather();
  const auto tensors = static_cast<int>(rank_layer_parameter_tensors(m, 1).size());
  // 2 layers × 3 gathers (forward, recompute, backward) × each tensor; a scatter per tensor.
  const StageProgram full = build_stage(m, p, 0, o);
  CHECK(comm_count(full, Group::kDp, CollectiveOp::kAllGather) == 2 * 3 * tensors);
  CHECK(comm_count(full, Group::kDp, CollectiveOp::kReduceScatter) == 2 * tensors);
  // Hybrid shard over 4 of the 8: the same collectives on the shard group, and each replica's
  // shard of the gradients (1/4 of them, fp32) all-reduced across the 2 replicas.
  p.shard_group = 4;
  const StageProgram hybrid = build_stage(m, p, 0, o);
  CHECK(comm_count(hybrid, Group::kDp, CollectiveOp::kAllGather) == 0);
  CHECK(comm_count(hybrid, Group::kDpShard, CollectiveOp::kAllGather) == 2 * 3 * tensors);
  double replica_bytes = 0;
  for (const Op& op : hybrid.dp_gradient_comm) {
    if (op.comm()->group == Group::kDpReplica) replica_bytes += op.comm()->size.value();
  }
  CHECK(replica_bytes == doctest::Approx(4.0 * static_cast<double>(hybrid.parameters_per_rank / 4)));
}

TEST_CASE("ops: ZeRO-3 fetched sub-module by sub-module, each gather just before its compute") {
  const ModelSpec m = test::tiny_gqa();
  const StageProgram st = deepspeed_zero3_stage(m, 0);
  // The next compute op after each run of gathers, and how many gathers there were in all.
  const auto after_gathers = [](const std::vector<Op>& ops, Phase phase) {
    std::vector<std::string> next;
    int gathers = 0;
    bool in_run = false;
    for (const Op& op : ops) {
      const CommOp* c = op.comm();
      const bool gather = c && c->kind == CollectiveOp::kAllGather && c->group == Group::kDp;
      if (gather && op.phase == phase) ++gathers;
      if (!gather && in_run && op.layer == 0) next.push_back(op.name);
      in_run = gather && op.phase == phase;
    }
    return std::make_pair(next, gathers);
  };
  const auto [fwd, fwd_gathers] = after_gathers(st.chunks[0].forward, Phase::kForward);
  // Layer 0's forward: the input norm, QKV, attention output, post-attention norm, fc1, fc2,
  // each gathered right before it (not the layer's tensors all before the input norm).
  REQUIRE(fwd.size() == 6);
  CHECK(fwd[0].find("input norm") != std::string::npos);
  CHECK(fwd[1].find("attention qkv") != std::string::npos);
  CHECK(fwd[2].find("attention out") != std::string::npos);
  CHECK(fwd[3].find("post-attention norm") != std::string::npos);
  CHECK(fwd[4].find("mlp fc1") != std::string::npos);
  CHECK(fwd[5].find("mlp fc2") != std::string::npos);
  const auto tensors = static_cast<int>(rank_layer_parameter_tensors(m, 1).size());
  CHECK(fwd_gathers == 2 * tensors);
  // The backward gathers in reverse order (fc2 first), as many as the forward's.
  const auto [bwd, bwd_gathers] = after_gathers(st.chunks[0].backward, Phase::kBackward);
  REQUIRE_FALSE(bwd.empty());
  CHECK(bwd[0].find("mlp fc2") != std::string::npos);
  CHECK(bwd_gathers == 2 * tensors);
}

TEST_CASE("ops: ZeRO-3 leaves tensors under the persistence threshold gathered") {
  // DeepSpeed's stage3_param_persistence_threshold: small tensors (here the norms, 64 elements)
  // stay gathered, so each pass gathers only the four weights of each layer; every tensor's
  // gradient is still reduce-scattered.
  const ModelSpec m = test::tiny_gqa();
  const StageProgram st = deepspeed_zero3_stage(m, 1000);
  for (const auto* ops : {&st.chunks[0].forward, &st.chunks[0].backward}) {
    for (const Op& op : *ops) {
      const CommOp* c = op.comm();
      if (c && c->group == Group::kDp && c->kind == CollectiveOp::kAllGather) {
        CHECK(c->size.value() >= 1000.0 * 2.0);  // bf16 elements of a weight
      }
    }
  }
  const int gathers = comm_count(st, Group::kDp, CollectiveOp::kAllGather);
  const int scatters = comm_count(st, Group::kDp, CollectiveOp::kReduceScatter);
  const auto tensors = static_cast<int>(rank_layer_parameter_tensors(m, 1).size());
  CHECK(tensors == 6);  // two norms, four weights (no biases)
  CHECK(gathers == 2 * 3 * 4);
  CHECK(scatters == 2 * tensors);
}

TEST_CASE("ops: GQA shapes on a TP rank") {
  const ModelSpec m =
      io::load_model(std::string(MEGASIM_SOURCE_DIR) + "/models/llama3-405b-like.json");
  ParallelPlan p;
  p.tp = 8;
  p.pp = 2;
  p.global_batch = 2;
  const ChunkProgram ch = build_stage(m, p, 0).chunks[0];
  for (const Op& op : ch.forward) {
    if (op.name == "layer 0 attention qkv fwd") {
      // 16 query heads and 1 KV head of 128 per rank: 2048 + 2·128 = 2304 columns.
      CHECK(std::get<hw::GemmShape>(*op.kernel()).n == 2304);
    }
    if (op.name == "layer 0 attention core fwd") {
      const auto& a = std::get<hw::AttentionShape>(*op.kernel());
      CHECK(a.heads == 16);
      CHECK(a.kv_heads == 1);
      CHECK(a.seq == 8192);
      CHECK(a.causal);
    }
    if (op.name == "layer 0 mlp fc1 fwd")
      CHECK(std::get<hw::GemmShape>(*op.kernel()).n == 2 * 6656);
  }
}

TEST_CASE("ops: every linear layer's GEMMs carry their role; the weight gradients are marked") {
  const ModelSpec m = gpt175();
  ParallelPlan p;
  p.tp = 8;
  p.sequence_parallel = true;
  const auto program = build_program(m, p);
  int forward = 0, dgrad = 0, wgrad = 0;
  for (const auto& chunk : program.front().chunks) {
    for (const Op& op : chunk.forward) forward += op.gemm_role == GemmRole::kForward;
    for (const Op& op : chunk.backward) {
      dgrad += op.gemm_role == GemmRole::kDataGrad;
      wgrad += op.gemm_role == GemmRole::kWeightGrad;
      if (op.gemm_role == GemmRole::kWeightGrad) {
        CHECK(op.name.find(" wgrad ") != std::string::npos);
        CHECK(std::holds_alternative<hw::GemmShape>(*op.kernel()));
      }
    }
  }
  // Four linear layers a transformer layer (qkv, attention out, fc1, fc2), plus the logits.
  const int layers = program.front().chunks.front().layers.count;
  CHECK(forward == 4 * layers + 1);
  CHECK(dgrad == forward);
  CHECK(wgrad == forward);
}

TEST_CASE("ops: a model without dropout adds its residuals plainly and keeps no dropout kernel") {
  const ModelSpec llama =
      io::load_model(std::string(MEGASIM_SOURCE_DIR) + "/models/llama3-405b-like.json");
  REQUIRE_FALSE(llama.dropout);
  ParallelPlan p;
  p.tp = 8;
  p.pp = 2;
  p.global_batch = 2;
  p.sequence_parallel = true;
  GeneratorOptions unfused;  // the unfused attention has a dropout kernel of its own
  unfused.fused_attention = false;
  const auto residual_of = [](const ChunkProgram& ch, const std::string& name) {
    for (const auto* ops : {&ch.forward, &ch.backward})
      for (const Op& op : *ops)
        if (op.name == name) return std::get<hw::MemoryShape>(*op.kernel());
    FAIL("no op named " << name);
    return hw::MemoryShape{};
  };
  const ChunkProgram plain = build_stage(llama, p, 0, unfused).chunks[0];
  for (const auto* ops : {&plain.forward, &plain.backward})
    for (const Op& op : *ops) CHECK(op.name.find("dropout") == std::string::npos);
  // Per rank, 8192 tokens / 8 (SP) × 16384 × 2 B = 32 MiB per tensor: the add reads two, writes one.
  const double x = 8192.0 / 8 * 16384 * 2;
  for (const char* name : {"layer 0 attention residual fwd", "layer 0 mlp residual bwd"}) {
    const hw::MemoryShape add = residual_of(plain, name);
    CHECK(add.kind == hw::MemoryKernel::kDropoutResidual);
    CHECK(add.bytes_read.value() == doctest::Approx(2.0 * x));
    CHECK(add.bytes_written.value() == doctest::Approx(x));
  }
  // The same layer with dropout writes a 1-byte mask beside the sum.
  ModelSpec with_dropout = llama;
  with_dropout.dropout = true;
  const ChunkProgram masked = build_stage(with_dropout, p, 0, unfused).chunks[0];
  const hw::MemoryShape fused_add = residual_of(masked, "layer 0 attention dropout residual fwd");
  CHECK(fused_add.kind == hw::MemoryKernel::kDropoutResidual);
  CHECK(fused_add.bytes_written.value() == doctest::Approx(1.5 * x));
}

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

TEST_CASE("ops: FP8 without SP casts with the transpose; not in a full recompute's first forward") {
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
