// The one place a scenario's step is put together. Every command (simulate, inspect, compare,
// validate, calibrate shapes) goes through these two functions, so that they cannot disagree
// about what runs: the workload (model as the system runs it, op programs, memory per stage,
// step::assemble_workload), the memory check against the device, the placement of ranks on
// GPUs, stragglers and data loading.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "io/inputs.h"
#include "net/topology.h"
#include "step/step_model.h"
#include "step/system_options.h"
#include "step/workload_assembly.h"

namespace megasim::plan {

struct WorkloadOptions {
  std::optional<step::AttentionKernel> attention;  // replaces the system's kernel (inspect)
  bool allow_oom = false;  // report a plan over the device memory instead of refusing it
};

// How far over its device a plan of `inputs` may be and still run: when the scenario file says
// its published run happened over megasim's memory model (validation.allow_oom), as far as
// that published plan is over; else zero. search prunes by it as assemble_workload refuses.
Bytes memory_allowance(const io::Inputs& inputs);

// Throws InputError, naming the scenario, when a stage does not fit the device memory.
step::AssembledWorkload assemble_workload(const io::Inputs& inputs,
                                          const WorkloadOptions& options = {});

struct StepOptions {
  bool full = false;   // every rank rather than one per stage
  bool trace = false;  // keep per-task records for a trace
  // PP and DP traffic priced beforehand, or issued on the step's one shared network.
  step::StepRequest::Network network = step::StepRequest::Network::kShared;
};

// The GPU of each job rank (workload::RankIndex order) for `plan` under the scenario's
// placement ("pack" or "spread") and the plan's rank order.
std::vector<int> job_placement(const std::string& placement, const net::Topology& topology,
                               const workload::ParallelPlan& plan);

// The step request of the scenario on `topology` (built from inputs.cluster).
step::StepRequest assemble_step(const io::Inputs& inputs, const net::Topology& topology,
                                const StepOptions& options = {});

}  // namespace megasim::plan
