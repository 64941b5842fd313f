// Activation memory against Korthikanti et al. 2022, "Reducing Activation Recomputation in
// Large Transformer Models" (arXiv 2205.05198): Table 2 gives the bytes per transformer layer
// for each technique, section 4.2.3 / eq. (5) the first pipeline stage's total with 1F1B
// (p micro-batches of L/p layers: L layers' worth) and the interleaved factor
// (1 + (p − 1)/(p·m)), and Table 3 the configurations of the 22B, 175B, 530B and 1T models.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <string>

#include "engine/error.h"
#include "test_models.h"
#include "workload/memory.h"
#include "workload/program.h"

using namespace megasim;
using namespace megasim::workload;

namespace {

ModelSpec model(const std::string& name) {
  return io::load_model(std::string(MEGASIM_SOURCE_DIR) + "/models/" + name + ".json");
}

// Table 3 of the paper: t = 8 for all four models; micro-batch 4 for 22B, 1 otherwise.
ParallelPlan korthikanti_plan(const std::string& name) {
  ParallelPlan p;
  p.tp = 8;
  if (name == "korthikanti-22b") {
    p.micro_batch = 4;
    p.global_batch = 4;
  } else if (name == "korthikanti-175b") {
    p.pp = 8;
    p.vpp = 3;
    p.schedule = Schedule::kInterleaved;
    p.global_batch = 64;
  } else if (name == "korthikanti-530b") {
    p.pp = 35;
    p.vpp = 3;
    p.schedule = Schedule::kInterleaved;
    p.global_batch = 280;
  } else {
    p.pp = 64;
    p.global_batch = 512;
  }
  return p;
}

// 175B on TP 8 × PP 8 × DP 16, batch 128: the plan the model-state tests count bytes on.
ParallelPlan model_states_plan() {
  ParallelPlan p;
  p.tp = 8;
  p.pp = 8;
  p.dp = 16;
  p.global_batch = 128;
  return p;
}

}  // namespace

TEST_CASE("memory: per-layer activations are Korthikanti et al. Table 2's") {
  for (const std::string name :
       {"korthikanti-22b", "korthikanti-175b", "korthikanti-530b", "korthikanti-1t"}) {
    CAPTURE(name);
    const ModelSpec m = model(name);
    ParallelPlan p = korthikanti_plan(name);
    const double s = m.seq, b = p.micro_batch, h = m.hidden, a = m.heads, t = p.tp;
    const double sbh = s * b * h;
    // Table 2 rows, bytes per layer.
    const double tensor_parallel = sbh * (10.0 + 24.0 / t + 5.0 * a * s / (h * t));
    const double tp_sp = sbh / t * (34.0 + 5.0 * a * s / h);
    const double tp_selective = sbh * (10.0 + 24.0 / t);
    const double tp_sp_selective = sbh * 34.0 / t;
    const double full = 2.0 * sbh;

    CHECK(activation_bytes_per_layer(m, p).value() ==
          doctest::Approx(tensor_parallel).epsilon(1e-9));
    p.sequence_parallel = true;
    CHECK(activation_bytes_per_layer(m, p).value() == doctest::Approx(tp_sp).epsilon(1e-9));
    p.recompute = Recompute::kSelective;
    CHECK(activation_bytes_per_layer(m, p).value() ==
          doctest::Approx(tp_sp_selective).epsilon(1e-9));
    p.sequence_parallel = false;
    CHECK(activation_bytes_per_layer(m, p).value() == doctest::Approx(tp_selective).epsilon(1e-9));
    p.recompute = Recompute::kFull;
    CHECK(activation_bytes_per_layer(m, p).value() == doctest::Approx(full).epsilon(1e-9));
    // With no parallelism at all the first row, s·b·h·(34 + 5as/h).
    ParallelPlan none;
    none.micro_batch = p.micro_batch;
    none.global_batch = p.micro_batch;
    CHECK(activation_bytes_per_layer(m, none).value() ==
          doctest::Approx(sbh * (34.0 + 5.0 * a * s / h)).epsilon(1e-9));
  }
}

TEST_CASE("memory: GPT-3 175B's attention scores outweigh the rest of the layer") {
  // a = 96, s = 2048, h = 12288: 5as/h = 5·96·2048/12288 = 80 > 34, so selective recompute
  // keeps 34/(34 + 80) = 29.8% of the layer's activations.
  const ModelSpec m = model("gpt3-175b");
  ParallelPlan p;
  p.tp = 8;
  p.sequence_parallel = true;
  p.global_batch = 1;
  const double all = activation_bytes_per_layer(m, p).value();
  p.recompute = Recompute::kSelective;
  CHECK(activation_bytes_per_layer(m, p).value() / all == doctest::Approx(34.0 / 114.0));
}

TEST_CASE(
    "memory: the first stage holds L layers with 1F1B and (1 + (p-1)/(pm)) more interleaved") {
  // 1T: L = 128, p = 64, SP + selective: first stage holds 64 micro-batches × 2 layers.
  const ModelSpec t1 = model("korthikanti-1t");
  ParallelPlan p = korthikanti_plan("korthikanti-1t");
  p.sequence_parallel = true;
  p.recompute = Recompute::kSelective;
  const double sbh = 2048.0 * 25600.0;
  MemoryEstimate e = estimate_memory(t1, p, 0);
  CHECK(e.micro_batches_in_flight == 64.0);
  // 34·s·b·h/t a layer, and the layer being recomputed holds its unfused attention's scores,
  // 5·a·s²·b/t (a = 160: 64·s·b·h/t) (to the byte: 5 % was held until a test audit, 2026-12-07,
  // wide enough to lose a layer's dropout mask, 1/34).
  const double scores = 5.0 * 160.0 * 2048.0 * 2048.0 / 8.0;
  CHECK(e.activations.value() == doctest::Approx(sbh * 128.0 * 34.0 / 8.0 + scores).epsilon(1e-12));
  // The last stage holds one micro-batch.
  CHECK(estimate_memory(t1, p, 63).micro_batches_in_flight == 1.0);
  // ZB-H1: the last stage also holds the 63 deferred weight gradients its order allows, each
  // the inputs of the linears, 32·s·b·h/t a layer (SP); the first holds 1F1B's 64 and none.
  p.schedule = Schedule::kZeroBubble;
  CHECK(micro_batches_in_flight(p, 63) == 1.0);
  CHECK(pending_weight_grads(p, 63) == 63.0);
  CHECK(pending_weight_grads(p, 0) == 0.0);
  CHECK(micro_batches_in_flight(p, 0) == 64.0);
  CHECK(pending_weight_grad_bytes_per_layer(t1, p).value() == doctest::Approx(32.0 * sbh / 8.0));
  // The same with full recomputation: a W pass needs the linears' inputs all the same, where
  // a stored micro-batch keeps only its layers' inputs.
  p.recompute = Recompute::kFull;
  CHECK(pending_weight_grad_bytes_per_layer(t1, p).value() == doctest::Approx(32.0 * sbh / 8.0));
  const MemoryEstimate zb_full = estimate_memory(t1, p, 63);
  CHECK(zb_full.micro_batches_in_flight == doctest::Approx(1.0));  // between F and B
  CHECK(zb_full.pending_weight_grads == 63.0);
  CHECK(zb_full.pending_weight_grad_bytes.value() ==
        doctest::Approx(63.0 * 2.0 * 32.0 * sbh / 8.0));
  p.schedule = Schedule::kOneFOneB;
  const MemoryEstimate ofob_full = estimate_memory(t1, p, 63);
  CHECK(zb_full.activations.value() - ofob_full.activations.value() ==
        doctest::Approx(63.0 * 2.0 * 32.0 * sbh / 8.0));  // 63 passes × 2 layers
  p.recompute = Recompute::kSelective;

  // 175B: L = 96, p = 8, m = 3 chunks: factor 1 + 7/24.
  const ModelSpec m175 = model("korthikanti-175b");
  ParallelPlan q = korthikanti_plan("korthikanti-175b");
  q.sequence_parallel = true;
  q.recompute = Recompute::kSelective;
  const double sbh175 = 2048.0 * 12288.0;
  e = estimate_memory(m175, q, 0);
  // And the recomputed layer's attention scores, 5·a·s²·b/t with a = 96.
  const double scores175 = 5.0 * 96.0 * 2048.0 * 2048.0 / 8.0;
  CHECK(
      e.activations.value() ==
      doctest::Approx(sbh175 * 96.0 * 34.0 / 8.0 * (1.0 + 7.0 / 24.0) + scores175).epsilon(1e-12));
}

TEST_CASE("memory: model states follow Megatron-LM's bytes per parameter") {
  // bf16 weights with fp32 gradients: 18 bytes per parameter, 6 + 12/d with the distributed
  // optimizer (Megatron-LM docs, distributed optimizer).
  const ModelSpec m = model("gpt-175b-megascale");
  ParallelPlan p = model_states_plan();
  const double params = static_cast<double>(stage_parameters_per_rank(m, p, 3));
  MemoryEstimate e = estimate_memory(m, p, 3);
  CHECK((e.weights + e.gradients + e.optimizer_states).value() == doctest::Approx(18.0 * params));
  p.distributed_optimizer = true;
  e = estimate_memory(m, p, 3);
  CHECK((e.weights + e.gradients + e.optimizer_states).value() ==
        doctest::Approx((6.0 + 12.0 / 16.0) * params));
  // ZeRO-2: the fp32 gradients sharded too, 2 + 16/d, and a chunk's full gradients before the
  // reduce-scatter at its backward pass's end, here the whole stage's (the shard alone until
  // 2026-12-03); with DeepSpeed's reduce bucket, the bucket instead.
  p.zero2 = true;
  e = estimate_memory(m, p, 3);
  CHECK((e.weights + e.gradients + e.optimizer_states).value() ==
        doctest::Approx((2.0 + 16.0 / 16.0) * params + 4.0 * params));
  // Interleaved, 6 chunks of 2 layers: one chunk's.
  p.vpp = 6;
  const double stage6 = static_cast<double>(stage_parameters_per_rank(m, p, 3));
  const double layer2 = static_cast<double>(rank_layer_parameters(m, p.tp));
  CHECK(estimate_memory(m, p, 3).gradients.value() ==
        doctest::Approx(4.0 * stage6 / 16.0 + 4.0 * 2.0 * layer2));
  p.vpp = 1;
  MemoryOptions bucketed;
  bucketed.sharded.reduce_bucket_elements = 500'000'000;
  CHECK(estimate_memory(m, p, 3, bucketed).gradients.value() ==
        doctest::Approx(4.0 * params / 16.0 + 4.0 * 5e8));
  // Reduced bucket by bucket during the backward (a preset that overlaps DP): the bucket
  // filling and the one in flight, two of max(40 M, 1 M × 16) parameters, not the stage's 2.7 G
  // (which held more than ZeRO-1's gradients until 2026-12-06).
  MemoryOptions during;
  during.zero2_bucketed = true;
  const Bytes zero2 = estimate_memory(m, p, 3, during).gradients;
  CHECK(zero2.value() == doctest::Approx(4.0 * params / 16.0 + 4.0 * 2.0 * 40e6));
  p.zero2 = false;
  CHECK(zero2 < estimate_memory(m, p, 3, during).gradients * 0.1);
  p.zero3 = true;
  e = estimate_memory(m, p, 3);
  CHECK(e.optimizer_states.value() == doctest::Approx(12.0 * params / 16.0));
  // Weights: the shard (2/d per parameter) and two gathered layers (the one computing, the one
  // prefetched); gradients: the shard (4/d) and one layer's full gradient before its scatter.
  const double layer = static_cast<double>(rank_layer_parameters(m, p.tp));
  CHECK(e.weights.value() == doctest::Approx(2.0 * params / 16.0 + 2.0 * 2.0 * layer));
  CHECK(e.gradients.value() == doctest::Approx(4.0 * params / 16.0 + 4.0 * layer));
  // Hybrid shard over 4 of the 16: every shard four times the full shard's.
  p.shard_group = 4;
  e = estimate_memory(m, p, 3);
  CHECK(e.optimizer_states.value() == doctest::Approx(12.0 * params / 4.0));
  CHECK(e.weights.value() == doctest::Approx(2.0 * params / 4.0 + 2.0 * 2.0 * layer));
}

TEST_CASE("memory: gradient buffers in fp32 or in the training dtype") {
  // bf16 with fp32 gradients: 2 + 4 + 12 = 18 B per parameter. Kept in bf16 (FSDP's
  // reduce_dtype): 2 + 2 + 12 + an fp32 main gradient 4 = 20 B, of which 16 B shard with the
  // optimizer: with ZeRO-1 over 16, 2 + 2 + 16/16 = 5 B against 2 + 4 + 12/16 = 6.75 B.
  const ModelSpec m = model("gpt-175b-megascale");
  ParallelPlan p = model_states_plan();
  p.distributed_optimizer = true;
  const double params = static_cast<double>(stage_parameters_per_rank(m, p, 3));
  const auto states = [&] {
    const MemoryEstimate e = estimate_memory(m, p, 3);
    return (e.weights + e.gradients + e.optimizer_states).value();
  };
  CHECK(states() == doctest::Approx(6.75 * params));
  p.fp32_gradients = false;
  CHECK(states() == doctest::Approx(5.0 * params));
  CHECK(gradient_bytes(p) == 2.0);
}

TEST_CASE("memory: one layer's parameter tensors add up to its parameters") {
  // GPT (LayerNorm, biases): norms, QKV, output, fc1 and fc2, each weight and bias.
  const ModelSpec gpt = model("gpt-175b-megascale");
  CHECK(rank_layer_parameter_tensors(gpt, 8).size() == 12);
  const auto t = rank_layer_parameter_tensors(gpt, 8);
  // QKV weight and fc1 weight of GPT-3 175B on TP 8: 12288 x 4608 and 12288 x 6144.
  CHECK(t[2] == 12288LL * 4608);
  CHECK(t[8] == 12288LL * 6144);
  std::int64_t sum = 0;
  for (auto n : t) sum += n;
  CHECK(sum == rank_layer_parameters(gpt, 8));
}

TEST_CASE("memory: a plan that does not fit names the stage every part and the capacity") {
  const ModelSpec m = model("gpt-175b-megascale");
  ParallelPlan p;
  p.tp = 8;
  p.global_batch = 8;
  const MemoryEstimate e = estimate_memory(m, p, 0);
  // 175B parameters / 8 ranks × 18 B ≈ 366 GiB of model states alone.
  CHECK(e.total().value() > 300.0 * kGiB.value());
  try {
    check_fits(e, kGiB * 80.0);
    FAIL("expected an error");
  } catch (const InputError& err) {
    const std::string msg = err.what();
    CHECK(msg.find("pipeline stage 0 needs") != std::string::npos);
    CHECK(msg.find("the device has 80.0 GiB") != std::string::npos);
    CHECK(msg.find("optimizer states") != std::string::npos);
    CHECK(msg.find("activations") != std::string::npos);
  }
  // MegaScale's own plan fits an 80 GiB A100 on every stage.
  const ParallelPlan ms = megasim::test::megascale_plan();
  for (int stage = 0; stage < 8; ++stage) {
    CHECK_NOTHROW(check_fits(estimate_memory(m, ms, stage), kGiB * 80.0));
  }
}

TEST_CASE("memory: the fragmentation margin makes a plan tight, never refused") {
  // required() is the tensors and the 2 GiB reserve; total() adds 5 % of the tensors. A device
  // between the two fits the plan tightly; below required() it is refused, naming both figures.
  const MemoryEstimate e =
      estimate_memory(model("gpt-175b-megascale"), megasim::test::megascale_plan(), 0);
  const Bytes tensors =
      e.weights + e.gradients + e.optimizer_states + e.activations + e.embedding_logits;
  CHECK(e.fragmentation.value() == doctest::Approx(0.05 * tensors.value()));
  CHECK(e.required().value() == doctest::Approx(tensors.value() + 2.0 * kGiB.value()));
  CHECK(e.total().value() == doctest::Approx((e.required() + e.fragmentation).value()));
  CHECK(fit(e, e.total()) == Fit::kFits);
  const Bytes between = (e.required() + e.total()) * 0.5;
  CHECK(fit(e, between) == Fit::kTight);
  MemoryEstimate light = e;  // the worst stage judges a plan, wherever it stands
  light.activations = Bytes(0.0);
  CHECK(worst_fit({light, e, light}, between) == Fit::kTight);
  CHECK_NOTHROW(check_fits(e, between));
  const Bytes below = e.required() * 0.99;
  CHECK(fit(e, below) == Fit::kDoesNotFit);
  CHECK((worst_fit({light, e}, below) == Fit::kDoesNotFit && worst_fit({}, below) == Fit::kFits));
  try {
    check_fits(e, below);
    FAIL("expected an error");
  } catch (const OutOfMemoryError& err) {
    const std::string msg = err.what();
    CHECK(msg.find(fmt::format("needs {:.1f} GiB per GPU ({:.1f} with the fragmentation margin)",
                               e.required() / kGiB, e.total() / kGiB)) != std::string::npos);
  }
}

TEST_CASE("memory: a Llama 3 layer stores what it saves for backward, no dropout masks") {
  // Llama 3 405B (h 16384, 128 heads, 8 KV heads of 128, f 53248, no dropout), fused attention,
  // TP 8 with SP, per token in bytes (memory.cpp derives each term):
  //   replicated: two norm inputs and two norm outputs, 4 × 2h = 131,072 (no masks)
  //   TP-split: Q 2h + K, V 4·kv (kv = 1024) + attention output 2h = 69,632;
  //             SwiGLU gate and up 4f + their product 2f = 6f = 319,488;
  //             FlashAttention's fp32 log-sum-exp 4 × 128 = 512: 389,632
  //   one rank: (131,072 + 389,632) / 8 = 65,088 B per token, × 8,192 tokens = 533,200,896 B.
  const ModelSpec m = model("llama3-405b-like");
  CHECK_FALSE(m.dropout);
  ParallelPlan p;
  p.tp = 8;
  p.sequence_parallel = true;
  p.global_batch = 1;
  MemoryOptions fused;
  fused.fused_attention = true;
  const LayerActivationTerms t = layer_activation_terms(m, fused);
  CHECK(t.replicated == 131072.0);
  CHECK(t.tp_split == 389632.0);
  CHECK(t.per_key == 0.0);
  CHECK(activation_bytes_per_layer(m, p, fused).value() == 533200896.0);
  // The same layer with GPT's dropout: a 1-byte mask after attention and after the MLP.
  ModelSpec with_dropout = m;
  with_dropout.dropout = true;
  CHECK(layer_activation_terms(with_dropout, fused).replicated == 131072.0 + 2.0 * 16384.0);
  // Unfused attention keeps the softmax output per head and key: 2 B without dropout, 5 B
  // (output, mask, dropped-out copy) with it.
  CHECK(layer_activation_terms(m).per_key == 2.0 * 128);
  CHECK(layer_activation_terms(with_dropout).per_key == 5.0 * 128);
}

TEST_CASE("memory: context parallelism divides the activations and shards states over dp × cp") {
  // Each CP rank keeps seq / cp tokens of every sequence: exactly half the activations at cp 2
  // (the per-key terms too: half the queries, all the keys). The distributed optimizer shards
  // over dp × cp (Megatron-Core's data-parallel group with context parallelism).
  const ModelSpec m = model("llama3-405b-like");
  ParallelPlan p;
  p.tp = 8;
  p.pp = 2;
  p.dp = 4;
  p.sequence_parallel = true;
  p.distributed_optimizer = true;
  p.global_batch = 8;
  p.layer_split = {63, 63};
  const MemoryEstimate one = estimate_memory(m, p, 1);
  for (const bool fused : {true, false}) {
    MemoryOptions o;
    o.fused_attention = fused;
    ParallelPlan q = p;
    q.cp = 2;
    CHECK(activation_bytes_per_layer(m, q, o).value() ==
          doctest::Approx(activation_bytes_per_layer(m, p, o).value() / 2.0));
  }
  ParallelPlan q = p;
  q.cp = 2;
  const MemoryEstimate two = estimate_memory(m, q, 1);
  CHECK(two.activations.value() == doctest::Approx(one.activations.value() / 2.0));
  CHECK(two.weights.value() == doctest::Approx(one.weights.value()));
  CHECK(two.optimizer_states.value() == doctest::Approx(one.optimizer_states.value() / 2.0));
  // The last stage's fp32 logits, 4·(s/cp)·b·V/t, halve too.
  CHECK(two.embedding_logits.value() == doctest::Approx(one.embedding_logits.value() / 2.0));
}

TEST_CASE("memory: a micro-batch group other than pp changes what the interleaved warm-up holds") {
  // Stage s holds (pp − s − 1)·2 + (vpp − 1)·g + 1 chunks at its peak, g the micro-batch group:
  // PP 16, VPP 8, 32 micro-batches: g = 16 (Megatron's) gives stage 1 28 + 112 + 1 = 141
  // chunks = 17.625 stage micro-batches. g = 32 is one round over pp, which Megatron-Core 0.10+
  // warms up as any step (stage 1: 28 + 224 + 1 = 253 chunks = 31.625; stage 15: 225 chunks =
  // 28.125); until 2026-12-03 megasim ran every forward first there. A round of pp (32
  // micro-batches on PP 32) or of fewer (Llama 3's N under pp, which must hold the step) runs
  // every forward first (step::interleaved_warmup): all 32 in flight on every stage.
  ParallelPlan p;
  p.pp = 16;
  p.vpp = 8;
  p.schedule = Schedule::kInterleaved;
  p.global_batch = 32;
  CHECK(micro_batches_in_flight(p, 1) == 17.625);
  p.microbatch_group = 32;
  CHECK(micro_batches_in_flight(p, 1) == 31.625);
  CHECK(micro_batches_in_flight(p, 15) == 28.125);
  p.pp = 32;
  p.microbatch_group = 0;
  CHECK(micro_batches_in_flight(p, 1) == 32.0);
  CHECK(micro_batches_in_flight(p, 31) == 32.0);
}

TEST_CASE("memory: the interleaved warm-up holds as many passes at any batch, up to the schema's") {
  // Korthikanti's 175B (PP 8, VPP 3) holds (p − 1)·2 + (v − 1)·p + 1 = 31 chunks on stage 0,
  // 10.33 micro-batches, however many micro-batches the step has: m · v passed 2³¹ at a global
  // batch of 715,827,888, and the plan held none (inspect then passed a plan 90.8 GiB needs)
  // until 2026-12-06.
  ParallelPlan p = korthikanti_plan("korthikanti-175b");
  const double held = micro_batches_in_flight(p, 0);
  CHECK(held == doctest::Approx(31.0 / 3.0));
  for (const std::int64_t batch : {715827880LL, 715827888LL, 2147483648LL}) {
    p.global_batch = batch;
    CHECK(micro_batches_in_flight(p, 0) == held);
    const std::vector<double> chunks = passes_held_at_peak(p, 0, {1.0, 1.0, 1.0});
    CHECK(chunks[0] + chunks[1] + chunks[2] == 31.0);
  }
}

TEST_CASE("memory: FP8 keeps the linear layers' inputs in one byte and FP8 copies of the weights") {
  // The Llama 3 405B-like layer of the case above (h 16,384, q 16,384, kv 1,024, f 53,248),
  // under FP8, per token:
  //   replicated: two norm inputs (2h each) and their FP8 outputs (h each): 6h = 98,304
  //   TP-split: Q, K and V (2q + 4kv = 36,864), the out-projection's own FP8 cast of the
  //             attention output (q = 16,384); SwiGLU's gate and up (4f) and fc2's FP8 input
  //             (f): 5f = 266,240; the log-sum-exp 512: 320,000
  //   attention_output: the bf16 output FlashAttention keeps (2q = 32,768), unless recomputed
  const ModelSpec m = model("llama3-405b-like");
  MemoryOptions fused;
  fused.fused_attention = true;
  const LayerActivationTerms t = layer_activation_terms(m, fused, true);
  CHECK(t.replicated == 98304.0);
  CHECK(t.tp_split == 320000.0);
  CHECK(t.attention_output == 32768.0);
  // Unfused, nothing keeps the 16-bit output (the PV product's output is not saved).
  CHECK(layer_activation_terms(m, MemoryOptions{}, true).attention_output == 0.0);
  // GeLU (the 175B GPT layer, q = h = 12,288, f = 49,152): its input (2f) and fc2's FP8 input
  // (f) where bf16 keeps 4f, and the out-projection's cast (q) where bf16 keeps 2q: q + f less.
  const ModelSpec gpt = model("gpt-175b-megascale");
  CHECK(layer_activation_terms(gpt, fused, false).tp_split -
            layer_activation_terms(gpt, fused, true).tp_split ==
        12288.0 + 49152.0);
  ParallelPlan p;
  p.tp = 8;
  p.pp = 2;
  p.sequence_parallel = true;
  p.global_batch = 2;
  ParallelPlan fp8 = p;
  fp8.fp8 = true;
  CHECK(activation_bytes_per_layer(m, fp8, fused).value() ==
        8192.0 * (98304.0 + 320000.0 + 32768.0) / 8.0);
  fp8.recompute = Recompute::kSelective;
  CHECK(activation_bytes_per_layer(m, fp8, fused).value() == 8192.0 * (98304.0 + 320000.0) / 8.0);
  fp8.recompute = Recompute::kNone;
  // Weights: 2 B more for each linear weight of the stage (its FP8 copy and transpose).
  const double linear = static_cast<double>(stage_linear_weights_per_rank(m, fp8, 0));
  CHECK(linear > 0.0);
  CHECK(estimate_memory(m, fp8, 0, fused).weights.value() ==
        estimate_memory(m, p, 0, fused).weights.value() + 2.0 * linear);
  // FP8 weights (fp8_params): the FP8 weight and its transpose in place of the 16-bit weight.
  fp8.fp8_params = true;
  CHECK(estimate_memory(m, fp8, 0, fused).weights.value() ==
        estimate_memory(m, p, 0, fused).weights.value());
}
