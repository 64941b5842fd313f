// Scenario keys that change nothing where they are set (io::keys_not_run): each is said on
// stderr, with the key that makes it so, and the run goes on.
#include <doctest/doctest.h>

#include <string>

#include "run_command.h"
#include "simulate_json.h"

using megasim::test::kDefaultScenario;
using megasim::test::run_megasim;

namespace {

std::string validation(const std::string& name) {
  return std::string(MEGASIM_SOURCE_DIR) + "/scenarios/validation/" + name + ".json";
}

}  // namespace

TEST_CASE("cli: a key set where it changes nothing is said, with what makes it so") {
  struct Case {
    std::string scenario, set, said;
  };
  for (const Case& c :
       {// tp_overlap overlaps the backward's collectives too (unsaid until 2026-12-06).
        Case{kDefaultScenario, "optimizations.backward_tp_overlap=false",
             "optimizations.tp_overlap is on"},
        Case{validation("bloom-176b-384"),
             "plan.precision=fp16 --set optimizations.bf16_optimizer=true",
             "BF16_Optimizer runs for plan.precision bf16 only"},
        // ZeRO-3 shards the optimizer states itself: both values price one step (a user's
        // trial, 2026-12-06, where ZeRO-2 without the switch is refused).
        Case{validation("sc21-t2-zero3-175b-384"), "plan.distributed_optimizer=false",
             "plan.zero3 shards the optimizer states over DP itself"},
        // The list-form gather copy where nothing is scatter-gathered: DeepSpeed's engine
        // partitions its own transfers, the default scenario runs sequence parallelism (a
        // review's find, 2026-12-07).
        Case{validation("bloom-176b-384"), "optimizations.scatter_gather_list_copy=true",
             "the plan's stages send no scatter-gather transfer to copy"},
        Case{kDefaultScenario, "optimizations.scatter_gather_list_copy=true",
             "the plan's stages send no scatter-gather transfer to copy"},
        // A window of the sequence or more, DP buckets without DP overlap, DP overlap under
        // ZeRO-3 with nothing at the step's end: each taken without a word until 2026-12-08.
        Case{kDefaultScenario, "optimizations.attention_window=2048",
             "a window of 2048 tokens holds the model's whole sequence of 2048"},
        Case{validation("sc21-t2-ptdp-175b-768"),
             "optimizations.dp_overlap=false --set optimizations.dp_bucket_overlap=true",
             "optimizations.dp_overlap is off, so no gradient bucket overlaps a pass"},
        Case{validation("sc21-t2-zero3-175b-384"), "optimizations.dp_overlap=false",
             "plan.zero3 gathers and reduces each layer's parameters inside its passes"},
        // Hybrid shard: its rest is reduced as the last backward pass ends either way (a
        // review's trial, 2026-12-08, 20.2098 s both ways); its buckets split nothing.
        Case{validation("opt-175b-992"),
             "plan.dp=16 --set plan.global_batch=128 --set plan.micro_batch=2 --set "
             "plan.shard_group=8 --set optimizations.dp_overlap=false",
             "plan.zero3 gathers and reduces each layer's parameters inside its passes, and "
             "with one chunk a stage what is left starts as the last backward pass ends"},
        Case{validation("opt-175b-992"),
             "plan.dp=16 --set plan.global_batch=128 --set optimizations.dp_bucket_overlap=true",
             "plan.zero3 reduces each layer's gradients inside its passes"}}) {
    CAPTURE(c.set);
    const auto r = run_megasim("simulate " + c.scenario + " --set " + c.set);
    CHECK(r.exit_code == 0);
    const std::string last = c.set.substr(c.set.rfind(' ') + 1);  // the key said
    CHECK(r.err.find("--set " + last + " changes nothing: " + c.said) != std::string::npos);
  }
  // Where each applies, nothing is said: the copy on SC'21's pipelined 2021 code, which sets
  // it; a window one token short of the sequence; DP overlap on an interleaved ZeRO-3 plan,
  // where the switch moves the step (0.04 % here) through the DP group's meeting at its end.
  for (const std::string& args :
       {validation("sc21-t2-ptdp-175b-768"),
        kDefaultScenario + " --set optimizations.attention_window=2047",
        validation("opt-175b-992") + " --set plan.dp=31 --set plan.pp=4 --set plan.vpp=2 " +
            "--set optimizations.dp_overlap=false"}) {
    CAPTURE(args);
    const auto r = run_megasim("simulate " + args);
    CHECK(r.exit_code == 0);
    CHECK(r.err.find("changes nothing") == std::string::npos);
  }
}

TEST_CASE("cli: a window of the whole sequence prices the step of no window, measured rows too") {
  // The window was kept in the attention kernel's shape, which then missed the measured H200's
  // window-free rows and took the fitted model: 2.744253 s against 2.745018 s without a
  // window, while "changes nothing" was said (a review's find, 2026-12-08).
  const std::string s = validation("mcore-h100-177b-2304") +
                        " --set device=h200-sxm-141gb-measured --set model=gpt3-175b";
  const auto none = megasim::test::simulate_json(s);
  const auto whole = megasim::test::simulate_json(
      s + " --set optimizations.sliding_window=true --set optimizations.attention_window=2048");
  CHECK(whole["step_time_s"] == none["step_time_s"]);
  CHECK(whole["costs"]["measured_share"] == none["costs"]["measured_share"]);
}

TEST_CASE("cli: compare says a --set key that changes nothing in every variant, and only then") {
  // Said by simulate alone until 2026-12-08 (a review's find).
  const auto window = run_megasim("compare " + kDefaultScenario +
                                  " --set optimizations.attention_window=2048"
                                  " --vary plan.micro_batch=1,2");
  CHECK(window.exit_code == 0);
  CHECK(window.err.find("--set optimizations.attention_window=2048 changes nothing: a window of "
                        "2048 tokens holds the model's whole sequence") != std::string::npos);
  // DP overlap on ZeRO-3 applies at VPP 2, so a table with such a variant says nothing of it.
  const std::string opt = validation("opt-175b-992") +
                          " --set plan.global_batch=128 --set plan.micro_batch=1"
                          " --set plan.pp=4 --set optimizations.dp_overlap=false";
  const auto both = run_megasim("compare " + opt + " --set plan.dp=16 --vary plan.vpp=1,2");
  CHECK(both.exit_code == 0);
  CHECK(both.err.find("changes nothing") == std::string::npos);
  const auto one = run_megasim("compare " + opt + " --vary plan.dp=8,16");
  CHECK(one.exit_code == 0);
  CHECK(one.err.find("--set optimizations.dp_overlap=false changes nothing: plan.zero3") !=
        std::string::npos);
}
