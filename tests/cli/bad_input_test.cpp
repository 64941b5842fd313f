// The bad-input corpus: every file in tests/data/bad/ listed in cases.tsv must make
// `megasim simulate` exit with status 2, print a message containing the listed fragment, no
// crash or stack trace, and write no output file.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "run_command.h"

namespace fs = std::filesystem;
using megasim::test::run_megasim;
using megasim::test::shell_quote;

namespace {
struct Case {
  std::string file, args, fragment;
};

std::vector<Case> read_cases() {
  std::ifstream in(fs::path(MEGASIM_TEST_DATA) / "bad" / "cases.tsv");
  std::vector<Case> cases;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto t1 = line.find('\t'), t2 = line.find('\t', t1 + 1);
    INFO("cases.tsv line: ", line);
    REQUIRE(t1 != std::string::npos);
    REQUIRE(t2 != std::string::npos);
    cases.push_back({line.substr(0, t1), line.substr(t1 + 1, t2 - t1 - 1), line.substr(t2 + 1)});
  }
  return cases;
}
}  // namespace

TEST_CASE("bad input: every malformed input exits 2 with its message and writes nothing") {
  const auto cases = read_cases();
  CHECK(cases.size() >= 30);
  const fs::path bad = fs::path(MEGASIM_TEST_DATA) / "bad";
  const fs::path out_dir = fs::temp_directory_path() / ("megasim_bad_" + std::to_string(::getpid()));
  fs::create_directories(out_dir);
  const fs::path output = out_dir / "result.json";
  for (const auto& c : cases) {
    const std::string file = c.file == "@missing" ? (bad / "does-not-exist.json").string()
                             : c.file == "@dir"   ? bad.string()
                                                  : (bad / c.file).string();
    const auto r = run_megasim("simulate " + shell_quote(file) + " " + c.args + " -o " +
                               shell_quote(output.string()));
    INFO("case: ", c.file, " ", c.args, "\nstderr: ", r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(c.fragment) != std::string::npos);
    CHECK(r.err.find("terminate called") == std::string::npos);
    CHECK(r.err.find("Sanitizer") == std::string::npos);
    CHECK(r.out.empty());
    CHECK_FALSE(fs::exists(output));
    // No temporary file left behind either.
    CHECK(fs::is_empty(out_dir));
  }
  fs::remove_all(out_dir);
}
