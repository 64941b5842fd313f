// The process's edges: its environment (MEGASIM_DATA_DIR, a removed working directory, closed
// standard descriptors) and inputs that change under it, each found by a trial of 2026-12-07
// and failing before its fix; and what the page escapes.
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "run_command.h"

namespace fs = std::filesystem;
using megasim::test::fresh_dir;
using megasim::test::kDefaultScenario;
using megasim::test::read_all;
using megasim::test::run_megasim;
using megasim::test::shell_quote;

TEST_CASE("a MEGASIM_DATA_DIR that names no folder is refused, not passed over") {
  // A misspelt folder read the build's tree without a word until 2026-12-07 (a trial).
  ::setenv("MEGASIM_DATA_DIR", (fresh_dir("data_root_typo") / "no-such").c_str(), 1);
  const auto simulate = run_megasim("simulate " + kDefaultScenario);
  const auto validate = run_megasim("validate");
  ::unsetenv("MEGASIM_DATA_DIR");
  // --help and --version read no data folder: they run (validate's defaults were read while the
  // app was built, and refused them, until a review of 2026-12-07).
  ::setenv("MEGASIM_DATA_DIR", (fresh_dir("data_root_typo") / "no-such").c_str(), 1);
  const auto version = run_megasim("--version");
  const auto help = run_megasim("validate --help");
  ::unsetenv("MEGASIM_DATA_DIR");
  CHECK(version.exit_code == 0);
  CHECK(help.exit_code == 0);
  CHECK(help.out.find("the data folder's validation/published_runs.json") != std::string::npos);
  for (const auto& r : {simulate, validate}) {
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(r.err.find("MEGASIM_DATA_DIR: '") != std::string::npos);
    CHECK(r.err.find("no-such' is not a folder megasim can read") != std::string::npos);
    CHECK(r.err.find("internal error") == std::string::npos);
  }
}

TEST_CASE("a removed working directory is bad input, not an internal error") {
  // current_path() threw from the file lookups: "internal error", exit 1, even with every path
  // absolute (a trial, 2026-12-07).
  const fs::path gone = fresh_dir("cwd_gone") / "here";
  fs::create_directories(gone);
  const std::string in_gone = "cd " + shell_quote(gone.string()) + " && rmdir " +
                              shell_quote(gone.string()) + " && " + MEGASIM_BINARY + " ";
  const auto run = [&](const std::string& args) {
    const std::string cmd =
        in_gone + args + " >/dev/null 2>" + shell_quote((gone.parent_path() / "err.txt").string());
    const int status = std::system(cmd.c_str());
    fs::create_directories(gone);  // for the next run
    return std::pair{WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                     read_all(gone.parent_path() / "err.txt")};
  };
  const auto [absolute, absolute_err] = run("simulate " + kDefaultScenario);
  CHECK(absolute == 0);
  CHECK(absolute_err.find("internal error") == std::string::npos);
  // A relative path that still opens from there (../ climbs the removed directory's parents).
  const std::string tiny =
      fs::relative(fs::path(MEGASIM_SOURCE_DIR) / "tests/data/tiny/tiny-step.json", gone).string();
  const auto [opened, opened_err] = run("simulate " + shell_quote(tiny));
  CHECK(opened == 0);
  CHECK(opened_err.find("internal error") == std::string::npos);
  const auto [relative, relative_err] = run("simulate mine.json");
  CHECK(relative == 2);
  CHECK(relative_err.find("mine.json: no such file") != std::string::npos);
  const auto [cluster, cluster_err] = run("collective --cluster ./mine.json --gpus 8");
  CHECK(cluster == 2);
  CHECK(cluster_err.find("--cluster: cluster './mine.json' not found") != std::string::npos);
  CHECK(cluster_err.find("internal error") == std::string::npos);
}

TEST_CASE("the page holds no raw control byte of a scenario's name") {
  // An ESC and a NUL in the name reached the page's title raw with --html FILE, escaped with
  // --html - (a trial, 2026-12-07).
  auto scenario = nlohmann::json::parse(read_all(kDefaultScenario));
  scenario["name"] = std::string("mega\x1b[31mred\x01x");
  const fs::path dir = fresh_dir("control_name");
  const fs::path file = dir / "s.json";
  std::ofstream(file) << scenario.dump();
  const fs::path page = dir / "p.html";
  const auto r = run_megasim("simulate " + shell_quote(file.string()) + " --html " +
                             shell_quote(page.string()));
  REQUIRE(r.exit_code == 0);
  const std::string html = read_all(page);
  CHECK(html.find('\x1b') == std::string::npos);
  CHECK(html.find('\x01') == std::string::npos);
  CHECK(html.find("mega\\x1b[31mred\\x01x") != std::string::npos);
  const auto printed = run_megasim("simulate " + shell_quote(file.string()) + " --html -");
  CHECK(printed.out == html);
}

TEST_CASE("an input file that grows while read is said to, not to be too large") {
  // /proc's files give a size of 0 and then text; the refusal named the 256 MiB limit.
  const auto r = run_megasim("simulate /proc/version");
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("/proc/version: file grew past the 0 bytes its size gave") != std::string::npos);
  CHECK(r.err.find("limit") == std::string::npos);
}

TEST_CASE("a closed standard output is not where search's --results file lands") {
  // The results file took descriptor 1 and the ranking went into it, exit 0 (a trial,
  // 2026-12-07): now the report's write fails as on any closed output, and the file holds
  // result lines only.
  const fs::path dir = fresh_dir("closed_stdout");
  const fs::path results = dir / "r.jsonl";
  // run_megasim redirects standard output after the arguments, which would reopen it.
  const std::string cmd = std::string(MEGASIM_BINARY) + " search " + kDefaultScenario +
                          " --top 2 --results " + shell_quote(results.string()) +
                          " >&- 2>/dev/null </dev/null";
  const int status = std::system(cmd.c_str());
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 2);  // the report's write failed, as on any closed output
  std::ifstream in(results);
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    ++lines;
    CHECK(line.rfind("{", 0) == 0);
  }
  CHECK(lines > 0);
  // The same file resumes.
  const auto again =
      run_megasim("search " + kDefaultScenario + " --top 2 --results " + shell_quote(results.string()));
  CHECK(again.exit_code == 0);
}
