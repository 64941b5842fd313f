// A reliability preset of one's own, given by path (`reliability.preset`): a planner's cluster
// detects, restarts and fails as its own figures say, not only as the built-in presets' do.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "run_command.h"

using megasim::test::read_all;
using megasim::test::run_megasim;

namespace fs = std::filesystem;

TEST_CASE("cli: a reliability preset by path, beside the scenario, with its own failure table") {
  // Until 2026-12-07 a path was refused ("not one of 'default', 'megascale', ..."). A copy of
  // megascale's preset whose detection takes 2 minutes rather than 10, and whose failure table
  // (a path, found beside the preset) counts every cause twice: each restart is 8 minutes
  // shorter and failures come twice as often.
  const fs::path dir =
      fs::temp_directory_path() / ("megasim-own-reliability-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "presets");
  const std::string src = MEGASIM_SOURCE_DIR;
  auto preset = nlohmann::json::parse(read_all(src + "/reliability/megascale.json"));
  preset["name"] = "ours";
  preset["detection_min"]["value"] = 2;
  preset["failure_rates"] = "rates-doubled.json";
  std::ofstream(dir / "presets/ours.json") << preset.dump(2);
  auto rates = nlohmann::json::parse(read_all(src + "/reliability/failure-rates-llama3-405b.json"));
  for (auto& c : rates["components"]) c["count"] = 2 * c["count"].get<int>();
  std::ofstream(dir / "presets/rates-doubled.json") << rates.dump(2);
  auto scenario = nlohmann::json::parse(read_all(src + "/scenarios/megascale-production-530b.json"));
  scenario["reliability"]["preset"] = "presets/ours.json";
  std::ofstream(dir / "production.json") << scenario.dump(2);

  const auto base = run_megasim("simulate " + src + "/scenarios/megascale-production-530b.json --json");
  const auto ours = run_megasim("simulate " + (dir / "production.json").string() + " --json");
  REQUIRE(base.exit_code == 0);
  INFO(ours.err);
  REQUIRE(ours.exit_code == 0);
  const auto b = nlohmann::json::parse(base.out)["run"], o = nlohmann::json::parse(ours.out)["run"];
  // Named by its path: a copy keeps a built-in's "name" and would read as that preset.
  CHECK(o["reliability_preset"] == "presets/ours.json");
  CHECK(o["recovery_min"].get<double>() ==
        doctest::Approx(b["recovery_min"].get<double>() - 8.0).epsilon(1e-6));
  CHECK(o["failures_per_day"].get<double>() ==
        doctest::Approx(2.0 * b["failures_per_day"].get<double>()).epsilon(1e-9));

  // A name is still one of the built-in presets; a path that is not there is said.
  const auto unknown = run_megasim("simulate " + (dir / "production.json").string() +
                                   " --set reliability.preset=megascal");
  CHECK(unknown.exit_code == 2);
  CHECK(unknown.err.find("'megascal' is not one of") != std::string::npos);
  const auto missing = run_megasim("simulate " + (dir / "production.json").string() +
                                   " --set reliability.preset=presets/theirs.json");
  CHECK(missing.exit_code == 2);
  CHECK(missing.err.find("presets/theirs.json") != std::string::npos);
  // A bare name that is no built-in preset is told the form of a path.
  CHECK(unknown.err.find("nor a path to a preset of one's own") != std::string::npos);
  // Read by every command, so no command's output replaces it: compare --html was allowed to.
  const std::string own = (dir / "production.json").string();
  CHECK(run_megasim("inspect " + own + " --set reliability.preset=presets/theirs.json").exit_code ==
        2);
  const auto html = run_megasim("compare " + own + " --vary plan.micro_batch=1,2 --html " +
                                (dir / "presets/ours.json").string());
  CHECK(html.exit_code == 2);
  CHECK(html.err.find("is an input of this command") != std::string::npos);
  CHECK(nlohmann::json::parse(read_all((dir / "presets/ours.json").string()))["name"] == "ours");
  fs::remove_all(dir);
}

TEST_CASE("cli: Llama 3's own job, replayed, draws its interruptions within the stated bound") {
  // The failure table is Llama 3's (419 unexpected and 47 planned interruptions in 54 days on
  // 16,384 H100s): its job replayed must draw that rate (419/54 a day) and, since trials draw
  // failures only while the job runs, somewhat fewer interruptions a wall-clock day than the 466
  // counted (README, Known limitations: about 426 in 54 days). No test held the run level to a
  // published figure until 2026-12-07 (a run-level review).
  const std::string llama = std::string(MEGASIM_SOURCE_DIR) +
                            "/scenarios/validation/llama3-405b-8k-8192.json --set plan.dp=128 "
                            "--set run.tokens=1.15e13 --set run.trials=20 "
                            "--set reliability.preset=megascale --json";
  const auto r = run_megasim("simulate " + llama);
  REQUIRE(r.exit_code == 0);
  const auto run = nlohmann::json::parse(r.out)["run"];
  CHECK(run["failures_per_day"].get<double>() == doctest::Approx(419.0 / 54.0).epsilon(1e-9));
  const double per_54_days =
      (run["restarts"]["mean"].get<double>() + run["planned_stops"]["mean"].get<double>()) /
      run["days"]["mean"].get<double>() * 54.0;
  INFO("interruptions in 54 days: ", per_54_days);
  CHECK(per_54_days >= 0.85 * 466.0);
  CHECK(per_54_days <= 1.02 * 466.0);
}

TEST_CASE("cli: a run of frequent failures is held to the events its sweep runs, not more") {
  // A reviewer's run (2026-12-07): failures 100 times as often, a checkpoint a minute. The work
  // bound counted every interval the sweep could extend to, whose e^{λT} failures the sweep
  // never meets (its longest is not its best), and refused 4.3·10⁸ events for a run of 0.8 s.
  const std::string scenario = MEGASIM_SOURCE_DIR "/scenarios/megascale-175b-12288.json";
  const auto r = run_megasim("simulate " + scenario +
                             " --set reliability.failure_rate_scale=100"
                             " --set reliability.checkpoint_interval_min=1");
  CHECK_MESSAGE(r.exit_code == 0, r.err);
  CHECK(r.out.find("restarts") != std::string::npos);
  // A bound below it is still refused, saying what it estimated.
  const auto tight =
      run_megasim("simulate " + scenario +
                  " --set reliability.failure_rate_scale=100"
                  " --set reliability.checkpoint_interval_min=1 --max-events 100000");
  CHECK(tight.exit_code == 2);
  CHECK(tight.err.find("need about") != std::string::npos);
}
