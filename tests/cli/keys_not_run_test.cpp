// Scenario keys that change nothing where they are set (io::keys_not_run): each is said on
// stderr and the run goes on.
#include <doctest/doctest.h>

#include <string>

#include "run_command.h"

using megasim::test::kDefaultScenario;
using megasim::test::run_megasim;

TEST_CASE("cli: the backward's TP overlap set beside tp_overlap is said, as it changes nothing") {
  const auto r = run_megasim("simulate " + kDefaultScenario +
                             " --set optimizations.backward_tp_overlap=false");
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("--set optimizations.backward_tp_overlap=false changes nothing: "
                   "optimizations.tp_overlap is on") != std::string::npos);
}

TEST_CASE("cli: BF16_Optimizer asked for an fp16 run is said, as it runs none") {
  const auto r = run_megasim("simulate " + std::string(MEGASIM_SOURCE_DIR) +
                             "/scenarios/validation/bloom-176b-384.json --set plan.precision=fp16 "
                             "--set optimizations.bf16_optimizer=true");
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("--set optimizations.bf16_optimizer=true changes nothing: BF16_Optimizer runs "
                   "for plan.precision bf16 only") != std::string::npos);
}

TEST_CASE("cli: the list-form gather copy asked for where nothing is scatter-gathered is said") {
  // DeepSpeed's engine partitions its own transfers; the default scenario runs sequence
  // parallelism (a review's find, 2026-12-07: no word until then).
  const auto ds = run_megasim("simulate " + std::string(MEGASIM_SOURCE_DIR) +
                              "/scenarios/validation/bloom-176b-384.json --set "
                              "optimizations.scatter_gather_list_copy=true");
  CHECK(ds.exit_code == 0);
  CHECK(ds.err.find("--set optimizations.scatter_gather_list_copy=true changes nothing: the "
                    "plan's stages send no scatter-gather transfer to copy") != std::string::npos);
  const auto sp = run_megasim("simulate " + kDefaultScenario +
                              " --set optimizations.scatter_gather_list_copy=true");
  CHECK(sp.err.find("scatter_gather_list_copy=true changes nothing") != std::string::npos);
  const auto sc21 = run_megasim("simulate " + std::string(MEGASIM_SOURCE_DIR) +
                                "/scenarios/validation/sc21-t2-ptdp-175b-768.json");
  CHECK(sc21.err.find("changes nothing") == std::string::npos);
}
