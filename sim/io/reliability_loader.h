// Loading the run-level presets and turning a scenario's run, reliability and power settings
// into the inputs of run::simulate_run().
//
// A reliability preset (reliability/NAME.json) states recovery figures, each as
// {"value", "source"}, and names a failure-rate file (reliability/failure-rates-*.json) whose
// per-component interruption counts over an observed run are turned into rates per GPU or per
// node per hour here. A power preset (power/NAME.json, named after the device) lists node and
// switch components, summed here, and the grid's CO2; the GPU's power by activity is the
// device profile's, which power_for() adds (load_power_preset() leaves it zero). A name is found
// only in the source tree's and the installed share folder's reliability/ or power/; a preset's
// path relative to the scenario's folder, then to the working directory (io/resolve.h).
// Every key is read strictly (unknown keys are errors).
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "hw/device_profile.h"
#include "io/files_read.h"
#include "io/scenario.h"
#include "run/power.h"
#include "run/reliability.h"
#include "run/run_simulation.h"

namespace megasim::io {

// "none" gives run::no_failures_model() without reading a file. A path is taken relative to
// `base` (the scenario's folder), else to the working directory; its failure-rate file by path
// relative to the preset's folder first.
// `read`, when given, records every file read (the preset and its failure-rate file).
run::ReliabilityModel load_reliability_preset(const std::string& ref, FilesRead* read = nullptr,
                                              const std::filesystem::path& base = {});
run::ReliabilityModel load_reliability_file(const std::filesystem::path& file,
                                            FilesRead* read = nullptr);
// Node, switch and grid figures only: PowerInputs::gpu stays zero (power_for() fills it).
// A path is taken relative to `base` (the scenario's folder), else to the working directory.
run::PowerInputs load_power_preset(const std::string& ref, FilesRead* read = nullptr,
                                   const std::filesystem::path& base = {});
run::PowerInputs load_power_file(const std::filesystem::path& file, FilesRead* read = nullptr);

// The scenario's reliability preset with its overrides (checkpoint interval, spare nodes,
// straggler eviction) applied; `gpus_per_node` of the cluster, for the hosts the scenario's own
// stragglers slow.
run::ReliabilityModel reliability_for(const Scenario& s, int gpus_per_node,
                                      FilesRead* read = nullptr);
// The preset the scenario names in power.preset (which it must), node, switch and grid
// figures only; an error names the key.
run::PowerInputs scenario_power_preset(const Scenario& s, FilesRead* read = nullptr);
// The scenario's power preset (power.preset, else the device profile's own name, or the
// shipped profile a measured or imported one was made from) with pue, prices and grid
// intensity from the scenario where it sets them, and the GPU's power by activity from the
// device profile (datasheet figures or a calibration's NVML samples).
run::PowerInputs power_for(const Scenario& s, const hw::DeviceProfile& device,
                           FilesRead* read = nullptr);
// tokens, seed and trials; `trials` (from --trials) replaces the scenario's when given.
// Throws InputError when run.tokens is not set.
run::RunSpec run_spec_for(const Scenario& s, std::optional<int> trials = std::nullopt);

}  // namespace megasim::io
