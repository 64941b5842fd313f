// `megasim validate`: every scenario of a folder that names a published measurement
// (scenario key `validation`), predicted and set against the published figure
// (validation/published_runs.json), with the statistics a reader needs: mean absolute
// percentage error of the rows only checked, apart from the rows shared constants were fitted
// on, the worst row, and for ablation chains (a run's steps of one metric) the difference in
// points of every step and of every step's gain over the step before.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "io/files_read.h"
#include "plan/bands.h"
#include "plan/held_out.h"
#include "step/step_model.h"

namespace megasim::plan {

// The published measurement a row's figure is: its run (or the run `measurement_of` names), the
// configuration its metric names after the quantity ("_full_recompute" of Korthikanti's
// "iteration_time_s_full_recompute": one run, two measurements; a precision, "mfu_bf16", is
// none) and its chain step. The step time, MFU, HFU and TFLOP/s of one configuration are one
// measurement (each is the step time's inverse or the step time).
std::string measurement_key(const std::string& run, const std::string& metric, int step,
                            const std::string& measurement_of = "");

struct ValidationRow {
  std::string scenario, run, metric, role;
  int step = -1;  // of an ablation chain; -1 for a plain row
  double published = 0, predicted = 0;
  std::string family;     // system_family (bands.h): the preset, or MegaScale's in part
  std::int64_t gpus = 0;  // of the job
  std::string source;     // the published run's `source`: the paper or report it comes from
  std::string gpu = {};   // gpu_family of the device it ran on (bands.h)
  std::string measurement_of = {};  // validation.measurement_of: "" its own run
  double error() const { return (predicted - published) / published; }
  // The measurement its figure is (measurement_key): a run's iteration time and MFU are one.
  std::string measurement() const;
  ResidualRow residual() const {
    return {scenario,
            source_of_run(run),
            family,
            gpus,
            step_time_residual(metric, predicted, published),
            gpu,
            measurement()};
  }
};

// A published plan megasim refuses because its memory model does not fit it on the device:
// listed by `validate`, never scored. Its scenario lives in the `refused/` folder of the
// validation scenarios, so that every other use of them (goldens, agreement tests) sees only
// plans megasim predicts.
struct RefusedRow {
  std::string scenario, run, metric, family, source;
  double published = 0;
  std::string reason;  // the refusal, as `simulate` prints it
};

struct ChainGain {
  std::string run;
  int step = 0;
  double published = 0, predicted = 0;  // gain over the step before
};

struct Validation {
  std::vector<ValidationRow> rows;  // by scenario file name
  double mape_checked = 0, mape_fitted = 0;
  std::size_t rows_checked = 0, rows_fitted = 0;
  std::optional<ValidationRow> worst;  // largest |error| of the plain rows
  double chain_max_points = 0;         // largest |predicted − published| of a chain step
  std::vector<ChainGain> gains;
  double gain_max_points = 0;          // largest |gain difference|
  Coverage bands;                      // every row's band from the other sources (bands.h)
  HeldOutCoverage bands_held_out;      // the same from held-out residuals (held_out.h)
  // Per system family (system_family), over its plain rows, fit and check alike.
  struct Family {
    std::string name;
    std::size_t rows = 0;
    double mape = 0, worst = 0;  // worst: the largest |error|
  };
  std::vector<Family> families;  // by name
  std::vector<RefusedRow> refused;  // by scenario file name
  // Scenario files of the folder without a `validation` block, which score nothing (skipped
  // without a word until 2026-12-06; `validate` says them on stderr).
  std::vector<std::string> without_validation;
  // JSON paths of the runs file's plan and model keys that validate neither checks against a
  // scenario nor knows (unchecked_run_keys): `validate` says them on stderr, a misspelling's
  // lost check.
  std::vector<std::string> unchecked_keys;
};

// The metric of a prediction that a published row names ("iteration_time_s...", "mfu...",
// "hfu...", "tflops_per_gpu_hw", "tflops_per_gpu" (model FLOPs), "tokens_per_s", and
// "tflops_per_gpu_as_published", a count of unstated convention, against the hardware count);
// InputError naming `origin` otherwise.
double predicted_metric(const step::StepPrediction& p, const std::string& metric,
                        const std::string& origin);

// `read`, when given, records every file read (io/files_read.h). Scenarios in
// `scenario_dir`/refused are expected to be refused for memory; one that fits is an InputError
// (it belongs with the others then).
Validation validate(const std::filesystem::path& published_runs,
                    const std::filesystem::path& scenario_dir, io::FilesRead* read = nullptr);

// The statistics of `rows` (rows given in order), as validate() computes them.
Validation summarise(std::vector<ValidationRow> rows);

}  // namespace megasim::plan
