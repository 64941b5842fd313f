// `megasim validate`: simulates every scenario under scenarios/validation/ that names a
// published measurement and prints predicted against published, row by row, with the mean
// absolute percentage error (rows whose shared constants were fitted on them reported apart
// from the rows only checked) and, for ablation chains, the difference in MFU points of every
// step and of every step's gain over the step before.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/evaluate.h"
#include "engine/error.h"
#include "io/json_reader.h"
#include "io/scenario.h"

namespace megasim::cli {
namespace {

namespace fs = std::filesystem;

struct ValidateOptions {
  std::string runs = MEGASIM_SOURCE_DIR "/validation/published_runs.json";
  std::string dir = MEGASIM_SOURCE_DIR "/scenarios/validation";
  bool json = false;
};

struct Row {
  std::string scenario, run, metric, role;
  int step = -1;
  double published = 0, predicted = 0;
  double error() const { return (predicted - published) / published; }
};

double predicted_metric(const step::StepPrediction& p, const std::string& metric,
                        const std::string& origin) {
  if (metric.rfind("iteration_time_s", 0) == 0) return p.step_time.to_seconds();
  if (metric.rfind("mfu", 0) == 0) return p.mfu;
  if (metric.rfind("hfu", 0) == 0) return p.hfu;
  if (metric == "tflops_per_gpu_hw") return p.tflops_per_gpu_hw;
  if (metric == "tokens_per_s") return p.tokens_per_s;
  throw InputError(origin + ": validation.metric: '" + metric + "' is not a metric megasim predicts");
}

double published_metric(const io::Json& runs, const io::ValidationSettings& v,
                        const std::string& origin) {
  for (const auto& r : runs["runs"]) {
    if (r.value("id", "") != v.run) continue;
    if (v.step) {
      const auto& steps = r.at("steps");
      if (*v.step >= static_cast<int>(steps.size())) {
        throw InputError(fmt::format("{}: validation.step: run '{}' has {} steps, not {}", origin,
                                     v.run, steps.size(), *v.step + 1));
      }
      return steps[*v.step].at(v.metric).get<double>();
    }
    const auto& m = r.at("measured");
    if (!m.contains(v.metric) || !m[v.metric].is_number()) {
      throw InputError(fmt::format("{}: validation.metric: run '{}' publishes no '{}'", origin,
                                   v.run, v.metric));
    }
    return m[v.metric].get<double>();
  }
  throw InputError(origin + ": validation.run: no run '" + v.run + "' in the published runs");
}

void run_validate(const ValidateOptions& o) {
  const io::Json runs = io::parse_json_file(o.runs);
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(o.dir, ec)) {
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  }
  if (ec) throw InputError(o.dir + ": cannot list the validation scenarios (" + ec.message() + ")");
  std::sort(files.begin(), files.end());
  std::vector<Row> rows;
  EvaluateOptions eo;
  eo.run_level = false;
  for (const auto& f : files) {
    const io::Scenario s = io::load_scenario(f);
    if (!s.validation) continue;
    const Evaluation e = evaluate(s, eo);
    Row row{s.name, s.validation->run, s.validation->metric, s.validation->role,
            s.validation->step.value_or(-1)};
    row.published = published_metric(runs, *s.validation, f.string());
    row.predicted = predicted_metric(e.step, row.metric, f.string());
    rows.push_back(row);
  }

  // Summary over the rows that are not steps of an ablation chain, by role.
  std::map<std::string, std::vector<double>> errors;
  const Row* worst = nullptr;
  double chain_max = 0;
  for (const auto& r : rows) {
    if (r.step >= 0) {
      chain_max = std::max(chain_max, std::fabs(r.predicted - r.published) * 100);
      continue;
    }
    errors[r.role].push_back(std::fabs(r.error()));
    if (!worst || std::fabs(r.error()) > std::fabs(worst->error())) worst = &r;
  }
  // Ablation chains: each step's gain over the previous step, published and predicted.
  struct Gain {
    std::string run;
    int step = 0;
    double published = 0, predicted = 0;
  };
  std::vector<Gain> gains;
  double gain_max = 0;
  {
    // A chain is a run's steps of one metric.
    std::map<std::pair<std::string, std::string>, std::map<int, const Row*>> chains;
    for (const auto& r : rows) {
      if (r.step >= 0) chains[{r.run, r.metric}][r.step] = &r;
    }
    for (const auto& [chain, steps] : chains) {
      const std::string& run = chain.first;
      const Row* before = nullptr;
      for (const auto& [step, r] : steps) {
        if (before != nullptr && before->step == step - 1) {
          const Gain g{run, step, r->published - before->published,
                       r->predicted - before->predicted};
          gain_max = std::max(gain_max, std::fabs(g.predicted - g.published) * 100);
          gains.push_back(g);
        }
        before = r;
      }
    }
  }
  const auto mape = [&](const std::string& role) {
    const auto& v = errors[role];
    double sum = 0;
    for (double e : v) sum += e;
    return v.empty() ? 0.0 : sum / static_cast<double>(v.size());
  };

  if (o.json) {
    nlohmann::json out = {{"rows", nlohmann::json::array()}};
    for (const auto& r : rows) {
      nlohmann::json j = {{"scenario", r.scenario}, {"run", r.run},         {"metric", r.metric},
                          {"role", r.role},         {"published", r.published},
                          {"predicted", r.predicted}, {"error", r.error()}};
      if (r.step >= 0) j["step"] = r.step;
      out["rows"].push_back(j);
    }
    out["mape"] = mape("check");
    out["rows_checked"] = errors["check"].size();
    out["mape_fit_rows"] = mape("fit");
    out["rows_fitted"] = errors["fit"].size();
    if (worst) out["worst"] = {{"scenario", worst->scenario}, {"error", worst->error()}};
    out["chain_max_error_points"] = chain_max;
    out["chain_gains"] = nlohmann::json::array();
    for (const auto& g : gains) {
      out["chain_gains"].push_back({{"run", g.run}, {"step", g.step}, {"published", g.published},
                                    {"predicted", g.predicted}});
    }
    out["chain_max_gain_error_points"] = gain_max;
    const std::string text = out.dump(2) + "\n";
    std::fwrite(text.data(), 1, text.size(), stdout);
    return;
  }
  std::string t = fmt::format("{:<40} {:<32} {:>5} {:>11} {:>11} {:>8}\n", "scenario", "metric",
                              "role", "published", "predicted", "error");
  for (const auto& r : rows) {
    const std::string metric = r.step >= 0 ? fmt::format("{} (step {})", r.metric, r.step) : r.metric;
    const std::string err = r.step >= 0
                                ? fmt::format("{:+.1f} pt", (r.predicted - r.published) * 100)
                                : fmt::format("{:+.1f} %", r.error() * 100);
    t += fmt::format("{:<40} {:<32} {:>5} {:>11.4g} {:>11.4g} {:>8}\n", r.scenario, metric, r.role,
                     r.published, r.predicted, err);
  }
  t += fmt::format("\nmape {:.1f} % over {} checked rows", mape("check") * 100, errors["check"].size());
  if (!errors["fit"].empty()) {
    t += fmt::format("; {:.1f} % over {} rows that constants were fitted on", mape("fit") * 100,
                     errors["fit"].size());
  }
  if (worst) t += fmt::format("; worst {} {:+.1f} %", worst->scenario, worst->error() * 100);
  if (!gains.empty()) {
    t += fmt::format("\n{:<24} {:>5} {:>15} {:>15} {:>11}\n", "ablation chain", "step",
                     "gain published", "gain predicted", "difference");
    for (const auto& g : gains) {
      t += fmt::format("{:<24} {:>5} {:>+12.1f} pt {:>+12.1f} pt {:>+8.1f} pt\n", g.run, g.step,
                       g.published * 100, g.predicted * 100, (g.predicted - g.published) * 100);
    }
  }
  t += fmt::format("\nablation chains: largest difference {:.1f} MFU points; largest difference "
                   "of a step's gain {:.1f} points\n",
                   chain_max, gain_max);
  std::fwrite(t.data(), 1, t.size(), stdout);
}

}  // namespace

void add_validate_command(CLI::App& app) {
  auto opts = std::make_shared<ValidateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "validate", "Predict the published runs (scenarios/validation/) and print the errors");
  cmd->add_option("--runs", opts->runs, "published_runs.json")->capture_default_str();
  cmd->add_option("--scenarios", opts->dir, "Folder of validation scenarios")->capture_default_str();
  cmd->add_flag("--json", opts->json, "Print exactly one JSON object on stdout");
  cmd->callback([opts] { run_validate(*opts); });
}

}  // namespace megasim::cli
