// A scenario as loaded: the references to model, cluster and device files (resolved to paths),
// the parallel plan, the optimisation switches, and the run, reliability and power settings.
// Produced only by load_scenario(), which validates every key (see scenarios/schema.json).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "io/files_read.h"
#include "io/key_log.h"
#include "step/system_options.h"
#include "workload/parallel_plan.h"

namespace megasim::io {

// Largest job megasim accepts (tp × cp × pp × dp): far past any cluster built, small enough that
// per-rank bookkeeping cannot exhaust memory.
constexpr std::int64_t kMaxGpus = 1 << 22;

// The system: a preset (systems/NAME.json: megatron-lm, megascale, megatron-core, deepspeed,
// fsdp) and what the scenario changes in it (step::kSwitches lists the switches, MegaScale's
// Table 3 optimisations among them).
struct OptimizationSpec {
  std::string preset = "megatron-lm";
  step::SystemOverrides overrides;
};

// A share of hosts slower than the rest (simulated with every rank).
struct StragglerSettings {
  double host_fraction = 0.0;
  double slowdown = 1.0;
  bool all_passes = true;
  std::uint64_t seed = 1;
};

// Which published measurement a validation scenario reproduces
// (../shared/validation/published_runs.json).
struct ValidationSettings {
  std::string run;     // the run's id
  std::string metric;  // a key of its "measured" object, or "mfu" of a step of "steps"
  std::optional<int> step;
  // "check", "fit" when a shared constant was fitted on it, or "context": a published figure
  // whose counting convention the publication does not state, shown beside the prediction but
  // left out of every error statistic and of the error bands.
  std::string role = "check";
  // The published run ran this plan though megasim's memory model puts a stage over the
  // device: the plan, and any variant over its device by no more than the published plan is,
  // is simulated with the stages marked over instead of refused (plan::assemble_workload), so
  // the step the publication timed is scored. Honoured only where the file as written sets it.
  bool allow_oom = false;
  // The run whose measurement this row's figure is, where it is another run's (MegaScale's
  // Table 3 ends on the configuration and figure of its Table 2's 256-GPU run): `validate`
  // counts the two as one measurement in the bands' coverage. Empty: its own run.
  std::string measurement_of;
};

// Host-side data loading (reading and preprocessing the samples of a step). No published
// figure exists for it: 0 unless the scenario states its own.
struct DataLoadingSettings {
  double host_ms_per_sample = 0.0;
  std::string source;
};

struct RunSettings {
  std::optional<double> tokens;  // tokens to train; enables the run-level prediction
  std::uint64_t seed = 1;
  int trials = 1;
  // run.evaluation: evaluate every `interval_steps` steps for `iterations` forward-only
  // iterations (Megatron-LM's --eval-interval and --eval-iters); 0: no evaluation.
  std::int64_t evaluation_interval_steps = 0;
  int evaluation_iterations = 0;
};

// Which reliability preset (reliability/NAME.json) and what the scenario overrides in it.
struct ReliabilitySettings {
  std::string preset = "default";
  std::optional<double> checkpoint_interval_min;
  std::optional<std::int64_t> spare_nodes;
  std::optional<bool> evict_stragglers;
  // Every failure cause's rate × this: a fleet's rate against the preset's (Llama 3's).
  double failure_rate_scale = 1.0;
  // Planned stops a day of the job's running, in place of its failure table's count.
  std::optional<double> planned_stops_per_day;
};

// power.preset names power/NAME.json; unset, the device's name is used.
struct PowerSettings {
  std::optional<std::string> preset;
  double pue = 1.2;
  std::optional<double> usd_per_gpu_hour;
  std::optional<double> usd_per_kwh;
  std::optional<double> grid_kg_co2_per_kwh;
};

struct Scenario {
  std::filesystem::path file;
  std::string name;
  std::string description;
  std::string assumptions;
  std::string model_ref, cluster_ref, device_ref;
  std::filesystem::path model_file, cluster_file, device_file;
  workload::ParallelPlan plan;
  OptimizationSpec optimizations;
  RunSettings run;
  ReliabilitySettings reliability;
  PowerSettings power;
  StragglerSettings stragglers;
  DataLoadingSettings data_loading;
  std::string placement = "pack";
  std::optional<ValidationSettings> validation;
  // Whether plan.optimizer is written (in the file or by --set): a system that sets the
  // optimizer then overrides a value the user gave (io::Inputs::keys_not_run).
  bool optimizer_written = false;
  // Whether plan.fp32_gradients is written: else, with bf16, the system's rule sets it
  // (step::SystemOptions::bf16_gradients_in_fp32).
  bool fp32_gradients_written = false;
};

// Whether JSON path `path` is `object` or a key inside it ("plan.tp" within "plan"; "plan"
// within itself; "planet" not within "plan").
bool path_within(const std::string& path, const std::string& object);

// Runs `load`, which reads a file the scenario names under `key` as `ref`; a refusal is passed
// on with the scenario and the key added as its last line, so that a user running several
// scenarios knows which to mend (a helper's sweep of 2026-12-05: a model file's parse error did
// not say which scenario read it; a reliability preset's, until 2026-12-06).
void named_by(const Scenario& s, const std::string& key, const std::string& ref,
              const std::function<void()>& load);

// `overrides` are "path=value" strings from --set; each is applied to the document before it
// is validated, so it is type-checked like the file's own keys. `read` records the file.
Scenario load_scenario(const std::filesystem::path& file,
                       const std::vector<std::string>& overrides = {}, KeyLog* log = nullptr,
                       FilesRead* read = nullptr);

// The first of a plan's keys that clash with each other (key under "plan", and why), as
// load_scenario refuses them; none where they agree. For a plan changed after loading.
struct PlanClash {
  std::string key, message;
};
std::optional<PlanClash> plan_clash(const workload::ParallelPlan& p);

}  // namespace megasim::io
