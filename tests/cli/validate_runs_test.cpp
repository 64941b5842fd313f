// validate --runs: a runs file whose published figures no run of its scenario could give, and
// the scenarios scored or refused against it: each the run it names (plan, GPUs, GPU, model),
// one figure one scenario, refused/ holding only plans megasim cannot fit.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "recipe_scenario.h"
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

TEST_CASE("validate: a published plan megasim cannot fit is listed as refused, never scored") {
  // A folder whose refused/ holds Llama 3 405B at 8K with micro-batches of 2 and without the
  // row's validation.allow_oom (stage 15 needs 148.5 GiB of 79.2): validate lists it with the
  // refusal, outside every MAPE.
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("megasim_oom_" + std::to_string(::getpid()));
  fs::create_directories(dir / "refused");
  std::ifstream src(MEGASIM_SOURCE_DIR "/scenarios/validation/llama3-405b-8k-8192.json");
  auto doc = nlohmann::json::parse(src);
  doc.erase("$schema");
  doc["plan"]["micro_batch"] = 2;
  doc["validation"].erase("allow_oom");
  std::ofstream(dir / "refused" / "llama3-mb2.json") << doc.dump();
  const std::string args = " --scenarios " + shell_quote(dir.string()) + " --runs " +
                           shell_quote(MEGASIM_SOURCE_DIR "/validation/published_runs.json");
  const auto r = run_megasim("validate --json" + args);
  const auto text = run_megasim("validate" + args);
  fs::remove_all(dir);
  REQUIRE(r.exit_code == 0);
  const auto out = nlohmann::json::parse(r.out);
  REQUIRE(out["refused"].size() == 1);
  const auto& row = out["refused"][0];
  CHECK(row["scenario"] == "llama3-405b-8k-8192");
  CHECK(row["published"].get<double>() == doctest::Approx(0.43));
  CHECK(row["reason"].get<std::string>().find("pipeline stage 15 needs 148.5 GiB") == 0);
  CHECK(out["rows"].empty());
  CHECK(text.out.find("refused, never scored") != std::string::npos);
}

TEST_CASE("validate: a scenario that is not its published run is refused, not scored") {
  // Korthikanti's 22B with its batch cut to 1, or on 64 GPUs: another run than the one named.
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("megasim_edit_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ifstream src(MEGASIM_SOURCE_DIR "/scenarios/validation/korthikanti-22b-selective.json");
  const auto doc = nlohmann::json::parse(src);
  const std::pair<const char*, const char*> edits[] = {
      {"global_batch",
       "plan.micro_batch is 1, but " MEGASIM_SOURCE_DIR
       "/validation/published_runs.json: runs[0].plan.micro_batch ('korthikanti-22b') states 4"},
      {"dp", "the plan's GPU count is 64, but " MEGASIM_SOURCE_DIR
             "/validation/published_runs.json: runs[0].gpus ('korthikanti-22b') states 8"},
      // On an H100 profile it scored the A100 row at -54.9 % until 2026-12-06.
      {"device", "the device is 'h100-sxm5-80gb', but " MEGASIM_SOURCE_DIR
                 "/validation/published_runs.json: runs[0].gpu ('korthikanti-22b') states "
                 "'A100-SXM4-80GB'"}};
  for (const auto& [key, fragment] : edits) {
    const std::string edit = key;  // a copy: clang before 16 cannot capture a binding
    CAPTURE(edit);
    auto edited = doc;
    edited.erase("$schema");
    if (std::string(key) == "global_batch") {
      edited["plan"]["micro_batch"] = 1;
      edited["plan"]["global_batch"] = 1;
    } else if (std::string(key) == "dp") {
      edited["plan"]["dp"] = 8;
      edited["plan"]["global_batch"] = 32;
    } else {
      edited["device"] = "h100-sxm5-80gb";
    }
    std::ofstream(dir / "edited.json") << edited.dump();
    const auto r = run_megasim("validate --scenarios " + shell_quote(dir.string()) + " --runs " +
                               shell_quote(MEGASIM_SOURCE_DIR "/validation/published_runs.json"));
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(fragment) != std::string::npos);
  }
  // A profile of the run's GPU under a name of its own is that GPU: its family is in the name
  // (the first version of the check wanted the name to start with the run's part).
  auto profile = nlohmann::json::parse(
      megasim::test::read_all(MEGASIM_SOURCE_DIR "/calibrate/profiles/a100-sxm4-80gb.json"));
  profile["name"] = "dgx-a100-measured";
  const fs::path profile_file = dir.string() + "-profile.json";  // beside, not a scenario
  std::ofstream(profile_file) << profile.dump();
  auto renamed = doc;
  renamed.erase("$schema");
  renamed["device"] = profile_file.string();
  std::ofstream(dir / "edited.json") << renamed.dump();
  const auto ok = run_megasim("validate --scenarios " + shell_quote(dir.string()) + " --runs " +
                              shell_quote(MEGASIM_SOURCE_DIR "/validation/published_runs.json"));
  CHECK(ok.exit_code == 0);
  fs::remove(profile_file);
  fs::remove_all(dir);
}

TEST_CASE("validate: a plan in refused/ that megasim fits is an error, not a silent row") {
  // A folder of validation scenarios whose refused/ holds a plan that fits (Korthikanti's 22B)
  // or fits tightly (NVIDIA's Llama 3.1 405B BF16 recipe, given Llama 3's row to score):
  // validate stops with exit 2 and names the file, so refused/ cannot hide a scored row.
  namespace fs = std::filesystem;
  for (const std::string scenario : {"korthikanti-22b-full.json", "llama31-405b-recipe.json"}) {
    CAPTURE(scenario);
    const fs::path dir =
        fs::temp_directory_path() / ("megasim_refused_" + std::to_string(::getpid()));
    fs::create_directories(dir / "refused");
    nlohmann::json doc;
    std::ifstream runs_in(MEGASIM_SOURCE_DIR "/validation/published_runs.json");
    auto runs = nlohmann::json::parse(runs_in);
    if (scenario == "llama31-405b-recipe.json") {
      // Scored against a run of its own plan: a refused/ scenario is checked to be the run it
      // names, as a scored one (Llama 3's row, which it was given until 2026-12-06, is not).
      doc = nlohmann::json::parse(megasim::test::kTightRecipeScenario);
      doc["validation"] = {{"run", "llama31-405b-recipe"}, {"metric", "mfu"}};
      runs["runs"].push_back({{"id", "llama31-405b-recipe"},
                              {"source", "a test's run of the recipe"},
                              {"gpu", "H100-SXM5-80GB"},
                              {"gpus", 576},
                              {"measured", {{"mfu", 0.4}}}});
    } else {
      std::ifstream src(MEGASIM_SOURCE_DIR "/scenarios/validation/" + scenario);
      doc = nlohmann::json::parse(src);
      doc.erase("$schema");
    }
    std::ofstream(dir / "refused" / scenario) << doc.dump();
    const fs::path runs_file = dir.string() + "-runs.json";
    std::ofstream(runs_file) << runs.dump();
    const auto r = run_megasim("validate --scenarios " + shell_quote(dir.string()) + " --runs " +
                               shell_quote(runs_file.string()));
    fs::remove_all(dir);
    fs::remove(runs_file);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("megasim now fits this plan") != std::string::npos);
    CHECK(r.err.find("refused/" + scenario) != std::string::npos);
  }
}

TEST_CASE("validate: a plan in refused/ that says its run happened (allow_oom) is an error") {
  // refused/ holds plans never scored; validation.allow_oom scores one over the memory model.
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("megasim_refused_oom_" + std::to_string(::getpid()));
  fs::create_directories(dir / "refused");
  std::ifstream src(MEGASIM_SOURCE_DIR "/scenarios/validation/llama3-405b-8k-8192.json");
  auto doc = nlohmann::json::parse(src);
  doc.erase("$schema");
  std::ofstream(dir / "refused" / "llama3.json") << doc.dump();
  const auto r = run_megasim("validate --scenarios " + shell_quote(dir.string()) + " --runs " +
                             shell_quote(MEGASIM_SOURCE_DIR "/validation/published_runs.json"));
  fs::remove_all(dir);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("refused/llama3.json: sets validation.allow_oom") != std::string::npos);
  CHECK(r.out.empty());
}
