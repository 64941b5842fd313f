#include <doctest/doctest.h>

#include "test_models.h"
#include "workload/flops.h"

using namespace megasim;
using namespace megasim::workload;

TEST_CASE("flops: MegaScale 175B model FLOPs per token: every GEMM three times, logits 6·h·V") {
  const ModelSpec m =
      io::load_model(std::string(MEGASIM_SOURCE_DIR) + "/models/gpt-175b-megascale.json");
  const double l = 96, h = 12288, s = 2048, v = 64000;
  // 72·l·h²·(1 + s/6h + V/12lh) = 1.04367e12 · (1 + 0.027778 + 0.004521) = 1.07738e12, the
  // count of Korthikanti et al. 2022 and Megatron-Core (the logits, never recomputed, 6·h·V).
  const double counted = 72.0 * l * h * h * (1.0 + s / (6.0 * h) + v / (12.0 * l * h));
  CHECK(model_flops_per_token(m).value() == doctest::Approx(counted).epsilon(1e-12));
  CHECK(model_flops_per_token(m).value() == doctest::Approx(1.0774e12).epsilon(1e-3));
  // Narayanan's 4-pass formula scaled by 3/4 as a whole counts the logits 4.5·h·V: 1.5·h·V less.
  const double scaled = 72.0 * l * h * h * (1.0 + s / (6.0 * h) + v / (16.0 * l * h));
  CHECK(model_flops_per_token(m).value() - scaled == doctest::Approx(1.5 * h * v).epsilon(1e-9));
}

TEST_CASE("flops: SC21 hardware FLOPs with full recompute equal Narayanan's 4-pass formula") {
  const ModelSpec m = io::load_model(std::string(MEGASIM_SOURCE_DIR) + "/models/sc21-1008b.json");
  const double l = 128, h = 25600, s = 2048, v = 51200;
  // Narayanan et al. SC'21 eq. (3) per token: 96·l·h²·(1 + s/6h + V/16lh).
  const double narayanan = 96.0 * l * h * h * (1.0 + s / (6.0 * h) + v / (16.0 * l * h));
  CHECK(hardware_flops_per_token(m, Recompute::kFull).value() ==
        doctest::Approx(narayanan).epsilon(1e-12));
}

TEST_CASE("flops: GQA and SwiGLU closed forms on a tiny model solved by hand") {
  const ModelSpec m = test::tiny_gqa();
  // Per layer forward per token: qkv 2·64·(64 + 2·16) = 12288, core 4·16·64 = 4096,
  // out 2·64·64 = 8192, SwiGLU MLP 6·64·128 = 49152; total 73728, two layers 147456.
  // Logits 2·64·100 = 12800.
  const LayerFlops lf = layer_forward_flops_per_token(m);
  CHECK(lf.qkv.value() == 12288.0);
  CHECK(lf.attention_core.value() == 4096.0);
  CHECK(lf.mlp.value() == 49152.0);
  const FlopsPerToken none = flops_per_token(m, Recompute::kNone);
  CHECK(none.model.value() == 3.0 * (147456.0 + 12800.0));  // 480768
  CHECK(none.hardware.value() == none.model.value());
  // Causal: each query sees (16 + 1)/2 = 8.5 keys on average: core 4·8.5·64 = 2176.
  CHECK(none.useful.value() == 3.0 * (2.0 * (73728.0 - 4096.0 + 2176.0) + 12800.0));  // 469248
  CHECK(flops_per_token(m, Recompute::kFull).hardware.value() == 480768.0 + 147456.0);
  CHECK(flops_per_token(m, Recompute::kSelective).hardware.value() == 480768.0 + 2.0 * 4096.0);
}

TEST_CASE("flops: a sliding window caps the attention FLOPs") {
  ModelSpec m = test::tiny_gqa();
  m.attention_window = 4;
  // Convention: 4 keys per query, core 4·4·64 = 1024. Causal window: 4·5/2 + 12·4 = 58 pairs
  // over 16 queries, core 4·58·64/16 = 928.
  CHECK(layer_forward_flops_per_token(m).attention_core.value() == 1024.0);
  const FlopsPerToken f = flops_per_token(m);
  CHECK(f.model.value() - f.useful.value() == doctest::Approx(3.0 * 2.0 * (1024.0 - 928.0)));
}

TEST_CASE("flops: the generated ops sum to the closed forms for every shipped model") {
  const auto models = test::shipped_models();
  REQUIRE(models.size() >= 20);
  for (const ModelSpec& m : models) {
    CAPTURE(m.name);
    ParallelPlan p = test::plan_for(m);
    for (Recompute rc : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
      p.recompute = rc;
      const FlopsPerToken f = flops_per_token(m, rc);
      const test::FlopSums s = test::sum_program(m, p);
      CHECK(s.model == doctest::Approx(f.model.value()).epsilon(1e-9));
      CHECK(s.hardware == doctest::Approx(f.hardware.value()).epsilon(1e-9));
    }
    // Useful FLOPs are what the kernels execute: without TP nothing is padded or replicated.
    ParallelPlan one = p;
    one.tp = 1;
    one.sequence_parallel = false;
    one.recompute = Recompute::kNone;
    CHECK(test::sum_program(m, one).kernel ==
          doctest::Approx(flops_per_token(m).useful.value()).epsilon(1e-9));
  }
}

TEST_CASE("flops: op sums match with GQA split over TP, sliding windows and unfused attention") {
  ModelSpec m = test::tiny_gqa();
  m.attention_window = 4;
  ParallelPlan p;
  p.tp = 2;  // 2 KV heads on 2 ranks: one each
  p.sequence_parallel = true;
  p.pp = 2;
  p.global_batch = 4;
  p.recompute = Recompute::kSelective;
  for (bool fused : {true, false}) {
    GeneratorOptions o;
    o.fused_attention = fused;
    const test::FlopSums s = test::sum_program(m, p, o);
    CHECK(s.model == doctest::Approx(flops_per_token(m).model.value()).epsilon(1e-12));
    CHECK(s.hardware ==
          doctest::Approx(flops_per_token(m, Recompute::kSelective, !fused).hardware.value())
              .epsilon(1e-12));
  }
  // Unfused, the window only masks: the hardware count charges the core s keys a query in its
  // four passes (three and the recompute), 4·(16 − 4)·64 a layer each more (the window's until
  // 2026-12-06).
  CHECK(flops_per_token(m, Recompute::kSelective, true).hardware.value() -
            flops_per_token(m, Recompute::kSelective).hardware.value() ==
        doctest::Approx(4.0 * 4.0 * 12.0 * 64.0 * m.layers));
  // Unfused attention computes every score: its kernels run the full s² the convention
  // charges without a window (4·16·64 per token, not 4·4·64).
  m.attention_window = 0;
  p.tp = 1;
  p.sequence_parallel = false;
  p.recompute = Recompute::kNone;
  GeneratorOptions unfused;
  unfused.fused_attention = false;
  CHECK(test::sum_program(m, p, unfused).kernel ==
        doctest::Approx(flops_per_token(m).model.value()).epsilon(1e-12));
}

TEST_CASE("flops: Korthikanti et al. published MFU and HFU follow from the closed forms") {
  // ../shared/validation/published_runs.json, rows korthikanti-*: iteration time with SP and
  // selective recompute, MFU and HFU against 312 TFLOP/s per A100. MFU = model FLOPs
  // per token × tokens per iteration / (time × GPUs × 312e12); e.g. 22B: 1.3959e11 × 8192 /
  // (1.1 × 8 × 312e12) = 0.4165 (published 0.415).
  struct Row {
    const char* model;
    double batch, gpus, seconds, mfu, hfu;
  };
  const Row rows[] = {{"korthikanti-22b", 4, 8, 1.10, 0.415, 0.437},
                      {"korthikanti-175b", 64, 64, 13.75, 0.514, 0.528},
                      {"korthikanti-530b", 280, 280, 37.83, 0.560, 0.570},
                      {"korthikanti-1t", 512, 512, 71.49, 0.563, 0.570}};
  for (const Row& r : rows) {
    CAPTURE(r.model);
    const ModelSpec m =
        io::load_model(std::string(MEGASIM_SOURCE_DIR) + "/models/" + r.model + ".json");
    const FlopsPerToken f = flops_per_token(m, Recompute::kSelective);
    const double tokens = r.batch * static_cast<double>(m.seq);
    const double peak = r.seconds * r.gpus * 312e12;
    // The published figures carry three digits: allow 0.5% for their rounding.
    CHECK(f.model.value() * tokens / peak == doctest::Approx(r.mfu).epsilon(0.005).scale(0));
    CHECK(f.hardware_published.value() / f.model.value() ==
          doctest::Approx(r.hfu / r.mfu).epsilon(0.005));
  }
}
