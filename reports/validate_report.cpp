#include "reports/validate_report.h"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "reports/json_text.h"
#include "reports/number_text.h"

namespace megasim::reports {

std::string validate_json(const plan::Validation& v) {
  nlohmann::json out = {{"rows", nlohmann::json::array()}};
  for (const auto& r : v.rows) {
    nlohmann::json j = {{"scenario", r.scenario},   {"run", r.run},
                        {"metric", r.metric},       {"role", r.role},
                        {"published", r.published}, {"predicted", r.predicted},
                        {"error", r.error()},       {"publication", r.source}};
    // An ablation chain's row is scored in points, as the text prints it; `error` stays the
    // relative error every row has (until 2026-12-05 nothing in the JSON said which).
    if (r.step >= 0) {
      j["step"] = r.step;
      j["error_points"] = (r.predicted - r.published) * 100;
    }
    const plan::ResidualRow residual = r.residual();
    j["family"] = residual.family;
    j["gpus"] = residual.gpus;
    j["gpu"] = residual.gpu;        // its GPU family, for a band's caveat (bands.h)
    j["source"] = residual.source;  // the run id's first word: what leave-one-source-out leaves out
    j["step_time_residual"] = residual.residual;
    j["measurement"] = residual.measurement;  // rows of one count once in coverage
    out["rows"].push_back(j);
  }
  // A statistic of no rows is null, not 0.
  out["mape"] = v.rows_checked > 0 ? nlohmann::json(v.mape_checked) : nlohmann::json();
  out["rows_checked"] = v.rows_checked;
  out["mape_fit_rows"] = v.rows_fitted > 0 ? nlohmann::json(v.mape_fitted) : nlohmann::json();
  out["rows_fitted"] = v.rows_fitted;
  if (v.worst) out["worst"] = {{"scenario", v.worst->scenario}, {"error", v.worst->error()}};
  const bool chain_rows = std::any_of(v.rows.begin(), v.rows.end(), [](const auto& r) {
    return r.step >= 0 && r.role != "context";
  });
  out["chain_max_error_points"] =
      chain_rows ? nlohmann::json(v.chain_max_points) : nlohmann::json();
  out["chain_gains"] = nlohmann::json::array();
  for (const auto& g : v.gains) {
    out["chain_gains"].push_back({{"run", g.run}, {"step", g.step}, {"published", g.published},
                                  {"predicted", g.predicted}});
  }
  out["chain_max_gain_error_points"] =
      v.gains.empty() ? nlohmann::json() : nlohmann::json(v.gain_max_points);
  // A median of no bands is null (it was 0, a band of no width), as the other statistics.
  const auto coverage = [](const plan::Coverage& b) {
    const auto median = [&b](double m) {
      return b.rows > 0 ? nlohmann::json(m) : nlohmann::json();
    };
    return nlohmann::json{{"rows", b.rows},
                          {"covered", b.covered},
                          {"measurements", b.measurements},
                          {"measurements_covered", b.measurements_covered},
                          {"median_width", median(b.median_width)},
                          {"median_step_width", median(b.median_step_width)}};
  };
  out["band_coverage"] = coverage(v.bands);
  // Each row and its band's rows with the shared constants refitted without their source.
  if (const auto& held = v.bands_held_out.bands) {
    out["band_coverage_held_out"] = coverage(*held);
  } else {
    out["band_coverage_held_out"] = {{"unavailable", v.bands_held_out.note}};
  }
  out["families"] = nlohmann::json::array();
  for (const auto& f : v.families) {
    out["families"].push_back({{"family", f.name}, {"rows", f.rows}, {"mape", f.mape},
                               {"worst", f.worst}});
  }
  out["refused"] = nlohmann::json::array();
  for (const auto& r : v.refused) {
    out["refused"].push_back({{"scenario", r.scenario},
                              {"run", r.run},
                              {"metric", r.metric},
                              {"family", r.family},
                              {"source", plan::source_of_run(r.run)},
                              {"publication", r.source},
                              {"published", r.published},
                              {"reason", r.reason}});
  }
  return json_text(out);
}

namespace {

// "33.7 of 42 measurements, each counted once": a run's rows (its iteration time and its MFU)
// share one, and one whose rows lie inside and outside counts as the share inside.
std::string once_a_measurement(const plan::Coverage& c) {
  return fmt::format("{:.1f} of {} measurements, each counted once", c.measurements_covered,
                     c.measurements);
}

std::string rows_text(const plan::Validation& v) {
  std::string t = fmt::format("{:<40} {:<32} {:>5} {:>11} {:>11} {:>8}\n", "scenario", "metric",
                              "role", "published", "predicted", "error");
  for (const auto& r : v.rows) {
    const std::string metric = r.step >= 0 ? fmt::format("{} (step {})", r.metric, r.step) : r.metric;
    const std::string err = r.step >= 0 ? signed1((r.predicted - r.published) * 100) + " pt"
                                        : signed1(r.error() * 100) + " %";
    t += fmt::format("{:<40} {:<32} {:>5} {:>11.4g} {:>11.4g} {:>8}\n", r.scenario, metric, r.role,
                     r.published, r.predicted, err);
  }
  return t;
}

// The chains' line. A statistic of no rows is said to be none, not printed as a 0 (a trial's
// one-row folder printed a largest chain difference of 0.0 points and bands of 0 of 0 rows).
std::string chains_text(const plan::Validation& v, std::size_t chain_rows) {
  if (chain_rows == 0 && v.gains.empty()) return "\nablation chains: none among these rows\n";
  if (v.gains.empty()) {
    return fmt::format(
        "\nablation chains: largest difference {:.1f} MFU points (no two consecutive steps among "
        "these rows, so no step's gain)\n",
        v.chain_max_points);
  }
  return fmt::format(
      "\nablation chains: largest difference {:.1f} MFU points; largest "
      "difference of a step's gain {:.1f} points\n",
      v.chain_max_points, v.gain_max_points);
}

}  // namespace

std::string validate_text(const plan::Validation& v) {
  std::string t = rows_text(v);
  t += v.rows_checked == 0
           ? std::string("\nmape: none (no checked row)")
           : fmt::format("\nmape {:.1f} % over {} checked row{}", v.mape_checked * 100,
                         v.rows_checked, v.rows_checked == 1 ? "" : "s");
  std::size_t chain_rows = 0;
  for (const auto& r : v.rows) chain_rows += r.step >= 0 && r.role != "context" ? 1 : 0;
  if (chain_rows > 0) {
    t += fmt::format(" (the {} ablation-chain row{}, in MFU points, {} scored apart, below)",
                     chain_rows, chain_rows == 1 ? "" : "s", chain_rows == 1 ? "is" : "are");
  }
  if (v.rows_fitted > 0) {
    t += fmt::format("; {:.1f} % over {} row{} that constants were fitted on", v.mape_fitted * 100,
                     v.rows_fitted, v.rows_fitted == 1 ? "" : "s");
  }
  if (v.worst)
    t += fmt::format("; worst {} {} %", v.worst->scenario, signed1(v.worst->error() * 100));
  t += v.families.empty() ? "\nby system (fit and check rows): none"
                          : "\nby system (fit and check rows):";
  for (std::size_t i = 0; i < v.families.size(); ++i) {
    const auto& f = v.families[i];
    t += fmt::format("{} {} {:.1f} % over {} row{} (worst {:.1f} %)", i == 0 ? "" : ";", f.name,
                     f.mape * 100, f.rows, f.rows == 1 ? "" : "s", f.worst * 100);
  }
  std::string context;
  for (const auto& r : v.rows) {
    if (r.role != "context") continue;
    if (!context.empty()) context += ", ";
    context += r.scenario;
  }
  if (!context.empty()) {
    t += "\ncontext rows (a published figure of unstated convention, shown, never scored): ";
    t += context;
  }
  for (const auto& r : v.refused) {
    t += fmt::format("\nrefused, never scored (megasim's memory model does not fit the published "
                     "plan): {} ({} published {:.4g}): {}",
                     r.scenario, r.metric, r.published, r.reason);
  }
  if (!v.gains.empty()) {
    t += fmt::format("\n{:<24} {:>5} {:>15} {:>15} {:>11}\n", "ablation chain", "step",
                     "gain published", "gain predicted", "difference");
    for (const auto& g : v.gains) {
      // signed1: a difference that rounds to nothing reads +0.0, never -0.0 (until 2026-12-06).
      t += fmt::format("{:<24} {:>5} {:>12} pt {:>12} pt {:>8} pt\n", g.run, g.step,
                       signed1(g.published * 100), signed1(g.predicted * 100),
                       signed1((g.predicted - g.published) * 100));
    }
  }
  t += chains_text(v, chain_rows);
  if (v.bands.rows == 0) {
    t += "error bands: none drawn (no row has a basis among the other sources' rows)\n";
  } else {
    t += fmt::format(
        "error bands (each row's from the other sources' rows): {} of {} rows inside "
        "theirs ({}), median width {:.1f} % of the MFU, {:.1f} % of the step time\n",
        v.bands.covered, v.bands.rows, once_a_measurement(v.bands), v.bands.median_width * 100,
        v.bands.median_step_width * 100);
  }
  if (const auto& held = v.bands_held_out.bands; held && held->rows == 0) {
    t += "error bands held out: none drawn (no row has a basis)\n";
  } else if (held) {
    t += fmt::format(
        "error bands held out (each source's rows and their bands under the constants refitted "
        "without it, {}): {} of {} rows inside theirs ({}), median width {:.1f} % of the MFU, "
        "{:.1f} % of the step time\n",
        v.bands_held_out.file, held->covered, held->rows, once_a_measurement(*held),
        held->median_width * 100, held->median_step_width * 100);
  } else {
    t += "error bands held out: not drawn, " + v.bands_held_out.note + "\n";
  }
  return t;
}

}  // namespace megasim::reports
