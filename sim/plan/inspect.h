// `megasim inspect`: what the workload model makes of a scenario before any simulation, from
// the same assembly `simulate` runs (assembly.h): FLOPs per token, the op table of each
// pipeline stage (one micro-batch through all its chunks, and the per-step optimizer and DP
// work) and the memory each stage's GPUs need against the device capacity.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/units.h"
#include "io/inputs.h"
#include "workload/flops.h"
#include "workload/memory.h"

namespace megasim::plan {

struct KindTotals {
  std::int64_t count = 0;
  Flops model{0.0}, hardware{0.0};
  Bytes bytes{0.0};
};

using OpTable = std::map<std::string, KindTotals>;  // keyed by op kind name

struct StageInspection {
  int stage = 0;
  int layers = 0;
  std::int64_t parameters_per_rank = 0;
  Bytes pp_send_bytes{0.0};
  OpTable per_micro_batch, per_step;
  workload::MemoryEstimate memory;
  workload::Fit fit = workload::Fit::kFits;  // workload::fit against the device
};

struct Inspection {
  io::Inputs inputs;
  // The model as the system runs it (a parallel block has one norm a layer): its parameter
  // count is the per-rank counts' sum.
  workload::ModelSpec executed;
  bool fused_attention = true;
  workload::FlopsPerToken flops;  // of the executed model, the MFU convention's too
  Bytes capacity{0.0};            // device memory
  std::vector<StageInspection> stages;
};

struct InspectOptions {
  bool unfused_attention = false;  // Megatron's unfused attention, whatever the system runs
  bool allow_oom = false;          // report a stage over the device memory instead of refusing
};

Inspection inspect(const io::Inputs& inputs, const InspectOptions& options = {});

}  // namespace megasim::plan
