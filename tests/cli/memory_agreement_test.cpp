// `inspect` and `simulate` report the same bytes per stage, part by part, for every scenario in
// the repository. simulate's figures are its golden outputs (tests/golden/, which the golden
// tests hold to the binary), so one inspect run per scenario checks both commands.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "run_command.h"

using megasim::test::run_megasim;
using megasim::test::shell_quote;

namespace {

namespace fs = std::filesystem;

// Every shipped scenario and its golden simulate output.
std::vector<std::pair<fs::path, fs::path>> scenarios() {
  const fs::path root = MEGASIM_SOURCE_DIR;
  std::vector<std::pair<fs::path, fs::path>> out;
  for (const char* dir : {"", "validation"}) {
    for (const auto& e : fs::directory_iterator(root / "scenarios" / dir)) {
      const fs::path p = e.path();
      if (p.extension() != ".json" || p.filename() == "schema.json") continue;
      const fs::path golden = root / "tests/golden" / dir / p.filename();
      out.emplace_back(p, golden);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("inspect and simulate report the same memory per stage for every scenario") {
  // Every part, and the verdict: a stage tight in one is tight in the other.
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  const auto all = scenarios();
  REQUIRE(all.size() >= 40);
  for (const auto& [scenario, golden] : all) {
    INFO(scenario.string());
    std::ifstream in(golden);
    REQUIRE_MESSAGE(in.good(), "no golden simulate output: scripts/update-goldens.sh");
    const auto sim = nlohmann::json::parse(in)["memory_per_stage"];
    const auto r = run_megasim("inspect --json " + shell_quote(scenario.string()));
    REQUIRE(r.exit_code == 0);
    const auto ins = nlohmann::json::parse(r.out)["stages"];
    REQUIRE(sim.size() == ins.size());
    for (std::size_t k = 0; k < sim.size(); ++k) {
      const auto& m = ins[k]["memory"];
      for (const char* part :
           {"weights", "gradients", "optimizer_states", "activations", "embedding_logits",
            "main_gradient_at_step", "workspace", "fragmentation_margin", "total"}) {
        INFO("stage " << k << ", " << part);
        CHECK(sim[k][std::string(part) + "_gib"].get<double>() ==
              doctest::Approx(m[std::string(part) + "_bytes"].get<double>() / kGiB)
                  .epsilon(1e-12));
      }
      CHECK(sim[k]["tight"] == ins[k]["tight"]);
    }
  }
}

TEST_CASE("a memory refusal names the stage that needs the most, not the first over the device") {
  // The 530B at micro-batch 4 on the 40 GB part read "stage 0 needs 74.5 GiB", which an 80 GB
  // part would seem to hold, where stage 34 needs 84.8 (a user's trial, 2026-12-06).
  const auto r = run_megasim(
      "simulate " + shell_quote(MEGASIM_SOURCE_DIR "/scenarios/megascale-production-530b.json") +
      " --set plan.micro_batch=4 --set device=a100-sxm4-40gb");
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("pipeline stage 34 needs 84.8 GiB per GPU") != std::string::npos);
}

TEST_CASE("NVIDIA's Nemotron-4 340B plan fits once the fp32 gradient copy is made at the step") {
  // DGX Cloud's published plan on 128 H100s (TP 8, PP 8, VPP 12, DP 2, bf16 gradients), which
  // ran: 77.8 GiB on stage 0 with Megatron's copy made at the optimizer step; held from the
  // backward on (megasim's count before 2026-12-07) the stage needs 84.9 and is refused.
  const std::string scenario =
      R"({"name": "nemotron4-340b-recipe", "model": "nemotron-4-340b",
  "cluster": "dgx-h100-superpod-6144", "device": "h100-sxm5-80gb",
  "plan": {"tp": 8, "pp": 8, "vpp": 12, "dp": 2, "micro_batch": 1, "global_batch": 32,
           "sequence_parallel": true, "distributed_optimizer": true, "recompute": "none",
           "fp32_gradients": false},
  "optimizations": {"preset": "megatron-core"}})";
  const fs::path file =
      fs::temp_directory_path() / ("megasim_nemotron_" + std::to_string(::getpid()) + ".json");
  std::ofstream(file) << scenario;
  const std::string s = shell_quote(file.string());
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  const auto at_step = run_megasim("inspect --json " + s);
  REQUIRE(at_step.exit_code == 0);
  const auto m = nlohmann::json::parse(at_step.out)["stages"][0]["memory"];
  CHECK(m["total_bytes"].get<double>() / kGiB == doctest::Approx(77.79).epsilon(1e-3));
  CHECK(m["main_gradient_at_step_bytes"].get<double>() / kGiB ==
        doctest::Approx(10.75).epsilon(1e-3));
  const auto held =
      run_megasim("simulate " + s + " --set optimizations.fp32_main_gradient=" + "from-backward");
  CHECK(held.exit_code == 2);
  CHECK(held.err.find("pipeline stage 0 needs 84.9 GiB per GPU") != std::string::npos);
  fs::remove(file);
}
