// Runs the megasim binary as a user would, capturing exit status, stdout and stderr.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace megasim::test {

// The default scenario (`make run`'s): MegaScale's 175B on its 12,288-GPU cluster.
inline const std::string kDefaultScenario =
    std::string(MEGASIM_SOURCE_DIR) + "/scenarios/megascale-175b-12288.json";

// The search tests' scenarios: Korthikanti's 175B on 64 GPUs, and his 22B on 8 GPUs (a space
// small enough for a search in well under a second).
inline const std::string kSearch175b =
    std::string(MEGASIM_SOURCE_DIR) + "/scenarios/validation/korthikanti-175b-selective.json";
inline const std::string kSearch22b =
    std::string(MEGASIM_SOURCE_DIR) + "/scenarios/validation/korthikanti-22b-selective.json";

struct CommandResult {
  int exit_code = -1;
  std::string out, err;
};

inline std::string read_all(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A fresh path `name` in this process's scratch folder (any file there before removed).
inline std::filesystem::path temp_file(const std::string& name) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("megasim_files_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::remove(dir / name);
  return dir / name;
}

// A fresh, empty folder `name` of this process's in the scratch folder (what was there
// removed).
inline std::filesystem::path fresh_dir(const std::string& name) {
  namespace fs = std::filesystem;
  const fs::path d =
      fs::temp_directory_path() / ("megasim_dir_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

inline int lines_of(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) ++n;
  return n;
}

inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// `args` is appended to the binary's path as shell words (quote them with shell_quote).
inline CommandResult run_megasim(const std::string& args) {
  namespace fs = std::filesystem;
  static int counter = 0;
  const fs::path dir = fs::temp_directory_path() / ("megasim_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path out = dir / ("out" + std::to_string(counter) + ".txt");
  const fs::path err = dir / ("err" + std::to_string(counter++) + ".txt");
  const std::string cmd = std::string(MEGASIM_BINARY) + " " + args + " >" +
                          shell_quote(out.string()) + " 2>" + shell_quote(err.string()) +
                          " </dev/null";
  const int status = std::system(cmd.c_str());
  CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = read_all(out);
  r.err = read_all(err);
  fs::remove(out);
  fs::remove(err);
  return r;
}

}  // namespace megasim::test
