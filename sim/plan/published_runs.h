// The published runs file (validation/published_runs.json) as `validate` reads it: its form
// checked before any row is scored, and a run's id.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "io/json_reader.h"
#include "io/scenario.h"
#include "workload/model_spec.h"
#include "workload/parallel_plan.h"

namespace megasim::plan {

// A run's id, or "" for an entry that is not an object with a string id.
std::string run_id(const io::Json& run);

// The index in `runs["runs"]` of the run whose id is `id`, or nullopt where the file holds none
// (or no "runs" array). check_published_runs holds each id to one run.
std::optional<std::size_t> find_run(const io::Json& runs, const std::string& id);

// Throws InputError naming `file` and the JSON path when `runs` is not an object with a "runs"
// array whose every entry is a run: an object with a non-empty string id, the figures megasim
// scores (iteration_time_s…, mfu…, hfu…, tflops_per_gpu…, tokens_per_s…, under "measured" or
// in a step) numbers or null, MFU and HFU fractions of 1, its counts whole numbers above 0, a
// model it names by string one of the file's "models", no id given twice. Other keys (the file's
// "models", a run's "notes", a figure's "source") are the file's own and not checked.
void check_published_runs(const io::Json& runs, const std::string& file);

// A count a run may state of its model, and the scenario's value of it: one list (with
// workload::plan_counts for the plan) that check_run_shape holds the file's counts to,
// unchecked_run_keys says the keys outside of, and validate compares a scenario by (the
// model's vocab within 5 %, the rest exactly).
struct StatedCount {
  const char* key;
  std::int64_t ours;
};
std::vector<StatedCount> model_counts(const workload::ModelSpec& model);

// The model a run states: its "model" object, or the file's "models" entry its string names
// (MegaScale's runs name "gpt-175b-megascale"); nullptr when it states none. `at` becomes the
// JSON path of that object, ending in '.'.
const io::Json* run_model(const io::Json& runs, const io::Json& run, std::size_t index,
                          std::string& at);

// The keys of a run's plan and stated model that validate neither checks against the scenario
// nor knows as stated only (a plan's recompute, a model's activation): a misspelt key ("vp" for
// "vpp") would leave its check out without a word. Before them the file's and each run's keys
// that are none of their own ("mesured" for "measured" drops the run's figures), each with the
// nearest own key where one is close. Their JSON paths, in file order.
std::vector<std::string> unchecked_run_keys(const io::Json& runs);

// A run's keys that are none of a run's own, each with the nearest own key where one is close
// ("mesured (did you mean 'measured'?)"): for an error a misspelt key explains, which stops
// `validate` before unchecked_run_keys is said.
std::vector<std::string> unknown_keys_of_run(const io::Json& run);

// validation.measurement_of of `v` (scored at `published` by the scenario `origin`): a run of
// `runs` whose `measured` holds the row's metric at the row's figure, so the two are one
// measurement; not the row's own run, nor one of another publication (the first word of its id).
// InputError naming the key otherwise; nothing when unset.
void check_measurement_of(const io::Json& runs, const io::ValidationSettings& v, double published,
                          const std::string& origin);

}  // namespace megasim::plan
