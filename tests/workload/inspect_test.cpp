#include <doctest/doctest.h>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "run_command.h"

using megasim::test::run_megasim;
using megasim::test::temp_file;

namespace {
const std::string kScenario =
    std::string(MEGASIM_SOURCE_DIR) + "/scenarios/megascale-175b-12288.json";
}

TEST_CASE("inspect: --json prints one object with the MFU FLOPs and every stage") {
  const auto r = run_megasim("inspect --json " + kScenario);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.empty());
  const auto j = nlohmann::json::parse(r.out);
  // MegaScale's 175B with its 1,024-token window (72·l·h²·(1 + w/6h + V/12lh)).
  CHECK(j["model_flops_per_token"].get<double>() == doctest::Approx(1.0629e12).epsilon(1e-4));
  REQUIRE(j["stages"].size() == 8);
  CHECK(j["stages"][0]["fits"].get<bool>());
  CHECK(j["stages"][7]["ops_per_micro_batch"].contains("gemm"));
  CHECK(j["stages"][0]["memory"]["micro_batches_in_flight"].get<double>() ==
        doctest::Approx(55.0 / 6.0));  // (8 - 1)·2 + (6 - 1)·8 + 1 = 55 chunks of 6
}

TEST_CASE("inspect: a plan the model rejects exits 2 naming the numbers") {
  const auto r = run_megasim("inspect " + kScenario + " --set plan.tp=3 --set plan.dp=512");
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("plan.tp: heads 128 is not divisible by tp 3") != std::string::npos);
}

TEST_CASE("inspect: a plan that does not fit the device exits 2 with the memory breakdown") {
  const auto r =
      run_megasim("inspect " + kScenario + " --set plan.pp=1 --set plan.vpp=1 --set plan.dp=1536");
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("needs") != std::string::npos);
  CHECK(r.err.find("the device has 79.2 GiB") != std::string::npos);
  const auto allowed = run_megasim(
      "inspect " + kScenario + " --set plan.pp=1 --set plan.vpp=1 --set plan.dp=1536 --allow-oom");
  CHECK(allowed.exit_code == 0);
}

TEST_CASE("inspect: a small model's size reads in millions and one layer in the singular") {
  const auto model = temp_file("tiny_model.json");
  std::ofstream(model)
      << R"({"name": "tiny", "source": "a test", "layers": 1, "hidden": 256, "heads": 4,
    "kv_heads": 4, "ffn_hidden": 1024, "activation": "gelu", "norm": "layernorm",
    "position": "learned", "parallel_block": false, "attention_window": null,
    "tied_embeddings": true, "bias": true, "vocab": 1000, "seq": 128})";
  const auto r = run_megasim("inspect " + kScenario + " --set model=" + model.string() +
                             " --set plan.pp=1 --set plan.vpp=1 --set plan.tp=1 --set plan.dp=64" +
                             " --set plan.global_batch=64 --set plan.sequence_parallel=false");
  REQUIRE(r.exit_code == 0);
  // 1,079,040 parameters read "0.00 B parameters, 1 layers" until 2026-12-06.
  CHECK(r.out.find("1.08 M parameters, 1 layer,") != std::string::npos);
  CHECK(r.out.find("  1 layer     1.079 M params/rank") != std::string::npos);
  // The useful count does not depend on the attention kernel the run uses: it was labelled
  // "(unfused attention)" under an unfused run.
  const auto unfused = run_megasim("inspect " + kScenario + " --unfused-attention");
  CHECK(unfused.out.find("(what fused causal attention computes)") != std::string::npos);
  CHECK(unfused.out.find("(unfused attention)") == std::string::npos);
}
