// import-nccl-tests and fit on what a user's files hold besides one clean run: a copy of a log
// under another name, a second run killed before its first row, a reproducible date, and a
// fit that keeps NCCL's model's scales (a user's trial of the CPU side, 2026-12-06). Each case
// failed before its fix.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "cli/run_command.h"

using megasim::test::fresh_dir;
using megasim::test::read_all;
using megasim::test::run_megasim;
using megasim::test::shell_quote;
namespace fs = std::filesystem;

namespace {
const std::string kLog =
    std::string(MEGASIM_SOURCE_DIR) + "/tests/data/nccl-tests/h100-2node-all_reduce.log";

// Imports `logs` (quoted already) into folder `d`: refused with `why` on stderr, exit 2, and
// nothing written.
void check_refused(const fs::path& d, const std::string& logs, const std::string& why) {
  const auto r = run_megasim("calibrate import-nccl-tests " + logs +
                             " --device h100-sxm5-80gb -o " + shell_quote((d / "o.json").string()));
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find(why) != std::string::npos);
  CHECK_FALSE(fs::exists(d / "o.json"));
}
}  // namespace

TEST_CASE("import: a copy of a log under another name is refused as the log twice") {
  const fs::path d = fresh_dir("copy");
  fs::copy_file(kLog, d / "copy.log");
  check_refused(d, shell_quote(kLog) + " " + shell_quote((d / "copy.log").string()),
                "copy.log: a copy of ");
  fs::remove_all(d);
}

TEST_CASE("import: a second run killed after its column header is refused as a cut log") {
  const fs::path d = fresh_dir("cut");
  std::string text = read_all(kLog);
  // The log's own header lines, up to and including the column headers, once more.
  const auto table = text.find("#       size");
  REQUIRE(table != std::string::npos);
  const auto header_end = text.find('\n', text.find('\n', table) + 1);
  std::ofstream(d / "two.log") << text << text.substr(0, header_end + 1);
  check_refused(d, shell_quote((d / "two.log").string()),
                "the log is cut off before the run's first size");
  fs::remove_all(d);
}

TEST_CASE("import: SOURCE_DATE_EPOCH makes two imports of one log byte-identical") {
  const fs::path d = fresh_dir("date");
  const std::string args = "calibrate import-nccl-tests " + shell_quote(kLog) +
                           " --device h100-sxm5-80gb --cluster dgx-h100-superpod-6144 -o ";
  ::setenv("SOURCE_DATE_EPOCH", "1700000000", 1);
  const auto a = run_megasim(args + shell_quote((d / "a.json").string()));
  ::sleep(1);
  const auto b = run_megasim(args + shell_quote((d / "b.json").string()));
  // A value that is no date is refused, not ignored (or written as the year 3170843).
  ::setenv("SOURCE_DATE_EPOCH", "99999999999999", 1);
  const auto future = run_megasim(args + shell_quote((d / "c.json").string()));
  ::unsetenv("SOURCE_DATE_EPOCH");
  CHECK(future.exit_code == 2);
  CHECK(future.err.find("SOURCE_DATE_EPOCH: '99999999999999' is not a whole number") !=
        std::string::npos);
  CHECK_FALSE(fs::exists(d / "c.json"));
  REQUIRE(a.exit_code == 0);
  REQUIRE(b.exit_code == 0);
  CHECK(read_all(d / "a.json") == read_all(d / "b.json"));
  CHECK(read_all(d / "a.json").find("2023-11-14T22:13:20Z") != std::string::npos);
  // The fit of that profile keeps the scales NCCL's model was fitted with, and says so.
  const auto fit = run_megasim("calibrate fit " + shell_quote((d / "a.json").string()) + " -o " +
                               shell_quote((d / "f.json").string()));
  INFO(fit.err);
  CHECK(fit.exit_code == 0);
  CHECK(fit.out.find("scale fit(s) of NCCL's model as imported (fit does not refit them") !=
        std::string::npos);
  fs::remove_all(d);
}
