// search's --results file under an interrupt (plan/results_file.h): a file the search created
// and has written nothing to is removed as the signal ends the process, as the search's own
// end removes it; one holding a line, or there before, is kept. Each case runs in a child
// process that raises the signal itself, so the interrupt lands at a known point.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>

#include "plan/results_file.h"

namespace fs = std::filesystem;
using megasim::plan::ResultsFile;

namespace {

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() /
                       ("megasim-results-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// Opens the results file in a child, writes `line` into it when not empty (another rank's
// result), raises SIGTERM; true when the child ended by that signal. The child's SIGTERM is
// reset to its default first: a test run in the background of a script inherits SIGINT
// ignored, and megasim keeps an ignored signal ignored.
bool interrupted_after(const fs::path& file, const std::string& line) {
  const pid_t child = ::fork();
  if (child == 0) {
    std::signal(SIGTERM, SIG_DFL);
    ResultsFile results(file, 1);
    if (!line.empty()) std::ofstream(file, std::ios::app) << line << '\n';
    std::raise(SIGTERM);
    ::_exit(97);  // not reached: SIGTERM ends the process
  }
  int status = 0;
  return child > 0 && ::waitpid(child, &status, 0) == child && WIFSIGNALED(status) &&
         WTERMSIG(status) == SIGTERM;
}

}  // namespace

TEST_CASE("results file: an interrupt removes the file the search created while it is empty") {
  // Killed before its first line, search left an empty --results file (until 2026-12-07).
  const fs::path dir = fresh_dir("empty");
  CHECK(interrupted_after(dir / "r.jsonl", ""));
  CHECK_FALSE(fs::exists(dir / "r.jsonl"));
  // A line in it (this rank's or another's under mpirun) keeps it, as at the search's end.
  CHECK(interrupted_after(dir / "kept.jsonl", "{}"));
  CHECK(fs::file_size(dir / "kept.jsonl") == 3);
  // A file there before, empty or not, is the user's: never removed.
  std::ofstream(dir / "theirs.jsonl").close();
  CHECK(interrupted_after(dir / "theirs.jsonl", ""));
  CHECK(fs::exists(dir / "theirs.jsonl"));
  fs::remove_all(dir);
}
