// validate --runs: a run that names its model from the file's "models" (MegaScale's rows) is
// held to that model's shape as a run stating its own is; a name the file does not hold is
// refused; a plan or model key validate does not know is said, since a misspelt one ("vp")
// would leave its check out without a word (a bad-input trial, 2026-12-07).
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "run_command.h"

using megasim::test::run_megasim;
using megasim::test::shell_quote;

namespace {
namespace fs = std::filesystem;

struct Folder {
  fs::path dir;
  nlohmann::json runs, scenario;
  explicit Folder(const std::string& name)
      : dir(fs::temp_directory_path() / (name + std::to_string(::getpid()))) {
    fs::create_directories(dir / "s");
    std::ifstream runs_in(MEGASIM_SOURCE_DIR "/validation/published_runs.json");
    runs = nlohmann::json::parse(runs_in);
    std::ifstream s_in(MEGASIM_SOURCE_DIR
                       "/scenarios/validation/megascale-175b-256-megascale-mfu.json");
    scenario = nlohmann::json::parse(s_in);
    scenario.erase("$schema");
  }
  ~Folder() { fs::remove_all(dir); }
  megasim::test::CommandResult validate() const {
    std::ofstream(dir / "s" / "row.json") << scenario.dump();
    std::ofstream(dir / "runs.json") << runs.dump();
    return run_megasim("validate --scenarios " + shell_quote((dir / "s").string()) + " --runs " +
                       shell_quote((dir / "runs.json").string()));
  }
};

nlohmann::json& run_named(nlohmann::json& runs, const std::string& id) {
  for (auto& r : runs["runs"])
    if (r["id"] == id) return r;
  FAIL("no run " << id);
  return runs;
}

}  // namespace

TEST_CASE("validate: a run's model named from the file's models is checked, its name too") {
  Folder f("megasim_named_model_");
  REQUIRE(run_named(f.runs, "megascale-175b-256-megascale")["model"] == "gpt-175b-megascale");
  const auto as_is = f.validate();
  CHECK(as_is.exit_code == 0);
  // Another model scored MegaScale's 175B row at -21.9 % with exit 0 until 2026-12-07.
  f.scenario["model"] = "korthikanti-22b";
  const auto other = f.validate();
  CHECK(other.exit_code == 2);
  CHECK(other.err.find("the model's layers is 48, but") != std::string::npos);
  CHECK(other.err.find("models.gpt-175b-megascale.layers ('megascale-175b-256-megascale') "
                       "states 96") != std::string::npos);
  f.scenario["model"] = "gpt-175b-megascale";
  run_named(f.runs, "megascale-175b-256-megascale")["model"] = "gpt-176b-megascale";
  const auto unknown = f.validate();
  CHECK(unknown.exit_code == 2);
  CHECK(unknown.err.find(".model: 'gpt-176b-megascale' names no entry of the file's models") !=
        std::string::npos);
  // A model or plan of another type, and a named model that is no object, are refused too
  // (each left its checks out without a word until 2026-12-07, the review of the day's diff).
  run_named(f.runs, "megascale-175b-256-megascale")["model"] = 175;
  const auto number = f.validate();
  CHECK(number.exit_code == 2);
  CHECK(number.err.find(".model: 175 is neither the model's shape") != std::string::npos);
  run_named(f.runs, "megascale-175b-256-megascale")["model"] = "gpt-175b-megascale";
  const auto plan = run_named(f.runs, "megascale-175b-256-megascale")["plan"];
  run_named(f.runs, "megascale-175b-256-megascale")["plan"] = 5;
  const auto five = f.validate();
  CHECK(five.exit_code == 2);
  CHECK(five.err.find(".plan: 5 is not an object") != std::string::npos);
  run_named(f.runs, "megascale-175b-256-megascale")["plan"] = plan;
  const auto shape = f.runs["models"]["gpt-175b-megascale"];
  f.runs["models"]["gpt-175b-megascale"] = "x";
  const auto text = f.validate();
  CHECK(text.exit_code == 2);
  CHECK(text.err.find("models.gpt-175b-megascale: \"x\" is not a model's shape") !=
        std::string::npos);
  f.runs["models"]["gpt-175b-megascale"] = shape;
  f.runs["models"]["gpt-175b-megascale"]["heads"] = 0;
  const auto zero = f.validate();
  CHECK(zero.exit_code == 2);
  CHECK(zero.err.find("models.gpt-175b-megascale.heads: 0 is not a whole number") !=
        std::string::npos);
}

TEST_CASE("validate: a plan or model key it does not know is said, once for a named model") {
  Folder f("megasim_unknown_keys_");
  auto& run = run_named(f.runs, "megascale-175b-256-megascale");
  run["plan"]["vp"] = run["plan"]["vpp"];
  run["plan"].erase("vpp");
  f.runs["models"]["gpt-175b-megascale"]["layer"] = 96;
  const auto r = f.validate();
  CHECK(r.exit_code == 0);
  const std::string said = "megasim: warning: " + (f.dir / "runs.json").string() + ": ";
  INFO(r.err);
  CHECK(r.err.find(said) != std::string::npos);
  // In file order: the named model with the first run naming it (runs[14]), once.
  CHECK(r.err.find("models.gpt-175b-megascale.layer, runs[15].plan.vp: keys validate neither "
                   "checks nor knows") != std::string::npos);
  // The shipped file has none.
  const auto shipped = run_megasim("validate");
  CHECK(shipped.err.find("keys validate neither checks") == std::string::npos);
}

TEST_CASE("validate: a key of the file or of a run it does not know is said, with the nearest") {
  // Taken without a word until 2026-12-08, where a plan's or model's key was said (a key at the
  // file's top or in a run, a user's "bogus_run" of 2026-12-07).
  Folder f("megasim_unknown_run_keys_");
  f.runs["bogus"] = 1;
  auto& run = run_named(f.runs, "megascale-175b-256-megascale");
  run["mesured"] = run["measured"];
  const auto r = f.validate();
  CHECK(r.exit_code == 0);
  INFO(r.err);
  CHECK(r.err.find("bogus, runs[15].mesured (did you mean 'measured'?): keys validate neither "
                   "checks nor knows") != std::string::npos);
  // The run the folder's row scores with only the misspelt key: its refusal names it (it
  // said only that the run publishes no such figure, a review's find of 2026-12-08).
  run.erase("measured");
  const auto refused = f.validate();
  CHECK(refused.exit_code == 2);
  CHECK(refused.err.find("publishes no number 'mfu' under measured (keys of the run megasim does "
                         "not know: mesured (did you mean 'measured'?))") != std::string::npos);
}
