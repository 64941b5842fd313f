// Evaluating a scenario end to end, for `simulate`, `compare` and `validate`: load the model,
// cluster and device it names, predict one step (sim/step), and, when run.tokens is set, the
// whole run with its failures and power (sim/run). Rendering to JSON and to a text table.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "io/scenario.h"
#include "run/power.h"
#include "run/reliability.h"
#include "run/run_simulation.h"
#include "run/step_profile.h"
#include "step/step_model.h"
#include "step/system_options.h"

namespace megasim::cli {

struct EvaluateOptions {
  bool full = false;
  bool trace = false;
  std::optional<int> trials;  // --trials replaces run.trials
  bool run_level = true;      // false: the step only (compare, validate)
};

struct Evaluation {
  io::Scenario scenario;
  std::string model_name, cluster_name, device_name, device_kind;
  step::SystemOptions system;
  step::StepPrediction step;
  std::optional<run::StepProfile> profile;
  std::optional<run::RunResult> run;
  std::optional<run::PowerInputs> power;
  std::optional<run::ReliabilityModel> reliability;
};

// Throws InputError for anything wrong with the scenario or the files it names.
Evaluation evaluate(const io::Scenario& scenario, const EvaluateOptions& options);
step::SystemOptions system_options(const io::Scenario& s, std::int64_t model_window);

nlohmann::json to_json(const Evaluation& e);
std::string to_text(const Evaluation& e);

}  // namespace megasim::cli
