#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "test_models.h"

using namespace megasim;
using namespace megasim::workload;
using megasim::test::gpt175;
using megasim::test::layer_ops;
using megasim::test::megascale_plan;

namespace {

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

TEST_CASE(
    "ops: a chunk's parameters, its share of the stage's DP traffic, hold its embedding or head") {
  const ModelSpec m = gpt175();
  ParallelPlan p = megascale_plan();
  // Llama 3's kind of split: the first chunk of stage 0 and the last of the last stage hold
  // no layer, only the embedding and the output head; their stages' other chunks next to them
  // (virtual stages pp and vpp·pp − 1 − pp, in model order) take 4.
  const auto n = static_cast<std::size_t>(p.pp * p.vpp);
  p.layer_split.assign(n, 2);
  p.layer_split.front() = p.layer_split.back() = 0;
  p.layer_split[static_cast<std::size_t>(p.pp)] =
      p.layer_split[n - 1 - static_cast<std::size_t>(p.pp)] = 4;
  REQUIRE_NOTHROW(validate_plan(m, p));
  for (int s : {0, 3, p.pp - 1}) {
    const StageProgram st = build_stage(m, p, s);
    std::int64_t sum = 0;
    for (const auto& ch : st.chunks) sum += ch.parameters;
    CHECK(sum == st.parameters_per_rank);
  }
  const std::int64_t vocab_r = (m.vocab + p.tp - 1) / p.tp;
  const StageProgram first = build_stage(m, p, 0);
  CHECK(first.chunks.front().layers.count == 0);
  CHECK(first.chunks.front().parameters == vocab_r * m.hidden + m.seq * m.hidden);
  CHECK(first.chunks[1].parameters == 4 * rank_layer_parameters(m, p.tp));
  const StageProgram last = build_stage(m, p, p.pp - 1);
  CHECK(last.chunks.back().parameters > vocab_r * m.hidden);  // the embedding's copy and the norm
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

TEST_CASE("ops: each layer's recompute comes right before its backward, the last layer first") {
  // As Megatron-LM's and DeepSpeed's CheckpointFunction re-runs a block in its backward; until
  // 2026-12-07 every layer's recompute opened the chunk's backward.
  const ModelSpec m = gpt175();
  ParallelPlan p = megascale_plan();
  for (Recompute rc : {Recompute::kSelective, Recompute::kFull}) {
    CAPTURE(static_cast<int>(rc));
    p.recompute = rc;
    const ChunkProgram ch = build_stage(m, p, 2).chunks[1];
    REQUIRE_FALSE(ch.backward.empty());
    // The layers' ops in program order: each layer's recompute, then its backward, never
    // another layer's between; the layers from the last down.
    std::vector<int> layers;
    Phase previous = Phase::kBackward;
    for (const Op& op : ch.backward) {
      if (op.layer < 0) continue;
      if (layers.empty() || op.layer != layers.back()) {
        CHECK(op.phase == Phase::kRecompute);  // a layer opens with its recompute
        layers.push_back(op.layer);
      } else if (op.phase == Phase::kRecompute) {
        CHECK(previous == Phase::kRecompute);  // no recompute after its backward began
      }
      if (op.phase == Phase::kRecompute) CHECK(op.model_flops.value() == 0.0);
      previous = op.phase;
    }
    REQUIRE(layers.size() == static_cast<std::size_t>(ch.layers.count));
    for (std::size_t i = 1; i < layers.size(); ++i) CHECK(layers[i] == layers[i - 1] - 1);
  }
  p.recompute = Recompute::kNone;
  const StageProgram none = build_stage(m, p, 2);  // held: a range-for over a temporary's member
  for (const Op& op : none.chunks[1].backward) CHECK(op.phase != Phase::kRecompute);
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
  // shard of the gradients (1/4 of them, fp32) all-reduced across the 2 replicas: a layer's
  // right after each of its reduce-scatters, every backward pass (PyTorch FSDP's _reduce_grad),
  // the rest (embedding, final norm) once a step.
  p.shard_group = 4;
  const StageProgram hybrid = build_stage(m, p, 0, o);
  CHECK(comm_count(hybrid, Group::kDp, CollectiveOp::kAllGather) == 0);
  CHECK(comm_count(hybrid, Group::kDpShard, CollectiveOp::kAllGather) == 2 * 3 * tensors);
  CHECK(comm_count(hybrid, Group::kDpReplica, CollectiveOp::kAllReduce) == 2 * tensors);
  const std::vector<Op>& backward = hybrid.chunks[0].backward;
  double replica_bytes = 0;
  for (std::size_t i = 0; i < backward.size(); ++i) {
    const CommOp* c = backward[i].comm();
    if (c == nullptr || c->group != Group::kDpReplica) continue;
    // Its reduce-scatter just before it, a quarter of its size.
    REQUIRE(i > 0);
    const CommOp* scatter = backward[i - 1].comm();
    REQUIRE(scatter != nullptr);
    CHECK(scatter->kind == CollectiveOp::kReduceScatter);
    CHECK(c->elements == scatter->elements / 4);
    replica_bytes += c->size.value();
  }
  for (const Op& op : hybrid.dp_gradient_comm) {
    if (op.comm()->group == Group::kDpReplica) replica_bytes += op.comm()->size.value();
  }
  CHECK(replica_bytes ==
        doctest::Approx(4.0 * static_cast<double>(hybrid.parameters_per_rank / 4)).epsilon(1e-3));
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

TEST_CASE("ops: ZeRO-3 keeps gathered for its backward a sub-module reused within the distance") {
  // DeepSpeed's _keep_for_later: after the recompute's forward, fc2 comes again with nothing
  // gathered between (megasim leaves the containers' external biases out: kept at any distance
  // above 0); fc1 has fc2's recompute and backward
  // between, 2 × fc2's elements; the rest more. Counted by backward gathers of the stage.
  const ModelSpec m = test::tiny_gqa();
  const auto elements = [&](SubModule s) {
    std::int64_t n = 0;
    for (const std::int64_t t : sub_module_tensors(m, 1, s)) n += t;
    return n;
  };
  const auto count = [](const std::vector<std::int64_t>& v) { return static_cast<int>(v.size()); };
  const auto backward_gathers = [&](std::int64_t distance) {
    GeneratorOptions o = per_tensor_regather();
    o.shard_per_sub_module = true;
    o.shard_max_reuse_distance = distance;
    const StageProgram st = build_stage(m, zero3_over_8(), 0, o);
    int n = 0;
    for (const Op& op : st.chunks[0].backward) {
      const CommOp* c = op.comm();
      n += c && c->group == Group::kDp && c->kind == CollectiveOp::kAllGather &&
           op.phase == Phase::kBackward;
    }
    return n;
  };
  const int all = backward_gathers(0);
  const int fc2 = count(sub_module_tensors(m, 1, SubModule::kFc2));
  const int fc1 = count(sub_module_tensors(m, 1, SubModule::kFc1));
  CHECK(all == 2 * static_cast<int>(rank_layer_parameter_tensors(m, 1).size()));
  CHECK(backward_gathers(1) == all - 2 * fc2);
  CHECK(backward_gathers(2 * elements(SubModule::kFc2)) == all - 2 * fc2);  // not strictly within
  CHECK(backward_gathers(2 * elements(SubModule::kFc2) + 1) == all - 2 * (fc2 + fc1));
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
  const auto find = [&ch](const std::string& name) -> const Op& {
    const auto it = std::find_if(ch.forward.begin(), ch.forward.end(),
                                 [&name](const Op& op) { return op.name == name; });
    REQUIRE_MESSAGE(it != ch.forward.end(), name);
    return *it;
  };
  // 16 query heads and 1 KV head of 128 per rank: 2048 + 2·128 = 2304 columns.
  CHECK(std::get<hw::GemmShape>(*find("layer 0 attention qkv fwd").kernel()).n == 2304);
  const auto& a = std::get<hw::AttentionShape>(*find("layer 0 attention core fwd").kernel());
  CHECK(a.heads == 16);
  CHECK(a.kv_heads == 1);
  CHECK(a.seq == 8192);
  CHECK(a.causal);
  CHECK(std::get<hw::GemmShape>(*find("layer 0 mlp fc1 fwd").kernel()).n == 2 * 6656);
}

TEST_CASE("ops: every linear layer's GEMMs carry their role, the weight gradients are marked") {
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
