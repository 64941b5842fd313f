// Everything a scenario names, read once and checked together, at the edge: the model, the
// cluster, the device profile (kernels and collective constants from one parse of its file),
// the system (preset and the scenario's switches merged), and, for the run-level prediction,
// the run, reliability and power settings with their presets.
//
// load_inputs() runs every check that involves more than one file (the plan against the model
// and the cluster, a sliding window without a size, a device without collective constants, the
// presets the run needs) and reports every clash it finds in one InputError, before anything
// is simulated. Lower modules take these inputs as checked and assert.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hw/collective_constants.h"
#include "hw/device_profile.h"
#include "io/scenario.h"
#include "net/cluster_spec.h"
#include "run/power.h"
#include "run/reliability.h"
#include "run/run_simulation.h"
#include "step/system_options.h"
#include "workload/model_spec.h"

namespace megasim::io {

// What the run-level prediction needs besides the step.
struct RunInputs {
  run::RunSpec spec;
  run::ReliabilityModel reliability;
  run::PowerInputs power;
};

// A key the scenario writes (in its file or by --set) that the step does not run as written:
// `overridden` when a system switch runs another value in its place (refused where the user
// sets it, as --set or a varied value would label a run with a value it was not priced
// with), else a key with nothing to apply to.
struct KeyNotRun {
  std::string path;     // "plan.optimizer"
  std::string written;  // the value as written, "adam"
  std::string why;      // "runs lamb: the system's lamb switch (optimizations.lamb) sets ..."
  bool overridden = true;
  std::string by;  // the switch that overrides it, "optimizations.lamb"
};

struct Inputs {
  Scenario scenario;  // its plan's optimizer the one the system runs (step::system_optimizer)
  workload::Optimizer written_optimizer = workload::Optimizer::kAdam;  // as the scenario says
  std::vector<KeyNotRun> keys_not_run;
  workload::ModelSpec model;  // as the model file has it
  net::ClusterSpec cluster;
  hw::DeviceProfile device;
  hw::CollectiveConstants collective;
  step::SystemOptions system;
  std::optional<RunInputs> run;  // when run.tokens is set and the run level is wanted
};

struct InputOptions {
  bool run_level = true;      // false: the step only (compare, validate, inspect)
  std::optional<int> trials;  // --trials replaces run.trials
};

// `read`, when given, records every file read (io/files_read.h): no output may replace one.
Inputs load_inputs(const Scenario& scenario, const InputOptions& options = {},
                   FilesRead* read = nullptr);

// The checks load_inputs makes of the scenario's plan against the model, cluster, system and
// device the inputs hold (every clash in one InputError): for a plan changed after loading.
void check_plan(const Inputs& in);

}  // namespace megasim::io
