// `megasim compare`'s GPU counts: over context parallelism the count kept, data parallelism
// following; variants of different sizes shown with their GPUs; each variant's work bound.
#include <doctest/doctest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "run_command.h"

using megasim::test::kDefaultScenario;
using megasim::test::run_megasim;
using megasim::test::shell_quote;

TEST_CASE("cli: compare varying plan.cp keeps the GPU count, dp following tp × cp × pp") {
  // The Megatron-Core 70B row: TP 8 × PP 2 × DP 48 = 768 GPUs; cp 2 and 4 leave 24 and 12
  // replicas of 16 and 32 ranks.
  const std::string scenario = shell_quote(std::string(MEGASIM_SOURCE_DIR) +
                                           "/scenarios/validation/mcore-h100-70b-768.json");
  const auto r = run_megasim("compare --json " + scenario + " --vary plan.cp=1,2,4");
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["variants"].size() == 3);
  const int dps[] = {48, 24, 12};
  for (std::size_t i = 0; i < 3; ++i) {
    const auto& v = j["variants"][i];
    REQUIRE(v["feasible"].get<bool>());
    CHECK(v["plan"]["dp"] == dps[i]);
    CHECK(v["plan"]["cp"] == 1 << i);
    CHECK(v["plan"]["gpus"] == 768);
  }
}

TEST_CASE("cli: compare shows the GPUs of variants that differ in size") {
  // --vary plan.dp runs jobs of different sizes; the table said nothing of it while its
  // tokens/s and Pareto marks set them side by side (a user's trial, 2026-12-05).
  const auto r = run_megasim("compare " + kDefaultScenario +
                             " --vary plan.dp=96,192 --set plan.global_batch=1536");
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("GPUs") != std::string::npos);
  CHECK(r.out.find("dp=96                                          6144") != std::string::npos);
  CHECK(r.out.find("the variants run on 6144 to 12288 GPUs") != std::string::npos);
  // One size: no column, and the count said once. A --set of pp sizes the scenario dp is
  // derived from (8 x 4 x 192 here), which the table did not show until 2026-12-05.
  const auto same = run_megasim("compare " + kDefaultScenario + " --vary plan.vpp=3,6");
  REQUIRE(same.exit_code == 0);
  CHECK(same.out.find(" GPUs ") == std::string::npos);
  CHECK(same.out.find("every variant runs on 12288 GPUs") != std::string::npos);
  const auto set = run_megasim("compare " + kDefaultScenario +
                               " --set plan.pp=4 --set plan.vpp=3 --vary plan.tp=4,8");
  REQUIRE(set.exit_code == 0);
  CHECK(set.out.find("every variant that runs is on 6144 GPUs") != std::string::npos);
  // An infeasible variant runs on no GPUs: the count is of those that run (it read "every
  // variant runs on 12288 GPUs" beside a TP 2 variant of another size, 2026-12-05).
  const auto part =
      run_megasim("compare " + kDefaultScenario + " --vary plan.tp=2,8 --set plan.dp=192");
  REQUIRE(part.exit_code == 0);
  CHECK(part.out.find("every variant that runs is on 12288 GPUs") != std::string::npos);
}

TEST_CASE("cli: compare holds each variant to --max-events and --max-memory, as simulate") {
  // compare had neither option until 2026-12-06: every variant ran under simulate's defaults.
  // 8 stages × 32 micro-batches × vpp 6 × 2 passes = 3,072 passes at batch 6,144; 30,720 at
  // 61,440, past 10,000.
  const auto r = run_megasim("compare --json " + kDefaultScenario +
                             " --vary plan.global_batch=6144,61440 --max-events 10000");
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["variants"].size() == 2);
  CHECK(j["variants"][0]["feasible"].get<bool>());
  CHECK_FALSE(j["variants"][1]["feasible"].get<bool>());
  CHECK(j["variants"][1]["reason"].get<std::string>().find("30720 pipeline passes") !=
        std::string::npos);
  CHECK(j["variants"][1]["reason"].get<std::string>().find("more than --max-events 10000") !=
        std::string::npos);
  // Every variant past --max-memory: nothing runs, an error naming the bound.
  const auto memory =
      run_megasim("compare " + kDefaultScenario + " --vary plan.vpp=3,6 --max-memory 1MiB");
  CHECK(memory.exit_code != 0);
  CHECK(memory.err.find("more than --max-memory 1 MiB") != std::string::npos);
  const auto unit =
      run_megasim("compare " + kDefaultScenario + " --vary plan.vpp=3,6 --max-memory 1zz");
  CHECK(unit.exit_code != 0);
  CHECK(unit.err.find("--max-memory 1zz: unknown unit") != std::string::npos);
}

TEST_CASE("cli: compare warns of a device of another part than the cluster's, as simulate does") {
  // H100 rows on A100 NVLink and NICs were listed without a word (a user's trial, 2026-12-06).
  const auto r = run_megasim("compare " + shell_quote(kDefaultScenario) +
                             " --vary device=a100-sxm4-80gb,h100-sxm5-80gb");
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("megasim: warning: device=h100-sxm5-80gb: cluster megascale-a100-12288 holds "
                   "a100-sxm4-80gb GPUs, but the device profile h100-sxm5-80gb is another "
                   "part's") != std::string::npos);
  CHECK(r.err.find("device=a100-sxm4-80gb:") == std::string::npos);
  // A variant refused (over the device's memory) is warned of too, as simulate warns before it
  // refuses (a review, 2026-12-06).
  const auto refused = run_megasim(
      "compare " +
      shell_quote(MEGASIM_SOURCE_DIR "/scenarios/validation/korthikanti-22b-selective.json") +
      " --vary device=a100-sxm4-80gb,h100-sxm5-80gb --vary plan.micro_batch=4,12 --set "
      "plan.global_batch=12");
  REQUIRE(refused.exit_code == 0);
  CHECK(refused.err.find("megasim: warning: device=h100-sxm5-80gb micro_batch=4, "
                         "device=h100-sxm5-80gb micro_batch=12: cluster") != std::string::npos);
}
