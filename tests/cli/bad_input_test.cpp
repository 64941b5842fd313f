// The bad-input corpus: every file in tests/data/bad/ listed in cases.tsv must make
// `megasim simulate` exit with status 2, print a message containing the listed fragment, no
// crash or stack trace, and write no output file. Where the args hold {file}, they are the
// whole command line instead ({file} the case's file, {out} the output that must not appear),
// so other commands (compare, calibrate import-nccl-tests) share the corpus. The file "@PATH"
// is an absolute path (a device), "@fifo" a named pipe made for the test.
#include <doctest/doctest.h>

#include <sys/stat.h>
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
  const fs::path fifo_dir = out_dir.string() + "_fifo";
  fs::create_directories(fifo_dir);
  const fs::path fifo = fifo_dir / "scenario.json";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  for (const auto& c : cases) {
    const std::string file = c.file == "@missing" ? (bad / "does-not-exist.json").string()
                             : c.file == "@dir"   ? bad.string()
                             : c.file == "@fifo"  ? fifo.string()
                             : c.file[0] == '@'   ? c.file.substr(1)
                                                  : (bad / c.file).string();
    std::string command = c.args;
    if (command.find("{file}") == std::string::npos) {
      command = "simulate {file} " + c.args + " -o {out}";
    }
    for (const auto& [key, value] : {std::pair{std::string("{file}"), file},
                                     std::pair{std::string("{out}"), output.string()}}) {
      for (auto at = command.find(key); at != std::string::npos; at = command.find(key)) {
        command.replace(at, key.size(), shell_quote(value));
      }
    }
    const auto r = run_megasim(command);
    INFO("case: ", c.file, " ", c.args, "\nstderr: ", r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(c.fragment) != std::string::npos);
    CHECK(r.err.find("terminate called") == std::string::npos);
    CHECK(r.err.find("'' resolves") == std::string::npos);  // no follow-on error about an empty name
    CHECK(r.err.find("Sanitizer") == std::string::npos);
    CHECK(r.out.empty());
    CHECK_FALSE(fs::exists(output));
    // No temporary file left behind either.
    CHECK(fs::is_empty(out_dir));
  }
  fs::remove_all(out_dir);
  fs::remove_all(fifo_dir);
}
