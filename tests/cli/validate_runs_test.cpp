// validate --runs: a runs file whose published figures no run of its scenario could give.
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

std::string fmt_at(std::size_t i) {
  return ": runs[" + std::to_string(i) + "]";
}

// A fresh folder `dir`/s holding Korthikanti's 22B full-recompute scenario, and the shipped
// published runs, for a test to edit and validate against.
nlohmann::json scenario_and_runs(const fs::path& dir) {
  fs::create_directories(dir / "s");
  fs::copy_file(MEGASIM_SOURCE_DIR "/scenarios/validation/korthikanti-22b-full.json",
                dir / "s" / "korthikanti-22b-full.json", fs::copy_options::overwrite_existing);
  std::ifstream src(MEGASIM_SOURCE_DIR "/validation/published_runs.json");
  return nlohmann::json::parse(src);
}
}  // namespace

TEST_CASE("validate: a published figure past the GPUs' peak, or another vocabulary, is refused") {
  // A user's trial (2026-12-05) scored 10^6 TFLOP/s a GPU at -100 % and a 1 ns step at
  // +1.4e10 %, and a run of a 5-token vocabulary against the scenario's 51,200.
  const fs::path dir = fs::temp_directory_path() / ("megasim_peak_" + std::to_string(::getpid()));
  const nlohmann::json runs = scenario_and_runs(dir);
  const auto validate = [&](const char* name, void (*edit)(nlohmann::json&)) {
    nlohmann::json copy = runs;
    for (auto& r : copy["runs"])
      if (r["id"] == "korthikanti-22b") edit(r);
    std::ofstream(dir / name) << copy.dump();
    return run_megasim("validate --scenarios " + shell_quote((dir / "s").string()) + " --runs " +
                       shell_quote((dir / name).string()));
  };
  const auto fast = validate("fast.json", [](nlohmann::json& r) {
    r["measured"]["iteration_time_s_full_recompute"] = 1e-9;
  });
  CHECK(fast.exit_code == 2);
  CHECK(fast.err.find("published 'iteration_time_s_full_recompute' is 1e-09, which puts the run "
                      "at") != std::string::npos);
  CHECK(fast.err.find("a published figure must be within the device's peak") != std::string::npos);
  const auto vocab = validate("vocab.json", [](nlohmann::json& r) { r["model"]["vocab"] = 5; });
  CHECK(vocab.exit_code == 2);
  CHECK(vocab.err.find("the model's vocab is 51200") != std::string::npos);
  CHECK(vocab.err.find("model.vocab ('korthikanti-22b') states 5") != std::string::npos);
  // The published figures as they are pass.
  CHECK(validate("same.json", [](nlohmann::json&) {}).exit_code == 0);
  fs::remove_all(dir);
}

TEST_CASE("validate: every entry of runs is a run with an id and numeric figures") {
  // A helper's bad-input sweep (2026-12-05): a string, {} or "measured": {"mfu": "fast"}
  // appended to runs passed with exit 0, and a scored run without its id was reported missing
  // from the file, not named.
  const fs::path dir = fs::temp_directory_path() / ("megasim_entry_" + std::to_string(::getpid()));
  const nlohmann::json runs = scenario_and_runs(dir);
  const std::size_t last = runs["runs"].size();
  struct Case {
    const char* name;
    nlohmann::json entry;  // appended, or null: runs[0]'s id taken away
    std::string says;
  };
  const Case cases[] = {
      {"text.json", "garbage",
       fmt_at(last) + ": expected a run (an object with an id), found \"garbage\""},
      {"empty.json", nlohmann::json::object(), fmt_at(last) + ".id: missing"},
      {"figure.json",
       {{"id", "x"}, {"measured", {{"mfu", "fast"}}}},
       fmt_at(last) + ".measured.mfu: expected a number (null: not published), found \"fast\""},
      {"steps.json",
       {{"id", "x"}, {"steps", {1, 2}}},
       fmt_at(last) + ".steps[0]: expected an object"},
      {"no_id.json", nullptr, fmt_at(0) + ".id: missing"}};
  for (const auto& c : cases) {
    CAPTURE(c.name);
    nlohmann::json copy = runs;
    if (c.entry.is_null()) {
      copy["runs"][0].erase("id");
    } else {
      copy["runs"].push_back(c.entry);
    }
    std::ofstream(dir / c.name) << copy.dump();
    const auto r = run_megasim("validate --scenarios " + shell_quote((dir / "s").string()) +
                               " --runs " + shell_quote((dir / c.name).string()));
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(c.says) != std::string::npos);
  }
  // The file's own keys pass: measured or steps null (not published), text beside the figures
  // (a review of the day's diff found them refused by the first version of the check).
  nlohmann::json own = runs;
  own["runs"].push_back({{"id", "y"}, {"measured", nullptr}, {"steps", nullptr}});
  own["runs"].push_back({{"id", "z"},
                         {"measured", {{"mfu", 0.4}, {"source", "Table 2"}}},
                         {"steps", {{{"add", "baseline"}, {"note", "text"}, {"mfu", 0.4}}}}});
  std::ofstream(dir / "own.json") << own.dump();
  CHECK(run_megasim("validate --scenarios " + shell_quote((dir / "s").string()) + " --runs " +
                    shell_quote((dir / "own.json").string()))
            .exit_code == 0);
  fs::remove_all(dir);
}

TEST_CASE("validate --json: a chain row's points beside its relative error, no band no width") {
  // A helper's hand check (2026-12-05): the text scores an ablation chain's row in MFU points
  // (+4.1 pt) and the JSON's `error` is relative (+8.6 %) with nothing saying which; a folder
  // whose rows draw no band printed median widths of 0.
  const fs::path dir = fs::temp_directory_path() / ("megasim_chain_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  for (const char* f : {"megascale-ablation-0.json", "megascale-ablation-1.json"})
    fs::copy_file(fs::path(MEGASIM_SOURCE_DIR "/scenarios/validation") / f, dir / f,
                  fs::copy_options::overwrite_existing);
  const auto r = run_megasim("validate --json --scenarios " + shell_quote(dir.string()));
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  for (const auto& row : j["rows"]) {
    CAPTURE(row.dump());
    const double published = row["published"], predicted = row["predicted"];
    CHECK(row["error_points"].get<double>() == doctest::Approx((predicted - published) * 100));
    CHECK(row["error"].get<double>() == doctest::Approx(predicted / published - 1));
  }
  CHECK(j["band_coverage"]["rows"] == 0);
  CHECK(j["band_coverage"]["median_width"].is_null());
  CHECK(j["band_coverage"]["median_step_width"].is_null());
  fs::remove_all(dir);
}

TEST_CASE("validate: a scenario of the folder without a validation section is said, not scored") {
  // A new user's trial (2026-12-06): such a file was skipped without a word.
  const fs::path dir = fs::temp_directory_path() / ("megasim_plain_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::copy_file(fs::path(MEGASIM_SOURCE_DIR "/scenarios/validation/korthikanti-22b-selective.json"),
                dir / "korthikanti-22b-selective.json", fs::copy_options::overwrite_existing);
  fs::copy_file(fs::path(MEGASIM_SOURCE_DIR "/scenarios/megascale-175b-12288.json"),
                dir / "mine.json", fs::copy_options::overwrite_existing);
  const auto r = run_megasim("validate --scenarios " + shell_quote(dir.string()));
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("megasim: note: " + dir.string() +
                   ": mine.json has no validation section and scores nothing") !=
        std::string::npos);
  CHECK(r.out.find("korthikanti-22b-selective") != std::string::npos);
  fs::remove_all(dir);
}
