#include "plan/held_out.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "engine/error.h"
#include "io/json_reader.h"
#include "plan/validate.h"

namespace megasim::plan {
namespace {

namespace fs = std::filesystem;

// A metric error e = predicted / published − 1, which exists only above −1; InputError otherwise.
double metric_error(const io::Json& j, const std::string& at) {
  if (!j.is_number() || !std::isfinite(j.get<double>()) || j.get<double>() <= -1.0)
    throw InputError(at + ": missing, or not a number above -1");
  return j.get<double>();
}

struct HeldOutFile {
  std::map<std::string, double> today;                         // scenario: today_error
  std::map<std::string, std::map<std::string, double>> folds;  // source: scenario: error
  std::set<std::string> fit_rows;
};

HeldOutFile read_file(const fs::path& file, io::FilesRead* read) {
  const io::Json doc = io::parse_json_file(file, read);
  const std::string f = file.string();
  for (const char* key : {"rows", "fit_rows"}) {
    if (!doc.is_object() || !doc.contains(key) || !doc[key].is_array())
      throw InputError(fmt::format("{}: {}: missing, or not an array", f, key));
  }
  if (!doc.contains("folds") || !doc["folds"].is_object())
    throw InputError(f + ": folds: missing, or not an object");
  HeldOutFile out;
  const auto& rows = doc["rows"];
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const std::string at = fmt::format("{}: rows[{}]", f, i);
    const auto& r = rows[i];
    if (!r.is_object() || !r.contains("scenario") || !r["scenario"].is_string())
      throw InputError(at + ".scenario: missing, or not a string");
    const auto name = r["scenario"].get<std::string>();
    if (out.today.count(name) != 0) throw InputError(at + ".scenario: '" + name + "' given twice");
    out.today[name] = metric_error(r.contains("today_error") ? r["today_error"] : io::Json(),
                                   at + ".today_error");
  }
  for (std::size_t i = 0; i < doc["fit_rows"].size(); ++i) {
    const auto& n = doc["fit_rows"][i];
    if (!n.is_string()) throw InputError(fmt::format("{}: fit_rows[{}]: not a string", f, i));
    out.fit_rows.insert(n.get<std::string>());
  }
  for (const auto& [source, fold] : doc["folds"].items()) {
    if (!fold.is_object()) throw InputError(fmt::format("{}: folds.{}: not an object", f, source));
    for (const auto& [name, error] : fold.items())
      out.folds[source][name] =
          metric_error(error, fmt::format("{}: folds.{}.{}", f, source, name));
  }
  return out;
}

// The scenarios `rows` scores (context rows are shown, never scored), and their sources.
struct Scored {
  std::set<std::string> scenarios, sources;
  explicit Scored(const std::vector<ValidationRow>& rows) {
    for (const auto& r : rows) {
      if (r.role == "context") continue;
      scenarios.insert(r.scenario);
      sources.insert(source_of_run(r.run));
    }
  }
};

// Why `held` is not today's for `rows`, or "" when it is (`whole_set`: as held_out_coverage).
std::string stale(const HeldOutFile& held, const std::vector<ValidationRow>& rows,
                  const Scored& scored_rows, bool whole_set) {
  const std::set<std::string>& scored = scored_rows.scenarios;
  std::set<std::string> fit;
  for (const auto& r : rows) {
    if (r.role == "context") continue;
    if (r.role == "fit") fit.insert(r.scenario);
    const auto it = held.today.find(r.scenario);
    if (it == held.today.end()) return "has no row for " + r.scenario;
    const double today = r.error();
    if (std::fabs(it->second - today) > 1e-9 * std::max(1.0, std::fabs(today)))
      return fmt::format("is not today's ({}: error {:+.12f} there, {:+.12f} today)", r.scenario,
                         it->second, today);
  }
  // Each scored source's fold predicts every scored row.
  for (const auto& source : scored_rows.sources) {
    const auto fold = held.folds.find(source);
    if (fold == held.folds.end()) return "has no fold for source " + source;
    for (const auto& name : scored) {
      if (fold->second.count(name) == 0)
        return fmt::format("has no error for {} in fold {}", name, source);
    }
  }
  for (const auto& [name, error] : held.today) {
    if (whole_set && scored.count(name) == 0)
      return "holds a row for " + name + ", which validate does not score";
  }
  // The whole set's fit rows are today's; a subset's, those of them it scores.
  const char* refitted = "was refitted from other fit rows than today's";
  if (whole_set) return fit == held.fit_rows ? "" : refitted;
  for (const auto& name : held.fit_rows) {
    if (scored.count(name) != 0 && fit.count(name) == 0) return refitted;
  }
  for (const auto& name : fit) {
    if (held.fit_rows.count(name) == 0) return refitted;
  }
  return "";
}

// Rows `held` holds that `rows` does not score: a validation of some of the scenarios (a
// folder of a few), not a stale file. Its bands would rest on other rows than the file's folds.
std::size_t rows_not_scored(const HeldOutFile& held, const Scored& scored) {
  return static_cast<std::size_t>(
      std::count_if(held.today.begin(), held.today.end(),
                    [&](const auto& row) { return scored.scenarios.count(row.first) == 0; }));
}

}  // namespace

HeldOutCoverage held_out_coverage(const fs::path& file, const std::vector<ValidationRow>& rows,
                                  io::FilesRead* read, bool whole_set) {
  HeldOutCoverage h;
  // Named by its folder and name: the output is the same wherever the checkout lies.
  h.file = (file.parent_path().filename() / file.filename()).string();
  std::error_code ec;
  if (!fs::exists(file, ec)) {
    h.note = h.file + " is not there (it is looked for beside the runs file)";
    return h;
  }
  HeldOutFile held;
  try {
    held = read_file(file, read);
  } catch (const InputError& e) {
    std::string why = e.what();
    if (why.rfind(file.string(), 0) == 0) why = h.file + why.substr(file.string().size());
    h.note = why + " (re-run scripts/leave_one_source_out.py)";
    return h;
  }
  const Scored scored(rows);
  if (const std::string why = stale(held, rows, scored, whole_set); !why.empty()) {
    h.note = h.file + " " + why + ": re-run scripts/leave_one_source_out.py";
    return h;
  }
  if (const std::size_t extra = rows_not_scored(held, scored); extra > 0) {
    h.note = fmt::format(
        "{} holds {} row(s) this validation does not score (a subset of the scenarios): held-out "
        "bands are drawn over the whole set of validation/published_runs.json's scenarios only",
        h.file, extra);
    return h;
  }
  // Each scored source's rows against the other rows' residuals under its refit (stale() found
  // every scored row in each of these folds; a fold of a source with no scored row is no
  // prediction of this validation and is passed over).
  std::vector<BandCheck> checks;
  for (const auto& source : scored.sources) {
    const auto& fold = held.folds.at(source);
    std::vector<ResidualRow> residuals;
    for (const auto& r : rows) {
      if (r.role == "context") continue;
      ResidualRow row = r.residual();
      row.residual =
          step_time_residual(r.metric, r.published * (1.0 + fold.at(r.scenario)), r.published);
      residuals.push_back(std::move(row));
    }
    for (const auto& r : residuals) {
      if (r.source != source) continue;
      if (auto k = check_band(residuals, r)) checks.push_back(*k);
    }
  }
  h.bands = coverage_of(checks);
  return h;
}

}  // namespace megasim::plan
