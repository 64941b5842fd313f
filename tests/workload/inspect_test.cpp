#include <doctest/doctest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "run_command.h"

using megasim::test::run_megasim;

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
