// Memory that depends on the schedule's order and on the system: which chunks an interleaved
// stage holds when its layers are uneven, the last stage's logits under GPipe, DeepSpeed's
// BF16_Optimizer and what ZeRO-3 keeps whole, each against a count done by hand here.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "io/model_loader.h"
#include "workload/memory.h"
#include "workload/program.h"

using namespace megasim;
using namespace megasim::workload;

namespace {

ModelSpec model(const std::string& name) {
  return io::load_model(std::string(MEGASIM_SOURCE_DIR) + "/models/" + name + ".json");
}

// ZeRO-3 over 64 ranks at TP `tp`, one micro-batch each, fp16 with 16-bit gradients.
ParallelPlan zero3_fp16_over_64(int tp) {
  ParallelPlan p;
  p.tp = tp;
  p.dp = 64;
  p.global_batch = 64;
  p.zero3 = true;
  p.precision = Precision::kFp16;
  p.fp32_gradients = false;
  return p;
}

// Llama 3 405B's published plan: 126 layers on PP 16 × VPP 8, one a virtual stage, the first
// virtual stage holding only the embedding and the last only the output layer; 32
// micro-batches (Megatron's group of pp = 16).
ParallelPlan llama3_plan() {
  ParallelPlan p;
  p.tp = 8;
  p.pp = 16;
  p.vpp = 8;
  p.schedule = Schedule::kInterleaved;
  p.sequence_parallel = true;
  p.global_batch = 32;
  p.layer_split.assign(128, 1);
  p.layer_split.front() = 0;
  p.layer_split.back() = 0;
  return p;
}

// Megatron's interleaved order on stage `stage`, counted pass by pass: forward k runs chunk
// (k mod g·v) div g, backward k chunk v − 1 − that; after the warm-up's forwards each steady
// step runs a forward, then a backward. The most transformer layers held at once.
double most_layers_held(const ModelSpec& m, const ParallelPlan& p, int stage) {
  const int v = p.vpp, g = p.pp, total = static_cast<int>(p.micro_batches()) * v;
  const int warmup = 2 * (p.pp - stage - 1) + (v - 1) * g;
  const auto layers = [&](int chunk) { return chunk_layers(m, p, stage, chunk).count; };
  int held = 0, most = 0, forwards = 0, backwards = 0;
  for (; forwards < warmup; ++forwards) held += layers((forwards % (g * v)) / g);
  while (forwards < total) {
    held += layers((forwards++ % (g * v)) / g);
    most = std::max(most, held);
    held -= layers(v - 1 - (backwards++ % (g * v)) / g);
  }
  return most;
}

}  // namespace

TEST_CASE("memory: an uneven interleaved stage holds the layers of the chunks in flight") {
  // Stage 0's extra warm-up forwards run its chunk 0, which holds no layer: 112 layer passes
  // at its peak, not 7 layers × 17.875 stage micro-batches (125). Stage 1 holds 141 one-layer
  // chunks; the last stage's logits-only chunk leaves as one-layer chunks arrive (113).
  const ModelSpec m = model("llama3-405b-like");
  const ParallelPlan p = llama3_plan();
  const double per_layer = activation_bytes_per_layer(m, p).value();
  CHECK(most_layers_held(m, p, 0) == 112);
  CHECK(most_layers_held(m, p, 1) == 141);
  CHECK(most_layers_held(m, p, 15) == 113);
  const MemoryEstimate first = estimate_memory(m, p, 0);
  CHECK(first.activations.value() == doctest::Approx(112 * per_layer));
  CHECK(first.micro_batches_in_flight == doctest::Approx(16.0));
  CHECK(estimate_memory(m, p, 1).activations.value() == doctest::Approx(141 * per_layer));
  // The last stage's peak is the larger of 112 layers with one pass's logits and 113 layers.
  const MemoryEstimate last = estimate_memory(m, p, 15);
  const double logits = 2.0 * 8192 * 16384 / 8 + 4.0 * 8192 * m.vocab / 8;
  CHECK(last.activations.value() + last.embedding_logits.value() ==
        doctest::Approx(std::max(112 * per_layer + logits, 113 * per_layer)));
  // An even split (126 layers on PP 14 × VPP 9, one a chunk, 28 micro-batches) holds Megatron's
  // warm-up plus one on stage 1: (14 − 2)·2 + 8·14 + 1 = 137 one-layer chunk passes, by hand and
  // by the replay above.
  ParallelPlan even = p;
  even.layer_split.clear();
  even.pp = 14;
  even.vpp = 9;
  even.global_batch = 28;
  CHECK(most_layers_held(m, even, 1) == 137);
  CHECK(estimate_memory(m, even, 1).activations.value() == doctest::Approx(137 * per_layer));
}

TEST_CASE("memory: GPipe keeps every micro-batch's logits on the last stage") {
  // All forwards run first, so the last stage holds m passes of its final norm's input and
  // output and fp32 logits (Korthikanti et al.'s 4·s·b·h/t·(1 + V/h) with SP each; the norm's
  // output was left out until 2026-12-06), as its activations.
  const ModelSpec m = model("korthikanti-175b");
  ParallelPlan p;
  p.tp = 8;
  p.pp = 12;
  p.sequence_parallel = true;
  p.global_batch = 48;
  p.schedule = Schedule::kGpipe;
  const double per_pass = 4.0 * 2048 * 12288 / 8 + 4.0 * 2048 * m.vocab / 8;
  CHECK(estimate_memory(m, p, 11).embedding_logits.value() == doctest::Approx(48 * per_pass));
  p.schedule = Schedule::kOneFOneB;
  CHECK(estimate_memory(m, p, 11).embedding_logits.value() == doctest::Approx(per_pass));
}

TEST_CASE("memory: DeepSpeed's BF16_Optimizer keeps the bf16 gradients beside the fp32 ones") {
  const ModelSpec m = model("bloom-176b");
  ParallelPlan p;
  p.tp = 4;
  p.pp = 14;
  p.dp = 8;
  p.global_batch = 16;
  p.precision = Precision::kBf16;
  p.distributed_optimizer = true;
  MemoryOptions o;
  const double params = static_cast<double>(stage_parameters_per_rank(m, p, 1));
  const double plain = estimate_memory(m, p, 1, o).gradients.value();
  CHECK(plain == doctest::Approx(4.0 * params));
  o.pipe_bf16_optimizer = true;
  CHECK(estimate_memory(m, p, 1, o).gradients.value() == doctest::Approx(6.0 * params));
  // Not at ZeRO stage 2, where DeepSpeed runs its ZeRO optimizer, nor with fp16.
  p.zero2 = true;
  // ZeRO-2: the shard and the stage's gradients before their reduce-scatter (one chunk).
  CHECK(estimate_memory(m, p, 1, o).gradients.value() ==
        doctest::Approx(4.0 * params / 8 + 4.0 * params));
  p.zero2 = false;
  p.precision = Precision::kFp16;
  p.fp32_gradients = true;
  CHECK(estimate_memory(m, p, 1, o).gradients.value() == doctest::Approx(plain));
}

TEST_CASE("memory: ZeRO-3 holds whole what the system's gathers and reductions hold") {
  // 175B at TP 1: a layer's weights are 12h² (QKV 3h², out h², fc1 4h², fc2 4h²) and 13h of
  // biases and norms (every one under DeepSpeed's 100,000-element persistence threshold).
  const ModelSpec m = model("korthikanti-175b");
  const ParallelPlan p = zero3_fp16_over_64(1);
  const double h = 12288.0, layer = static_cast<double>(rank_layer_parameters(m, 1));
  const double shard = static_cast<double>(stage_parameters_per_rank(m, p, 0)) / 64;
  MemoryOptions o;  // the default: a layer a unit, one prefetched, a layer's gradients
  MemoryEstimate e = estimate_memory(m, p, 0, o);
  CHECK(e.weights.value() == doctest::Approx(2.0 * shard + 2.0 * 2.0 * layer));
  CHECK(e.gradients.value() == doctest::Approx(2.0 * shard + 2.0 * layer));
  o.sharded.prefetch = 0;  // gathered in line: one layer at a time
  CHECK(estimate_memory(m, p, 0, o).weights.value() == doctest::Approx(2.0 * shard + 2.0 * layer));
  // DeepSpeed's ZeRO-3 of 2021: the sub-module computing and the next (fc1 then fc2: 8h²),
  // every layer's small tensors, the 5e8-element reduce buffer and fc1's 4h² gradient beside it.
  o.sharded = {true, true, 1, 100000, 500000000};
  e = estimate_memory(m, p, 0, o);
  CHECK(layer == doctest::Approx(12.0 * h * h + 13.0 * h));
  CHECK(e.weights.value() == doctest::Approx(2.0 * shard + 2.0 * (8.0 * h * h + 96 * 13.0 * h)));
  CHECK(e.gradients.value() == doctest::Approx(2.0 * shard + 2.0 * (5e8 + 4.0 * h * h)));
}

TEST_CASE("memory: ZeRO-3's sub-modules kept from the recompute to their backward stay gathered") {
  // DeepSpeed's reuse distance at 1e9 elements for 175B: at TP 1 only fc2 (nothing between its
  // recompute and its backward); at TP 2 fc1 too (2 × fc2's 2h² = 6.04e8); a parallel block
  // runs attention output's backward right after fc2's, so at TP 2 it is within fc1 + 2 fc2.
  const ModelSpec m = model("korthikanti-175b");
  using S = SubModule;
  CHECK(kept_for_backward(m, 1, 1'000'000'000) == std::vector<S>{S::kFc2});
  CHECK(kept_for_backward(m, 1, 0).empty());
  CHECK(kept_for_backward(m, 2, 1'000'000'000) == std::vector<S>{S::kFc1, S::kFc2});
  ModelSpec block = m;
  block.parallel_block = true;
  CHECK(kept_for_backward(block, 2, 1'000'000'000) ==
        std::vector<S>{S::kAttentionOut, S::kFc1, S::kFc2});
  // Memory at TP 2 with full recompute: fc1 and fc2 (2h² each) gathered at the backward's start
  // beside the prefetch of the first the backward gathers again, the attention output (h²/2;
  // the norm between is persistent): 4.5h², where fc1 and fc2 alone were 4h².
  ParallelPlan p = zero3_fp16_over_64(2);
  p.recompute = Recompute::kFull;
  const double h = 12288.0;
  MemoryOptions o;
  o.sharded = {true, true, 1, 100000, 500000000, 0};
  const double none = estimate_memory(m, p, 0, o).weights.value();
  o.sharded.max_reuse_distance = 1'000'000'000;
  const double kept = estimate_memory(m, p, 0, o).weights.value();
  CHECK(kept - none == doctest::Approx(2.0 * 0.5 * h * h));  // h²/2 elements of 2 B more
}

TEST_CASE("memory: a shard of one rank under FSDP holds its parameters once, nothing gathered") {
  // FSDP clamps to NO_SHARD at one rank: the whole weights and gradients, no gathered layer
  // beside them, as without ZeRO-3 (a gathered layer was counted until 2026-12-07). DeepSpeed
  // keeps its partition and gathers into a buffer of its own, so without the switch the
  // gathered layer stays, and a shard group of more ranks is sharded as before.
  const ModelSpec m = model("korthikanti-175b");
  ParallelPlan p;
  p.tp = 8;
  p.global_batch = 1;
  p.zero3 = true;
  const double params = static_cast<double>(stage_parameters_per_rank(m, p, 0));
  MemoryOptions fsdp;
  fsdp.sharded.whole_at_one_rank = true;
  const MemoryEstimate whole = estimate_memory(m, p, 0, fsdp);
  CHECK(whole.weights.value() == doctest::Approx(2.0 * params));
  CHECK(whole.gradients.value() == doctest::Approx(4.0 * params));
  ParallelPlan plain = p;
  plain.zero3 = false;
  CHECK(whole.required() == estimate_memory(m, plain, 0, fsdp).required());
  const MemoryEstimate deepspeed = estimate_memory(m, p, 0, MemoryOptions{});
  CHECK(deepspeed.weights.value() > whole.weights.value());
  p.dp = 2;
  p.global_batch = 2;
  CHECK(estimate_memory(m, p, 0, fsdp).weights.value() ==
        doctest::Approx(params + 2.0 * 2.0 * static_cast<double>(rank_layer_parameters(m, 8))));
}

TEST_CASE("memory: a stage without layers holds no layer being recomputed") {
  // PP 2 with the first stage holding only the embedding: full recompute holds one layer's
  // activations in place of its stored input on the stage with the layers, none on the other.
  const ModelSpec m = model("korthikanti-22b");
  ParallelPlan p;
  p.tp = 8;
  p.pp = 2;
  p.global_batch = 2;
  p.recompute = Recompute::kFull;
  p.layer_split = {0, 48};
  CHECK(estimate_memory(m, p, 0).activations.value() == 0.0);
  ParallelPlan stored = p;
  stored.recompute = Recompute::kNone;
  CHECK(estimate_memory(m, p, 1).activations.value() ==
        doctest::Approx(activation_bytes_per_layer(m, p).value() * 47 * 1 +
                        activation_bytes_per_layer(m, stored).value()));
}

TEST_CASE("memory: full recompute never holds more than no recompute, one layer a stage too") {
  // The recomputed layer's activations take its stored input as theirs: a stage of one layer
  // held one input more with full recompute than without until 2026-12-07 (a helper's trial,
  // pp = layers).
  ModelSpec m = model("korthikanti-22b");
  m.layers = 2;
  ParallelPlan p;
  p.tp = 8;
  p.pp = 2;
  p.global_batch = 4;
  ParallelPlan full = p;
  full.recompute = Recompute::kFull;
  for (int stage = 0; stage < 2; ++stage) {
    CAPTURE(stage);
    CHECK(estimate_memory(m, full, stage).activations.value() <=
          estimate_memory(m, p, stage).activations.value());
  }
  // The last stage holds one micro-batch: its one layer whole, as without recompute.
  CHECK(estimate_memory(m, full, 1).activations.value() ==
        doctest::Approx(estimate_memory(m, p, 1).activations.value()));
}

TEST_CASE(
    "memory: Megatron's and DeepSpeed's fp32 gradient copy is the optimizer step's, not the "
    "passes'") {
  // GPT-175B at TP 8 × PP 8 × DP 2, bf16 gradients, distributed optimizer: stage 0 holds
  // weights 2, gradients 2 and the optimizer's 12 / 2 B a parameter. The fp32 copy of its
  // gradient shard (4 / 2 B) is made at the optimizer step (Megatron's
  // _copy_model_grads_to_main_grads) and freed before the next forward, so the stage's peak is
  // the larger of the passes' activations and that copy, not their sum; held from the
  // backward on (FSDP's, the default), it is a part of the optimizer states.
  const ModelSpec m = model("gpt-175b-megascale");
  ParallelPlan p;
  p.tp = 8;
  p.pp = 8;
  p.dp = 2;
  p.global_batch = 16;
  p.sequence_parallel = true;
  p.distributed_optimizer = true;
  p.fp32_gradients = false;
  const double params = static_cast<double>(stage_parameters_per_rank(m, p, 0));
  MemoryOptions held;
  MemoryOptions at_step;
  at_step.main_gradient_at_step = true;
  const MemoryEstimate h = estimate_memory(m, p, 0, held);
  const MemoryEstimate s = estimate_memory(m, p, 0, at_step);
  CHECK(h.optimizer_states.value() == doctest::Approx(16.0 / 2.0 * params));
  CHECK(h.main_gradient_at_step.value() == 0.0);
  CHECK(s.optimizer_states.value() == doctest::Approx(12.0 / 2.0 * params));
  CHECK(s.main_gradient_at_step.value() == doctest::Approx(4.0 / 2.0 * params));
  const double states = (s.weights + s.gradients + s.optimizer_states).value();
  const double passes = (s.activations + s.embedding_logits).value();
  REQUIRE(passes > s.main_gradient_at_step.value());  // 16 micro-batches of 175B's activations
  CHECK(s.tensors().value() == doctest::Approx(states + passes));
  CHECK(h.tensors().value() - s.tensors().value() == doctest::Approx(4.0 / 2.0 * params));
  // With few activations (one micro-batch, full recomputation) the step's copy is the peak.
  p.global_batch = 2;
  p.recompute = Recompute::kFull;
  const MemoryEstimate small = estimate_memory(m, p, 0, at_step);
  REQUIRE(small.main_gradient_at_step > small.activations + small.embedding_logits);
  CHECK(small.tensors().value() ==
        doctest::Approx(
            (small.weights + small.gradients + small.optimizer_states + small.main_gradient_at_step)
                .value()));
  // fp32 gradients: nothing to copy.
  p.fp32_gradients = true;
  CHECK(estimate_memory(m, p, 0, at_step).main_gradient_at_step.value() == 0.0);
}
