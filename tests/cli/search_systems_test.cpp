// `megasim search` over varied systems: a switch that changes the model's FLOPs (the sliding
// window) gives each candidate its own MFU numerator, in the estimate and in a results file that
// a second run resumes from (until 2026-12-03 the second run refused the file's lines).
#include <doctest/doctest.h>

#include <algorithm>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <tuple>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "run_command.h"

using megasim::test::run_megasim;
using megasim::test::shell_quote;

TEST_CASE("cli: search resumes from a results file of plans with and without a sliding window") {
  namespace fs = std::filesystem;
  const fs::path results =
      fs::temp_directory_path() / ("megasim_window_" + std::to_string(::getpid()) + ".jsonl");
  fs::remove(results);
  const std::string search =
      "search " +
      shell_quote(std::string(MEGASIM_SOURCE_DIR) + "/scenarios/megascale-175b-12288.json") +
      " --fix tp=8 --fix pp=8 --fix vpp=6 --fix mb=1 --fix recompute=selective --fix sp=1"
      " --fix dist_opt=1 --vary optimizations.sliding_window=true,false --top 2 --results " +
      shell_quote(results.string());
  const auto first = run_megasim(search);
  REQUIRE(first.exit_code == 0);
  CHECK(first.out.find("sliding_window=0") != std::string::npos);
  const auto lines = [&] {
    std::ifstream in(results);
    int n = 0;
    for (std::string line; std::getline(in, line);) n += line.empty() ? 0 : 1;
    return n;
  };
  const int simulated = lines();
  CHECK(simulated >= 2);  // both windows' plans simulated and kept
  const auto again = run_megasim(search);
  CHECK(again.exit_code == 0);
  // stderr holds one line: the figures read back from the file.
  CHECK(again.err.find("event-level figures were read from --results") != std::string::npos);
  CHECK(std::count(again.err.begin(), again.err.end(), '\n') == 1);
  CHECK(again.out == first.out);
  CHECK(lines() == simulated);  // resumed: nothing simulated again
  fs::remove(results);
}

TEST_CASE("cli: search finds the scenario's plan written with a switch the space writes once") {
  // Korthikanti's 22B on 8 GPUs at DP 1: a distributed optimizer shards nothing there, so the
  // space writes the plan without it, once, even when asked for both values.
  const std::string s22 = shell_quote(std::string(MEGASIM_SOURCE_DIR) +
                                      "/scenarios/validation/korthikanti-22b-selective.json");
  const auto own = run_megasim("search " + s22 + " --set plan.distributed_optimizer=true --top 3");
  REQUIRE(own.exit_code == 0);
  CHECK(own.out.find("the scenario's own plan ranks") != std::string::npos);
  const auto both = run_megasim(
      "search " + s22 + " --fix tp=8 --fix pp=1 --fix mb=4 --vary dist_opt=true,false --json");
  REQUIRE(both.exit_code == 0);
  CHECK(both.out.find("dist_opt=1") == std::string::npos);
  CHECK(both.out.find("\"feasible\": 4") != std::string::npos);
}

TEST_CASE("cli: a plan's estimate does not depend on the other GPU counts searched") {
  // TP 6 splits a group over two nodes at 12 GPUs, not at 6: the estimate's probe prices the
  // split group only for the plans that have one (until 2026-12-03 whichever was priced first
  // decided for both).
  const std::string search =
      "search " +
      shell_quote(std::string(MEGASIM_SOURCE_DIR) + "/scenarios/validation/sc21-t1-1.7b.json") +
      " --fix tp=6 --fix pp=1 --fix mb=8 --fix recompute=full --fix sp=0 --fix dist_opt=0 --json "
      "--gpus ";
  const auto estimate_at_12 = [&](const std::string& gpus) {
    const auto r = run_megasim(search + gpus);
    REQUIRE(r.exit_code == 0);
    const auto doc = nlohmann::json::parse(r.out);
    for (const auto& plan : doc["ranked"]) {
      if (plan["key"].get<std::string>().rfind("gpus=12 ", 0) == 0) return plan["analytic"].dump();
    }
    FAIL("no 12-GPU plan in the search");
    return std::string();
  };
  CHECK(estimate_at_12("12") == estimate_at_12("6,12"));
}

TEST_CASE(
    "cli: a run objective prints its own column: days, USD or IT MWh, as --json's objective") {
  const std::string search =
      "search " +
      shell_quote(std::string(MEGASIM_SOURCE_DIR) + "/scenarios/megascale-175b-12288.json") +
      " --top 2 --set run.tokens=1e12 --set power.usd_per_gpu_hour=2 --objective ";
  for (const auto& [objective, column, unit] :
       {std::tuple{"time-to-train", "days", 86400.0}, std::tuple{"cost", "USD", 1.0},
        std::tuple{"energy", "IT MWh", 3.6e9}}) {
    CAPTURE(objective);
    const auto text = run_megasim(search + objective);
    const auto json = run_megasim(search + objective + " --json");
    REQUIRE(text.exit_code == 0);
    REQUIRE(json.exit_code == 0);
    CHECK(text.out.find(std::string(" ") + column + " room GiB") != std::string::npos);
    // The first row's cell, after its tokens/s, is the JSON's objective in the column's unit.
    const auto best = nlohmann::json::parse(json.out)["ranked"][0];
    const double value = best["objective"].get<double>() / unit;
    const std::string tokens = fmt::format("{:.0f}", best["tokens_per_s"].get<double>());
    const auto at = text.out.find(tokens);
    REQUIRE(at != std::string::npos);
    double cell = 0.0;
    std::istringstream(text.out.substr(at + tokens.size())) >> cell;
    CHECK(cell == doctest::Approx(value).epsilon(0.001));
  }
  const auto step = run_megasim(search + "step-time");
  REQUIRE(step.exit_code == 0);  // a failed search prints no column at all
  CHECK(step.out.find(" tok/s room GiB") != std::string::npos);
  CHECK(step.out.find(" days room GiB") == std::string::npos);
}

TEST_CASE("cli: search under DeepSpeed's BF16_Optimizer holds sharded optimizer states alone") {
  // BF16_Optimizer shards its states over DP always, so only dist_opt=1 is a plan DeepSpeed
  // runs. A scenario with ZeRO-2 (outside the space, whose plans have none) left dist_opt=0 in
  // the space and ranked it first until 2026-12-06: the rule read the scenario's plan.
  const std::string bloom =
      std::string(MEGASIM_SOURCE_DIR) + "/scenarios/validation/bloom-176b-384.json";
  const auto r = run_megasim(
      "search " + shell_quote(bloom) +
      " --set plan.pp=1 --set plan.dp=96 --set plan.micro_batch=1 --set plan.global_batch=1920 "
      "--set plan.layer_split=[70] --set plan.zero2=true --set cluster=selene-a100-4480 "
      "--gpus 560 --fix tp=8 --fix pp=7 --fix mb=1 --fix recompute=full --fix sp=0 --top 2 "
      "--json");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(!j["ranked"].empty());
  for (const auto& p : j["ranked"]) CHECK(p["plan"]["distributed_optimizer"] == true);
  // Without it in the space, the restriction leaves no plan, and says why.
  const auto none =
      run_megasim("search " + shell_quote(bloom) + " --fix tp=4 --fix pp=12 --fix dist_opt=0");
  CHECK(none.exit_code == 2);
  CHECK(none.err.find("its BF16_Optimizer (bf16) takes dist_opt=1 alone at dp above 1") !=
        std::string::npos);
}
