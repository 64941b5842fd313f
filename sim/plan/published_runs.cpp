#include "plan/published_runs.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include <fmt/format.h>

#include "engine/error.h"
#include "io/json_reader.h"
#include "plan/bands.h"

namespace megasim::plan {
namespace {

// The plan and model keys a run may state that validate does not check against the scenario.
constexpr const char* kPlanStated[] = {"recompute", "zero_stage"};
constexpr const char* kModelStated[] = {"activation", "source"};

// The keys of workload::plan_counts and model_counts.
template <typename Count>
std::vector<const char*> keys(const std::vector<Count>& counts) {
  std::vector<const char*> out;
  for (const Count& c : counts) out.push_back(c.key);
  return out;
}
const std::vector<const char*>& plan_checked() {
  static const std::vector<const char*> k = keys(workload::plan_counts({}));
  return k;
}
const std::vector<const char*>& model_checked() {
  static const std::vector<const char*> k = keys(model_counts({}));
  return k;
}

// Every "mfu…" or "hfu…" figure of a run, under measured or in its steps, is at most 1.
void check_fractions(const io::Json& run, const std::string& at) {
  const auto check = [&](const io::Json& figures, const std::string& where) {
    if (!figures.is_object()) return;
    for (const auto& [key, value] : figures.items()) {
      if ((key.rfind("mfu", 0) != 0 && key.rfind("hfu", 0) != 0) || !value.is_number()) continue;
      if (value.get<double>() <= 1.0) continue;
      throw InputError(
          fmt::format("{}{}.{}: {}, but MFU and HFU are fractions of 1 (0.415 "
                      "for 41.5 %)",
                      at, where, key, value.dump()));
    }
  };
  if (!run.is_object()) return;
  if (run.contains("measured")) check(run["measured"], ".measured");
  if (run.contains("steps") && run["steps"].is_array()) {
    for (std::size_t k = 0; k < run["steps"].size(); ++k)
      check(run["steps"][k], fmt::format(".steps[{}]", k));
  }
}

// A count a run states (`at` + `path` + `key`) is a whole number above 0 or null (not
// published): "999" or 999.0 would skip the check against the scenario, -1 or 0 is a typo.
void check_count(const io::Json& section, const std::string& at, const std::string& path,
                 const char* key) {
  if (!section.is_object() || !section.contains(key) || section[key].is_null()) return;
  const io::Json& v = section[key];
  constexpr std::int64_t kMax = std::int64_t{1} << 40;
  if (v.is_number_integer() && v.get<std::int64_t>() >= 1 && v.get<std::int64_t>() <= kMax) return;
  throw InputError(
      fmt::format("{}.{}{}: {} is not a whole number from 1 to 2^40 (null: not "
                  "published)",
                  at, path, key, v.dump()));
}

// A run's counts (its GPUs, and its plan's and model's shape) are whole numbers above 0 or null;
// its "gpu" (the device's name) is text.
void check_run_shape(const io::Json& run, const std::string& at) {
  if (!run.is_object()) return;
  // A plan or model of another type would leave every check of it out without a word.
  if (run.contains("plan") && !run["plan"].is_object() && !run["plan"].is_null()) {
    throw InputError(
        fmt::format("{}.plan: {} is not an object of the plan's counts (null: not "
                    "published)",
                    at, run["plan"].dump()));
  }
  if (run.contains("model") && !run["model"].is_object() && !run["model"].is_string() &&
      !run["model"].is_null()) {
    throw InputError(
        fmt::format("{}.model: {} is neither the model's shape (an object) nor the "
                    "name of one of the file's models",
                    at, run["model"].dump()));
  }
  check_count(run, at, "", "gpus");
  if (run.contains("plan")) {
    for (const char* key : plan_checked()) check_count(run["plan"], at, "plan.", key);
  }
  if (run.contains("model")) {
    for (const char* key : model_checked()) check_count(run["model"], at, "model.", key);
  }
  if (run.contains("gpu") && !run["gpu"].is_string()) {
    throw InputError(
        fmt::format("{}.gpu: {} is not text (the device's name)", at, run["gpu"].dump()));
  }
}

// A key naming a figure megasim scores: iteration times, MFU, HFU, TFLOP/s, tokens a second.
bool is_metric(const std::string& key) {
  for (const char* prefix : {"iteration_time_s", "mfu", "hfu", "tflops_per_gpu", "tokens_per_s"})
    if (key.rfind(prefix, 0) == 0) return true;
  return false;
}

// An entry of "runs" is a run: an object with a non-empty string id, and its figures (the keys
// is_metric names, under measured or in a step) numbers or null (not published); other keys,
// and measured or steps null, are the file's own. Until 2026-12-05 a string, {} or "measured":
// {"mfu": "fast"} passed, and a run a scenario scores without its id was reported as missing
// from the file.
void check_run_entry(const io::Json& run, const std::string& at) {
  if (!run.is_object()) {
    throw InputError(
        fmt::format("{}: expected a run (an object with an id), found {}", at, run.dump()));
  }
  if (!run.contains("id") || !run["id"].is_string() || run["id"].get<std::string>().empty()) {
    throw InputError(fmt::format("{}.id: {} (every run has a non-empty text id)", at,
                                 run.contains("id") ? run["id"].dump() : "missing"));
  }
  const auto figures = [&](const io::Json& section, const std::string& where) {
    if (section.is_null()) return;
    if (!section.is_object()) {
      throw InputError(
          fmt::format("{}{}: expected an object of figures, found {}", at, where, section.dump()));
    }
    for (const auto& [key, value] : section.items()) {
      if (!is_metric(key) || value.is_number() || value.is_null()) continue;
      throw InputError(fmt::format("{}{}.{}: expected a number (null: not published), found {}", at,
                                   where, key, value.dump()));
    }
  };
  if (run.contains("measured")) figures(run["measured"], ".measured");
  if (run.contains("steps") && !run["steps"].is_null()) {
    if (!run["steps"].is_array()) {
      throw InputError(
          fmt::format("{}.steps: expected an array of steps, found {}", at, run["steps"].dump()));
    }
    for (std::size_t k = 0; k < run["steps"].size(); ++k)
      figures(run["steps"][k], fmt::format(".steps[{}]", k));
  }
}

}  // namespace

std::string run_id(const io::Json& r) {
  return r.is_object() && r.contains("id") && r["id"].is_string() ? r["id"].get<std::string>() : "";
}

std::optional<std::size_t> find_run(const io::Json& runs, const std::string& id) {
  if (!runs.is_object() || !runs.contains("runs") || !runs["runs"].is_array()) return std::nullopt;
  const auto& list = runs["runs"];
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (run_id(list[i]) == id) return i;
  }
  return std::nullopt;
}

void check_published_runs(const io::Json& runs, const std::string& file) {
  io::check_input_kind(runs, io::InputKind::kPublishedRuns, file);
  if (!runs.is_object() || !runs.contains("runs") || !runs["runs"].is_array()) {
    throw InputError(file + ": runs: missing, or not an array of runs");
  }
  // An id given twice would score every row against whichever comes first; an MFU or HFU over
  // 1 is a percentage written where a fraction belongs (41.5 for 0.415).
  const auto& list = runs["runs"];
  // The models runs name by string, shaped as a run's own.
  if (runs.contains("models") && runs["models"].is_object()) {
    for (const auto& [name, model] : runs["models"].items()) {
      if (!model.is_object()) {
        throw InputError(fmt::format("{}: models.{}: {} is not a model's shape (an object)", file,
                                     name, model.dump()));
      }
      for (const char* key : model_checked())
        check_count(model, fmt::format("{}: models", file), name + ".", key);
    }
  }
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string at = fmt::format("{}: runs[{}]", file, i);
    check_run_entry(list[i], at);
    check_fractions(list[i], at);
    check_run_shape(list[i], at);
    std::string model_at;
    if (list[i].contains("model") && list[i]["model"].is_string() &&
        run_model(runs, list[i], i, model_at) == nullptr) {
      throw InputError(fmt::format("{}.model: '{}' names no entry of the file's models", at,
                                   list[i]["model"].get<std::string>()));
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (run_id(list[i]) == run_id(list[j])) {
        throw InputError(fmt::format("{}: runs[{}] and runs[{}] both have id '{}'", file, j, i,
                                     run_id(list[i])));
      }
    }
  }
}

std::vector<StatedCount> model_counts(const workload::ModelSpec& m) {
  return {{"layers", m.layers},     {"hidden", m.hidden}, {"heads", m.heads},
          {"kv_heads", m.kv_heads}, {"seq", m.seq},       {"ffn_hidden", m.ffn_hidden},
          {"vocab", m.vocab}};
}

const io::Json* run_model(const io::Json& runs, const io::Json& run, std::size_t index,
                          std::string& at) {
  if (!run.is_object() || !run.contains("model")) return nullptr;
  const io::Json& model = run["model"];
  if (model.is_object()) {
    at = fmt::format("runs[{}].model.", index);
    return &model;
  }
  if (!model.is_string() || !runs.contains("models") || !runs["models"].is_object()) return nullptr;
  const std::string name = model.get<std::string>();
  if (!runs["models"].contains(name) || !runs["models"][name].is_object()) return nullptr;
  at = fmt::format("models.{}.", name);
  return &runs["models"][name];
}

namespace {

// The file's and a run's own keys, read or kept as notes: any other is said with the nearest
// of these (until 2026-12-08 a key added at the top or in a run, "bogus_run", went without a
// word, where a plan's or model's was said).
const std::vector<std::string> kFileKeys = {"$schema", "about",       "models",
                                            "runs",    "reliability", "power"};
const std::vector<std::string> kRunKeys = {"id",    "source", "gpu",      "gpus",
                                           "model", "plan",   "measured", "framework",
                                           "notes", "system", "steps"};

void unknown_keys(const io::Json& object, const std::vector<std::string>& known,
                  const std::string& at, std::vector<std::string>& out) {
  if (!object.is_object()) return;
  for (const auto& [key, v] : object.items()) {
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    const std::string near = io::closest_match(key, known);
    out.push_back(at + key + (near.empty() ? "" : " (did you mean '" + near + "'?)"));
  }
}

}  // namespace

std::vector<std::string> unknown_keys_of_run(const io::Json& run) {
  std::vector<std::string> out;
  unknown_keys(run, kRunKeys, "", out);
  return out;
}

std::vector<std::string> unchecked_run_keys(const io::Json& runs) {
  std::vector<std::string> out;
  unknown_keys(runs, kFileKeys, "", out);
  const auto known = [](const std::string& key, const auto& checked, const auto& stated) {
    for (const char* k : checked)
      if (key == k) return true;
    for (const char* k : stated)
      if (key == k) return true;
    return false;
  };
  std::vector<std::string> models_seen;
  for (std::size_t i = 0; i < runs["runs"].size(); ++i) {
    const io::Json& run = runs["runs"][i];
    unknown_keys(run, kRunKeys, fmt::format("runs[{}].", i), out);
    if (run.contains("plan") && run["plan"].is_object()) {
      for (const auto& [key, v] : run["plan"].items())
        if (!known(key, plan_checked(), kPlanStated))
          out.push_back(fmt::format("runs[{}].plan.{}", i, key));
    }
    std::string at;
    const io::Json* model = run_model(runs, run, i, at);
    if (model == nullptr) continue;
    // A model of the file's "models" is said once, however many runs name it.
    if (std::find(models_seen.begin(), models_seen.end(), at) != models_seen.end()) continue;
    models_seen.push_back(at);
    for (const auto& [key, v] : model->items())
      if (!known(key, model_checked(), kModelStated)) out.push_back(at + key);
  }
  return out;
}

void check_measurement_of(const io::Json& runs, const io::ValidationSettings& v, double published,
                          const std::string& origin) {
  const std::string& other = v.measurement_of;
  if (other.empty()) return;
  const std::string at = origin + ": validation.measurement_of: ";
  if (other == v.run)
    throw InputError(at + "names the row's own run '" + other + "'; leave it out");
  const std::optional<std::size_t> i = find_run(runs, other);
  if (!i) throw InputError(at + "no run '" + other + "' in the published runs");
  // A band leaves out the rows of the row's own publication only: a measurement shared with
  // another would lend a row its own residual (a reviewer's copy of a run, 2026-12-07).
  if (source_of_run(other) != source_of_run(v.run)) {
    throw InputError(
        fmt::format("{}run '{}' is of another publication than run '{}': one "
                    "measurement is one publication's",
                    at, other, v.run));
  }
  const io::Json& r = runs["runs"][*i];
  if (!r.contains("measured") || !r["measured"].is_object() || !r["measured"].contains(v.metric) ||
      !r["measured"][v.metric].is_number()) {
    throw InputError(
        fmt::format("{}run '{}' publishes no number '{}' under measured, so it is "
                    "not this row's measurement",
                    at, other, v.metric));
  }
  const double theirs = r["measured"][v.metric].get<double>();
  if (std::fabs(theirs - published) > 1e-9 * std::fabs(published)) {
    throw InputError(fmt::format("{}run '{}' publishes {} {}, this row {}: not one measurement", at,
                                 other, v.metric, theirs, published));
  }
}

}  // namespace megasim::plan
