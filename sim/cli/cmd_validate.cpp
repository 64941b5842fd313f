// `megasim validate`: simulates every scenario under scenarios/validation/ that names a
// published measurement and prints predicted against published (plan/validate.h).
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/commands.h"
#include "engine/error.h"
#include "io/output.h"
#include "io/resolve.h"
#include "plan/validate.h"
#include "reports/html_report.h"
#include "reports/validate_report.h"

namespace megasim::cli {
namespace {

// The defaults are the data folder's, found when validate runs: read while the app was built,
// a bad $MEGASIM_DATA_DIR refused `megasim --help` and every other command (a review,
// 2026-12-07).
struct ValidateOptions {
  std::string runs;                 // "": the data folder's validation/published_runs.json
  std::string dir;                  // "": the data folder's scenarios/validation
  std::optional<std::string> html;  // set when given, even empty
  bool json = false;
};

void run_validate(ValidateOptions o) {
  if (o.runs.empty()) o.runs = (io::data_root() / "validation/published_runs.json").string();
  if (o.dir.empty()) o.dir = (io::data_root() / "scenarios/validation").string();
  // The target is checked before the work, so a bad one costs nothing.
  // --runs is checked before the work; commit() checks again against every file read.
  io::FilesRead read;
  // A missing file named by the option (it said only "no such file" until 2026-12-05).
  for (const auto& [option, path] : {std::pair{"--runs", o.runs}, {"--scenarios", o.dir}}) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec))
      throw InputError(fmt::format("{} {}: {}", option, path,
                                   ec ? "cannot be read (" + ec.message() + ")" : "no such file"));
  }
  io::OutputFiles files({o.runs}, &read);
  if (o.html) files.add("--html", *o.html);
  if (o.json) files.refuse_beside_stdout("--json");
  const plan::Validation v = plan::validate(o.runs, o.dir, &read);
  if (!v.without_validation.empty()) {
    std::fprintf(stderr, "megasim: note: %s: %s ha%s no validation section and score%s nothing\n",
                 o.dir.c_str(), fmt::format("{}", fmt::join(v.without_validation, ", ")).c_str(),
                 v.without_validation.size() == 1 ? "s" : "ve",
                 v.without_validation.size() == 1 ? "s" : "");
  }
  if (!v.unchecked_keys.empty()) {
    std::fprintf(stderr,
                 "megasim: warning: %s: %s: keys validate neither checks nor knows (a "
                 "misspelt one leaves its check out)\n",
                 o.runs.c_str(), fmt::format("{}", fmt::join(v.unchecked_keys, ", ")).c_str());
  }
  if (o.html) files.set("--html", reports::validate_html(v));
  // --html - takes standard output in place of the report.
  files.commit(o.json ? reports::validate_json(v) : reports::validate_text(v));
}

}  // namespace

void add_validate_command(CLI::App& app) {
  auto opts = std::make_shared<ValidateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "validate", "Predict the published runs (scenarios/validation/) and print the errors");
  cmd->add_option(
      "--runs", opts->runs,
      "published_runs.json (default: the data folder's validation/published_runs.json)");
  cmd->add_option("--scenarios", opts->dir,
                  "Folder of validation scenarios (default: the data folder's "
                  "scenarios/validation)");
  cmd->add_flag("--json", opts->json, "Print exactly one JSON object on stdout");
  cmd->add_option("--html", opts->html, "Also write an offline HTML report of the rows");
  cmd->callback([opts] { run_validate(*opts); });
}

}  // namespace megasim::cli
