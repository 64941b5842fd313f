#include "plan/held_out.h"

#include <cmath>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "engine/error.h"
#include "io/json_reader.h"
#include "plan/validate.h"

namespace megasim::plan {
namespace {

struct HeldOutError {
  double error = 0;        // the row's metric error with its source's refitted constants
  double today_error = 0;  // the same with today's constants, when the file was written
};

// The file's rows by scenario; InputError naming the JSON path of what is not a row.
std::map<std::string, HeldOutError> read_rows(const std::filesystem::path& file,
                                              io::FilesRead* read) {
  const io::Json doc = io::parse_json_file(file, read);
  if (!doc.is_object() || !doc.contains("rows") || !doc["rows"].is_array()) {
    throw InputError(
        file.string() +
        ": rows: missing, or not an array (scripts/leave_one_source_out.py writes it)");
  }
  std::map<std::string, HeldOutError> out;
  const auto& rows = doc["rows"];
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    const std::string at = fmt::format("{}: rows[{}]", file.string(), i);
    if (!r.is_object() || !r.contains("scenario") || !r["scenario"].is_string())
      throw InputError(at + ".scenario: missing, or not a string");
    for (const char* key : {"error", "today_error"}) {
      // A metric error e = predicted / published − 1 exists only above −1.
      if (!r.contains(key) || !r[key].is_number() || !std::isfinite(r[key].get<double>()) ||
          r[key].get<double>() <= -1.0)
        throw InputError(fmt::format("{}.{}: missing, or not a number above -1", at, key));
    }
    const auto name = r["scenario"].get<std::string>();
    if (out.count(name) != 0) throw InputError(at + ".scenario: '" + name + "' given twice");
    out[name] = {r["error"].get<double>(), r["today_error"].get<double>()};
  }
  return out;
}

}  // namespace

HeldOutCoverage held_out_coverage(const std::filesystem::path& file,
                                  const std::vector<ValidationRow>& rows, io::FilesRead* read) {
  HeldOutCoverage h;
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) {
    h.note = file.string() + " is not there";
    return h;
  }
  const std::map<std::string, HeldOutError> held = read_rows(file, read);
  std::vector<ResidualRow> residuals;
  for (const auto& r : rows) {
    if (r.role == "context") continue;
    const auto it = held.find(r.scenario);
    if (it == held.end()) {
      h.note = fmt::format("{} has no row for {}: re-run scripts/leave_one_source_out.py",
                           file.string(), r.scenario);
      return h;
    }
    const double today = r.error();
    if (std::fabs(it->second.today_error - today) > 1e-9 * std::max(1.0, std::fabs(today))) {
      h.note = fmt::format(
          "{} is not today's ({}: error {:+.4f} there, {:+.4f} today): re-run "
          "scripts/leave_one_source_out.py",
          file.string(), r.scenario, it->second.today_error, today);
      return h;
    }
    ResidualRow row = r.residual();
    const double predicted = r.published * (1.0 + it->second.error);
    row.residual = step_time_residual(r.metric, predicted, r.published);
    residuals.push_back(std::move(row));
  }
  h.bands = band_coverage(residuals);
  return h;
}

}  // namespace megasim::plan
