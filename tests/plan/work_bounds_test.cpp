// The work and memory a step asks for, counted from the plan before the work (plan/work_bounds.h),
// worked by hand on the default scenario: TP 8 × PP 8 × DP 192, VPP 6, global batch 6,144 of
// micro-batch 1 on a cluster of 12,288 GPUs.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "engine/error.h"
#include "io/inputs.h"
#include "io/scenario.h"
#include "plan/work_bounds.h"
#include "input_error_of.h"

using namespace megasim;
using megasim::test::input_error_of;

namespace {
io::Inputs default_step() {
  io::InputOptions o;
  o.run_level = false;
  return io::load_inputs(io::load_scenario(std::filesystem::path(MEGASIM_SOURCE_DIR) /
                                           "scenarios/megascale-175b-12288.json"),
                         o);
}
}  // namespace

TEST_CASE("work bounds: the default scenario's passes and memory estimate, by hand") {
  const io::Inputs in = default_step();
  // 6,144 / (192 × 1) = 32 micro-batches; 8 stages × 32 × 6 virtual stages × 2 passes = 3,072.
  CHECK(plan::step_passes(in, false) == 3072.0);
  // --full: every DP replica, × 192 = 589,824.
  CHECK(plan::step_passes(in, true) == 589824.0);
  // 32 MiB + 12,288 × 3 KiB (36 MiB) + 3,072 × 320 B (983,040 B).
  CHECK(plan::step_memory(in, false, false).value() == 68.0 * 1048576 + 983040);
  // The trace adds the 3,072 passes of one replica × 10 KiB = 30 MiB, with or without --full.
  CHECK(plan::step_memory(in, false, true).value() == 98.0 * 1048576 + 983040);
  CHECK(plan::step_memory(in, true, true).value() == 98.0 * 1048576 + 589824.0 * 320);
}

TEST_CASE("work bounds: a limit below the estimate is refused with the estimate and the keys") {
  const io::Inputs in = default_step();
  plan::WorkLimits limits;
  limits.max_memory = kMiB * 100.0;
  CHECK_NOTHROW(plan::check_step_memory(in, false, true, limits));  // 98.9 MiB
  const std::string e = input_error_of([&] { plan::check_step_memory(in, true, true, limits); });
  CHECK(e.find("megascale-175b-12288.json: plan.global_batch: a step of 589824 pipeline passes "
               "(plan.pp 8 × plan.dp 192 (--full) × 32 micro-batches") != std::string::npos);
  CHECK(e.find("needs an estimated 278 MiB") != std::string::npos);
  CHECK(e.find("more than --max-memory 100 MiB") != std::string::npos);
  // Folded, the cluster's 12,288 GPUs are most of the estimate: the key named is the cluster
  // (plan.global_batch was named whatever the terms, until 2026-12-05).
  limits.max_memory = kMiB * 40.0;
  const std::string folded =
      input_error_of([&] { plan::check_step_memory(in, false, false, limits); });
  CHECK(folded.find("megascale-175b-12288.json: cluster: a step of 3072 pipeline passes") !=
        std::string::npos);
}

TEST_CASE("work bounds: --full counts every context-parallel rank of every replica") {
  io::Inputs in = default_step();
  // The same 12,288 GPUs as TP 8 × CP 2 × PP 8 × DP 96: 6,144 / 96 = 64 micro-batches, so
  // folded 8 × 64 × 6 × 2 = 6,144 passes and --full × dp 96 × cp 2 = 1,179,648.
  in.scenario.plan.cp = 2;
  in.scenario.plan.dp = 96;
  CHECK(plan::step_passes(in, false) == 6144.0);
  CHECK(plan::step_passes(in, true) == 1179648.0);
  plan::WorkLimits limits;
  limits.max_events = 1000000;
  const std::string e = input_error_of([&] { plan::check_step_work(in, true, limits); });
  CHECK(e.find("(8 stages × dp 96 × cp 2 (--full) × 64 micro-batches") != std::string::npos);
}
