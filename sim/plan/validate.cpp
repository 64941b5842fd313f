#include "plan/validate.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "engine/error.h"
#include "hw/gpu_part.h"
#include "io/inputs.h"
#include "io/json_reader.h"
#include "io/scenario.h"
#include "plan/evaluate.h"
#include "plan/published_runs.h"

namespace megasim::plan {

std::string measurement_key(const std::string& run, const std::string& metric, int step,
                            const std::string& measurement_of) {
  std::string configuration;
  for (const std::string base : {"iteration_time_s", "mfu", "hfu"}) {
    if (metric.rfind(base, 0) == 0) configuration = metric.substr(base.size());
  }
  // A precision the metric names ("mfu_bf16": Llama 3's MFU against the bf16 peak) is the
  // quantity's, not a configuration of the run.
  for (const std::string precision : {"_bf16", "_fp16", "_fp8"}) {
    if (configuration == precision) configuration.clear();
  }
  std::string key = measurement_of.empty() ? run : measurement_of;
  if (!configuration.empty()) key += " #" + configuration.substr(1);
  return step >= 0 && measurement_of.empty() ? key + " step " + std::to_string(step) : key;
}

std::string ValidationRow::measurement() const {
  return measurement_key(run, metric, step, measurement_of);
}

namespace {

namespace fs = std::filesystem;

// The published figure `v` scores, from `runs` (the file `runs_file`); `origin` is the scenario.
double published_metric(const io::Json& runs, const std::string& runs_file,
                        const io::ValidationSettings& v, const std::string& origin) {
  const std::optional<std::size_t> index = find_run(runs, v.run);
  if (!index) {
    throw InputError(origin + ": validation.run: no run '" + v.run + "' in the published runs");
  }
  const std::size_t i = *index;
  const auto& r = runs["runs"][i];
  const std::string at = fmt::format("{}: runs[{}] ('{}')", runs_file, i, v.run);
  const io::Json* value = nullptr;
  if (v.step) {
    if (!r.contains("steps") || !r["steps"].is_array()) {
      throw InputError(fmt::format("{}: validation.step: {} has no steps array", origin, at));
    }
    const auto& steps = r["steps"];
    if (*v.step >= static_cast<int>(steps.size())) {
      // Counted from 0: step 999 of 9 read "has 9 steps, not 1000" until 2026-12-05.
      throw InputError(
          fmt::format("{}: validation.step: {} is past run '{}', whose {} steps "
                      "are 0 to {}",
                      origin, *v.step, v.run, steps.size(), static_cast<int>(steps.size()) - 1));
    }
    const auto& step = steps[static_cast<std::size_t>(*v.step)];
    if (step.is_object() && step.contains(v.metric)) value = &step[v.metric];
  } else if (r.contains("measured") && r["measured"].is_object() &&
             r["measured"].contains(v.metric)) {
    value = &r["measured"][v.metric];
  }
  if (value == nullptr || !value->is_number()) {
    // A misspelt "measured" or "steps" is the likely cause: said (a review's find, 2026-12-08).
    const std::vector<std::string> unknown = unknown_keys_of_run(r);
    throw InputError(
        fmt::format("{}: validation.metric: {} publishes no number '{}'{}{}", origin, at, v.metric,
                    v.step ? fmt::format(" at steps[{}]", *v.step) : " under measured",
                    unknown.empty() ? std::string()
                                    : fmt::format(" (keys of the run megasim does not know: {})",
                                                  fmt::join(unknown, ", "))));
  }
  const double published = value->get<double>();
  // Times, throughputs and MFU are all positive: anything else is a typo the MAPE would hide.
  // A step time past a day (1e308 s scored as -100 %) is one too.
  const bool time = v.metric.find("time_s") != std::string::npos;
  constexpr double kMaxStepSeconds = 86400.0;
  if (!(published > 0.0) || !std::isfinite(published) || (time && published > kMaxStepSeconds)) {
    throw InputError(fmt::format(
        "{}: runs[{}].{}.{}: {} ('{}'), but a published figure must be positive{} (scored by "
        "{})",
        runs_file, i, v.step ? fmt::format("steps[{}]", *v.step) : std::string("measured"),
        v.metric, published, v.run, time ? " and a step time at most a day" : "", origin));
  }
  return published;
}

// The GPU the run states, by its family (hw::gpu_part: A100, H100, H200) where the device's
// part gives one ("A100" in "A100-SXM4-80GB", "NVIDIA A100" or a profile named
// "dgx-a100-measured"; a profile named otherwise by the shipped one it was made from): an H100
// profile scored an A100 row at -54.9 % until 2026-12-06. A part of no known family is not
// checked.
void check_gpu_family(const io::Json& run, const std::string& runs_file, std::size_t index,
                      const io::Inputs& in, const std::string& file) {
  if (run.contains("gpu") && run["gpu"].is_string()) {
    const std::string stated = run["gpu"].get<std::string>();
    const std::string family = hw::gpu_part(stated).family, device = gpu_family(in.device);
    if (!family.empty() && !device.empty() && family != device) {
      throw InputError(fmt::format(
          "{}: the device is '{}', but {}: runs[{}].gpu ('{}') states '{}'; a scenario scored "
          "against a run must be that run",
          file, in.device.name, runs_file, index, in.scenario.validation->run, stated));
    }
  }
}

// A scenario scored against a published run must be that run: its GPU count, the plan and the
// model's shape the run states (where it states them) are checked, so that an edited copy is
// refused rather than scored. The vocabulary is checked within 5 %: models pad it to their own
// multiple.
void check_matches_published(const io::Json& runs, const std::string& runs_file,
                             const io::Inputs& in, const std::string& file) {
  const std::optional<std::size_t> found = find_run(runs, in.scenario.validation->run);
  if (!found) return;  // published_metric names the missing run
  const std::size_t index = *found;
  const io::Json* run = &runs["runs"][index];
  // `path` is the JSON path of the object holding the key, ending in '.'.
  const auto check = [&](const io::Json& published, const char* key, std::int64_t ours,
                         const std::string& where, const std::string& path) {
    if (!published.is_object() || !published.contains(key)) return;
    const io::Json& v = published[key];
    if (v.is_null()) return;                    // not published
    if (v.get<std::int64_t>() == ours) return;  // a whole number above 0: check_run_shape
    throw InputError(fmt::format(
        "{}: {} is {}, but {}: {}{} ('{}') states {}; a scenario scored "
        "against a run must be that run",
        file, where, ours, runs_file, path, key, in.scenario.validation->run, v.dump()));
  };
  const std::string run_at = fmt::format("runs[{}].", index);
  const workload::ParallelPlan& p = in.scenario.plan;
  check(*run, "gpus", p.gpus(), "the plan's GPU count", run_at);
  check_gpu_family(*run, runs_file, index, in, file);
  const io::Json empty = io::Json::object();
  const io::Json& plan = run->contains("plan") ? (*run)["plan"] : empty;
  for (const auto& [key, ours] : workload::plan_counts(p)) {
    // A chain's step may change the batch (MegaScale Table 3's LAMB step triples it), and
    // the run states that only in words.
    if (in.scenario.validation->step && std::string(key) == "global_batch") continue;
    // A published batch its own data-parallel size cannot split (OPT's "about 1,024" over 124
    // replicas) is approximate: the nearest whole batch, within 5 %, is that run's.
    if (std::string(key) == "global_batch" && plan.contains("global_batch") &&
        plan["global_batch"].is_number_integer() && p.dp > 0) {
      const auto published = plan["global_batch"].get<std::int64_t>();
      if (published % p.dp != 0 &&
          std::abs(static_cast<double>(ours - published)) <= 0.05 * static_cast<double>(published))
        continue;
    }
    check(plan, key, ours, fmt::format("plan.{}", key), run_at + "plan.");
  }
  // The run's model, or the file's "models" entry it names (MegaScale's runs name theirs: a
  // 22B model scored MegaScale's 175B rows unchecked until 2026-12-07).
  std::string model_at;
  const io::Json* stated = run_model(runs, *run, index, model_at);
  const io::Json& model = stated != nullptr ? *stated : empty;
  const workload::ModelSpec& m = in.model;
  for (const auto& [key, ours] : model_counts(m)) {
    if (std::string(key) == "vocab") continue;  // within padding's 5 %, below
    check(model, key, ours, fmt::format("the model's {}", key), model_at);
  }
  // The vocabulary within what padding adds (GPT-2's 50,257 padded to 51,200: 1.9 %).
  if (model.contains("vocab") && model["vocab"].is_number_integer()) {
    const auto published = model["vocab"].get<std::int64_t>();
    if (std::abs(static_cast<double>(m.vocab - published)) > 0.05 * static_cast<double>(published))
      throw InputError(
          fmt::format("{}: the model's vocab is {}, but {}: {}vocab ('{}') states {}, more than "
                      "the 5 % padding may add; a scenario scored against a run must be that run",
                      file, m.vocab, runs_file, model_at, in.scenario.validation->run, published));
  }
}

// A published time or throughput that would put the run past its GPUs' peak (an MFU over 1,
// or over the fastest data type's peak against the bf16 one MFU is counted on) is a typo, not
// a row to score: it would enter the errors at -100 % or +10^10 %.
void check_within_peak(const ValidationRow& row, const step::StepPrediction& p,
                       const hw::DeviceProfile& device, const std::string& origin) {
  if (row.metric.rfind("mfu", 0) == 0 || row.metric.rfind("hfu", 0) == 0 || !(p.mfu > 0.0)) return;
  const double implied =
      p.mfu * (1.0 + step_time_residual(row.metric, row.predicted, row.published));
  double fastest = 0.0;
  for (const auto& [dtype, peak] : device.peak) fastest = std::max(fastest, peak.value());
  const double bound = fastest / device.peak_for(hw::DType::kBf16).value();
  if (implied > bound) {
    throw InputError(fmt::format(
        "{}: published '{}' is {:g}, which puts the run at {} % of its GPUs' bf16 peak "
        "(device '{}', at most {:.0f} %); a published figure must be within the device's peak",
        origin, row.metric, row.published,
        // 1e-300 s printed a 300-digit percentage until 2026-12-05.
        implied < 1e6 ? fmt::format("{:.0f}", implied * 100.0)
                      : fmt::format("{:.3g}", implied * 100.0),
        device.name, bound * 100.0));
  }
}

std::string published_source(const io::Json& runs, const std::string& run) {
  const std::optional<std::size_t> i = find_run(runs, run);
  if (!i) return "";
  const io::Json& r = runs["runs"][*i];
  return r.contains("source") && r["source"].is_string() ? r["source"].get<std::string>() : "";
}

std::vector<fs::path> scenario_files(const fs::path& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    // The scenarios folder's schema is no scenario (`--scenarios scenarios` read it as one
    // and refused the folder until 2026-12-05).
    if (entry.path().extension() == ".json" && entry.path().filename() != "schema.json")
      files.push_back(entry.path());
  }
  if (ec) {
    throw InputError(dir.string() + ": cannot list the validation scenarios (" + ec.message() + ")");
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Each step's gain over the step before, per chain (a run's steps of one metric).
void chain_gains(const std::vector<ValidationRow>& rows, Validation& v) {
  std::map<std::pair<std::string, std::string>, std::map<int, const ValidationRow*>> chains;
  for (const auto& r : rows) {
    if (r.step >= 0) chains[{r.run, r.metric}][r.step] = &r;
  }
  for (const auto& [chain, steps] : chains) {
    const ValidationRow* before = nullptr;
    for (const auto& [step, r] : steps) {
      if (before != nullptr && before->step == step - 1) {
        const ChainGain g{chain.first, step, r->published - before->published,
                          r->predicted - before->predicted};
        v.gain_max_points = std::max(v.gain_max_points, std::fabs(g.predicted - g.published) * 100);
        v.gains.push_back(g);
      }
      before = r;
    }
  }
}

double mean(const std::vector<double>& v) {
  double sum = 0;
  for (double e : v) sum += e;
  return v.empty() ? 0.0 : sum / static_cast<double>(v.size());
}

}  // namespace

double predicted_metric(const step::StepPrediction& p, const std::string& metric,
                        const std::string& origin) {
  if (metric.rfind("iteration_time_s", 0) == 0) return p.step_time.to_seconds();
  if (metric.rfind("mfu", 0) == 0) return p.mfu;
  // Published HFU figures count as Korthikanti et al. do (the recomputed attention core three
  // times its forward), not as megasim's own `hfu`.
  if (metric.rfind("hfu", 0) == 0) return p.hfu_published;
  if (metric == "tflops_per_gpu_hw") return p.tflops_per_gpu_hw;
  // TFLOP/s a GPU in model FLOPs (Megatron-Core's table, whose MFU column is this over the
  // peak rounded to a whole percent: its rows are scored on the TFLOP/s since 2026-12-03).
  if (metric == "tflops_per_gpu") return p.tflops_per_gpu_model;
  // TFLOP/s whose counting convention the publication does not state (role "context" rows):
  // set against the hardware count, recomputation included.
  if (metric == "tflops_per_gpu_as_published") return p.tflops_per_gpu_hw;
  if (metric == "tokens_per_s") return p.tokens_per_s;
  throw InputError(origin + ": validation.metric: '" + metric + "' is not a metric megasim predicts");
}

Validation summarise(std::vector<ValidationRow> rows) {
  Validation v;
  std::map<std::string, std::vector<double>> errors;  // by role, plain rows only
  for (const auto& r : rows) {
    if (r.role == "context") continue;  // shown, never scored
    if (r.step >= 0) {
      v.chain_max_points = std::max(v.chain_max_points, std::fabs(r.predicted - r.published) * 100);
      continue;
    }
    errors[r.role].push_back(std::fabs(r.error()));
    if (!v.worst || std::fabs(r.error()) > std::fabs(v.worst->error())) v.worst = r;
  }
  chain_gains(rows, v);
  std::vector<ResidualRow> residuals;
  for (const auto& r : rows) {
    if (r.role != "context") residuals.push_back(r.residual());
  }
  v.bands = band_coverage(residuals);
  std::map<std::string, std::vector<double>> by_family;
  for (const auto& r : rows) {
    if (r.step < 0 && r.role != "context") {
      by_family[r.residual().family].push_back(std::fabs(r.error()));
    }
  }
  for (const auto& [name, e] : by_family) {
    v.families.push_back({name, e.size(), mean(e), *std::max_element(e.begin(), e.end())});
  }
  v.mape_checked = mean(errors["check"]);
  v.rows_checked = errors["check"].size();
  v.mape_fitted = mean(errors["fit"]);
  v.rows_fitted = errors["fit"].size();
  v.rows = std::move(rows);
  return v;
}

namespace {

// Two scenarios scoring one figure would count it twice in every error and in coverage, or
// score it and call it refused at once.
void check_one_scenario(const std::vector<ValidationRow>& scored, const io::Scenario& s,
                        const std::string& file) {
  const int step = s.validation->step.value_or(-1);
  for (const auto& other : scored) {
    if (other.run == s.validation->run && other.metric == s.validation->metric &&
        other.step == step) {
      throw InputError(fmt::format(
          "{}: scores run '{}' {}{} as scenario '{}' already does; one figure, one scenario", file,
          other.run, other.metric, step >= 0 ? fmt::format(" (step {})", step) : "",
          other.scenario));
    }
  }
}

// The published plans of `dir`/refused, each refused for memory as its folder says, and each
// the run it names, as a scored one (until 2026-12-06 an edited copy, or a second scenario of
// a scored figure, was listed as refused unchecked).
std::vector<RefusedRow> refused_rows(const io::Json& runs, const std::string& runs_file,
                                     const fs::path& dir, io::FilesRead* read,
                                     std::vector<ValidationRow> scored) {
  std::vector<RefusedRow> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  io::InputOptions io_options;
  io_options.run_level = false;
  for (const auto& f : scenario_files(dir)) {
    const io::Scenario s = io::load_scenario(f, {}, nullptr, read);
    if (!s.validation) continue;
    if (s.validation->allow_oom) {
      throw InputError(fmt::format(
          "{}: sets validation.allow_oom, which scores a plan over megasim's memory model; "
          "refused/ holds plans never scored: remove the key or move the file out of refused/",
          f.string()));
    }
    RefusedRow row{s.name,
                   s.validation->run,
                   s.validation->metric,
                   system_family(s),
                   published_source(runs, s.validation->run),
                   published_metric(runs, runs_file, *s.validation, f.string()),
                   ""};
    const io::Inputs inputs = io::load_inputs(s, io_options, read);
    check_matches_published(runs, runs_file, inputs, f.string());
    check_one_scenario(scored, s, f.string());
    ValidationRow seen;
    seen.scenario = s.name;
    seen.run = row.run;
    seen.metric = row.metric;
    seen.step = s.validation->step.value_or(-1);
    scored.push_back(seen);
    try {
      const Evaluation e = evaluate(inputs);
      throw InputError(fmt::format(
          "{}: megasim now fits this plan ({} {:.4g}): move it out of refused/ to be scored",
          f.string(), row.metric, predicted_metric(e.step, row.metric, f.string())));
    } catch (const OutOfMemoryError& e) {
      row.reason = e.what();
      const std::string prefix = f.string() + ": ";
      if (row.reason.rfind(prefix, 0) == 0) row.reason.erase(0, prefix.size());
    }
    out.push_back(std::move(row));
  }
  return out;
}

}  // namespace

Validation validate(const fs::path& published_runs, const fs::path& dir, io::FilesRead* read) {
  const io::Json runs = io::parse_json_file(published_runs, read);
  check_published_runs(runs, published_runs.string());
  std::vector<ValidationRow> rows;
  io::InputOptions io_options;
  io_options.run_level = false;
  std::vector<std::string> without_validation;
  for (const auto& f : scenario_files(dir)) {
    const io::Scenario s = io::load_scenario(f, {}, nullptr, read);
    if (!s.validation) {
      without_validation.push_back(f.filename().string());
      continue;
    }
    const io::Inputs inputs = io::load_inputs(s, io_options, read);
    check_matches_published(runs, published_runs.string(), inputs, f.string());
    const Evaluation e = evaluate(inputs);
    ValidationRow row;
    row.scenario = s.name;
    row.run = s.validation->run;
    row.metric = s.validation->metric;
    row.role = s.validation->role;
    row.step = s.validation->step.value_or(-1);
    row.family = system_family(s);
    row.gpus = e.step.gpus;
    row.gpu = gpu_family(inputs.device);
    row.source = published_source(runs, s.validation->run);
    row.published = published_metric(runs, published_runs.string(), *s.validation, f.string());
    row.predicted = predicted_metric(e.step, row.metric, f.string());
    check_measurement_of(runs, *s.validation, row.published, f.string());
    row.measurement_of = s.validation->measurement_of;
    check_within_peak(row, e.step, inputs.device, f.string());
    check_one_scenario(rows, s, f.string());
    rows.push_back(row);
  }
  std::vector<RefusedRow> refused =
      refused_rows(runs, published_runs.string(), dir / "refused", read, rows);
  if (rows.empty() && refused.empty()) {
    throw InputError(dir.string() +
                     ": no validation scenario (a scenario with a validation section) to check");
  }
  Validation v = summarise(std::move(rows));
  v.refused = std::move(refused);
  v.without_validation = std::move(without_validation);
  v.unchecked_keys = unchecked_run_keys(runs);
  // The refit's residuals sit beside the published runs they were scored against.
  // The file's folds were refitted over the validation folder beside the published runs
  // (scenarios/validation of the same checkout); another folder scores some of them.
  // From the runs file's absolute path: `--runs published_runs.json` in its own folder had no
  // folder to look beside (its note named the file without it, and a stale file was taken for
  // a subset, until 2026-12-06).
  std::error_code ec;
  const fs::path beside = fs::absolute(published_runs, ec).lexically_normal().parent_path();
  const bool whole_set = fs::equivalent(dir, beside.parent_path() / "scenarios" / "validation", ec);
  v.bands_held_out =
      held_out_coverage(beside / "leave_one_source_out.json", v.rows, read, whole_set);
  return v;
}

}  // namespace megasim::plan
