// The worked example several op-program tests count bytes on by hand: MegaScale's 175B GPT at
// TP 8 × PP 4 × DP 2, micro-batch 1, a global batch of 8.
#pragma once

#include <string>

#include "io/model_loader.h"
#include "workload/model_spec.h"
#include "workload/parallel_plan.h"

namespace megasim::test {

inline workload::ModelSpec gpt175() {
  return io::load_model(std::string(MEGASIM_SOURCE_DIR) + "/models/gpt-175b-megascale.json");
}

inline workload::ParallelPlan gpt175_plan(workload::Precision precision) {
  workload::ParallelPlan p;
  p.tp = 8;
  p.pp = 4;
  p.dp = 2;
  p.global_batch = 8;
  p.precision = precision;
  return p;
}

}  // namespace megasim::test
