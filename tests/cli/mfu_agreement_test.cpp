// Every command counts one MFU numerator. On the default scenario MegaScale's preset switches on
// a 1,024-token window, which the numerator counts (workload/flops.h): simulate, compare,
// search's estimate and its event level, and a search resumed from its --results file must all
// divide the same FLOPs by the same peak. A command still counting the model file's full
// attention would differ by 1.4 % here.
#include <doctest/doctest.h>

#include <algorithm>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "run_command.h"

using megasim::test::kDefaultScenario;
using megasim::test::run_megasim;
using megasim::test::shell_quote;

namespace {

namespace fs = std::filesystem;

// The scenario's own plan and one neighbour: a search of two plans, about a second.
const std::string kSearch = "search " + kDefaultScenario + " --fix tp=8 --fix pp=8 --top 1";

// FLOPs a token an MFU implies: mfu × peak × GPUs / tokens a second (the peak cancels in a ratio).
double flops_per_token(const nlohmann::json& j) {
  return j["mfu"].get<double>() / j["tokens_per_s"].get<double>();
}

}  // namespace

TEST_CASE("cli: simulate, compare and search count one MFU numerator with a system's window") {
  const auto sim = nlohmann::json::parse(run_megasim("simulate --json " + kDefaultScenario).out);
  const double want = flops_per_token(sim);
  // 1.0629e12 FLOPs a token, not the full count's 1.0774e12.
  CHECK(sim["model_flops_per_token"].get<double>() == doctest::Approx(1.0629e12).epsilon(1e-4));

  const auto cmp = nlohmann::json::parse(
      run_megasim("compare --json " + kDefaultScenario + " --vary plan.micro_batch=1,2").out);
  REQUIRE(cmp["variants"].size() == 2);
  for (const auto& v : cmp["variants"]) CHECK(flops_per_token(v) == doctest::Approx(want).scale(0));

  const auto found = nlohmann::json::parse(run_megasim(kSearch + " --json").out);
  REQUIRE(found["ranked"].size() == 2);
  for (const auto& r : found["ranked"]) {
    CHECK(flops_per_token(r) == doctest::Approx(want).scale(0));
    CHECK(flops_per_token(r["analytic"]) == doctest::Approx(want).scale(0));
  }
}

TEST_CASE("cli: a search resumed from its --results file takes back its MFU figures") {
  // The results file checks each line's MFU against its tokens a second with the numerator;
  // a numerator that differed between writing and reading would refuse the file.
  const fs::path dir = fs::temp_directory_path() / ("megasim_mfu_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path results = dir / "results.jsonl";
  fs::remove(results);
  const std::string with = kSearch + " --results " + shell_quote(results.string());
  const auto fresh = run_megasim(with);
  REQUIRE(fresh.exit_code == 0);
  const auto resumed = run_megasim(with);
  CHECK(resumed.exit_code == 0);
  // stderr holds one line: the figures read back from the file.
  CHECK(resumed.err.find("event-level figures were read from --results") != std::string::npos);
  CHECK(std::count(resumed.err.begin(), resumed.err.end(), '\n') == 1);
  CHECK(resumed.out == fresh.out);
  fs::remove_all(dir);
}
