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

TEST_CASE("validate: a published figure past the GPUs' peak, or another vocabulary, is refused") {
  // A user's trial (2026-12-05) scored 10^6 TFLOP/s a GPU at -100 % and a 1 ns step at
  // +1.4e10 %, and a run of a 5-token vocabulary against the scenario's 51,200.
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("megasim_peak_" + std::to_string(::getpid()));
  fs::create_directories(dir / "s");
  fs::copy_file(MEGASIM_SOURCE_DIR "/scenarios/validation/korthikanti-22b-full.json",
                dir / "s" / "korthikanti-22b-full.json");
  std::ifstream src(MEGASIM_SOURCE_DIR "/validation/published_runs.json");
  const nlohmann::json runs = nlohmann::json::parse(src);
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
