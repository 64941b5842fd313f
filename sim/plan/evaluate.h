// Evaluating a scenario end to end, for `simulate`, `compare` and `validate`: its checked
// inputs (io::load_inputs) assembled into one step (assembly.h), predicted on the device and
// the network (sim/step), and, when run.tokens is set, the whole run with its failures and
// power (sim/run). Rendering lives in reports/.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "io/inputs.h"
#include "plan/bands.h"
#include "plan/work_bounds.h"
#include "run/run_simulation.h"
#include "run/step_profile.h"
#include "step/step_model.h"
#include "workload/memory.h"

namespace megasim::plan {

struct EvaluateOptions {
  bool full = false;
  bool trace = false;
  step::StepRequest::Network network = step::StepRequest::Network::kShared;
  WorkLimits limits;
  // Validation residuals (`megasim validate --json`, validation/residuals.json) to draw the
  // prediction's error band from (bands.h); empty: no band.
  std::filesystem::path residuals;
  // Records the residuals file when given (io/files_read.h).
  io::FilesRead* read = nullptr;
};

struct Evaluation {
  io::Inputs inputs;
  step::StepPrediction step;
  std::optional<run::StepProfile> profile;  // with `run`
  std::optional<run::RunResult> run;        // when inputs.run is set
  std::optional<Band> band;                 // with `residuals`
  std::string no_band;                      // without a band: why
};

// Throws InputError for a plan that does not fit the device memory, and for a step or run
// whose work passes options.limits, before doing it (work_bounds.h).
Evaluation evaluate(const io::Inputs& inputs, const EvaluateOptions& options = {});

// A line to say where the scenario's power.preset is, by name, the preset of another GPU than
// its device's (the presets are named after the device profiles they go with, and a device
// takes its own, or its base profile's, unset): h100-sxm5-80gb's on an A100 job charges a DGX
// H100's node overhead. Empty otherwise, for a preset given by path (a user's own) and for
// inputs loaded without the run level.
std::string power_preset_mismatch(const io::Inputs& inputs);
// The same where something else prices the power (search's energy objective, whose inputs
// carry no run level): `priced` says whether power is priced at all.
std::string power_preset_mismatch(const io::Inputs& inputs, bool priced);

// A line to say where the cluster's nodes (`node.gpu`) hold another part than the device
// profile's (hw::node_part_mismatch, family and form): the step then runs the profile's GPU
// on the cluster's links, a what-if megasim runs but does not choose for the user (accepted
// without a word until 2026-12-06). Empty otherwise.
std::string cluster_device_mismatch(const io::Inputs& inputs);
// The same line for `cluster` and `device`, saying what `runs` the profile's GPU ("the step",
// "the sweep").
std::string cluster_device_mismatch(const net::ClusterSpec& cluster,
                                    const hw::DeviceProfile& device, const char* runs);

// A line naming the plan's features the preset's framework does not run (plan.zero3 under
// megatron-lm, plan.pp under fsdp: step::SystemOptions::not_in_framework), priced as a what-if
// on the preset's other mechanisms (accepted without a word until 2026-12-07). Empty otherwise.
std::string framework_lacks(const io::Inputs& inputs);

// A line to say that validation.allow_oom let the plan run over the device's memory (one of
// its stages' `memory` does not fit) for a validation.run that the data folder's published runs
// file, read whole, does not hold: the key is a published run's statement that its plan ran,
// and a scenario of one's own that borrows it bypasses the memory refusal (a planner's trial,
// 2026-12-07). A run held out of the project is checked with a runs file of its own, so this
// is said, not refused (by simulate, compare and inspect alike). Empty otherwise, and where the
// runs file cannot be read.
std::string allow_oom_without_run(const io::Inputs& inputs,
                                  const std::vector<workload::MemoryEstimate>& memory);

// A line to say where a node of the cluster, its GPUs at the device profile's peak power and
// the power preset's node overhead, draws more than the profile's reference system may
// (`reference_system.max_power_w` for as many GPUs: DGX A100's 6.5 kW): a node overhead typed
// wrong (20,000 W for a 43 kW node passed unsaid until 2026-12-06). Empty otherwise, and for
// inputs loaded without the run level.
std::string node_power_over_reference(const io::Inputs& inputs);

// The job's share of the fabric's switches, by the share of its GPUs the job holds: a fraction
// of a switch where the job holds part of one (until 2026-12-04 rounded up to whole switches,
// which charged a one-node job two 64-port switches and ranked small jobs by it).
double job_switches(const net::Topology& topology, std::int64_t job_gpus);
// The step as the run-level simulation sees it: its time and tokens, the job's GPUs, nodes
// and share of the fabric's switches, its checkpoint, and how a GPU spends the step.
run::StepProfile step_profile(const io::Inputs& inputs, const net::Topology& topology,
                              const step::StepPrediction& step);

}  // namespace megasim::plan
