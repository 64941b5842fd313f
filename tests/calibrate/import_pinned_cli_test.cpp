// import-nccl-tests on a run too short to pin a regime: NCCL's model is compared with it and
// fitted to nothing, and the report says so.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/run_command.h"

using megasim::test::run_megasim;
using megasim::test::shell_quote;
namespace fs = std::filesystem;

TEST_CASE("import: a run that pins no regime is said not fitted") {
  // The shipped H100 2-node log cut to its first row (8 MiB): NVLSTree's latency is 40 % of its
  // modelled time there and the bandwidth term under 80 %, so neither regime is pinned (two
  // rows each are needed). The headline read "fitted over 1 rows" above the two "not pinned"
  // lines until 2026-12-06 (a user's trial).
  const fs::path dir = fs::temp_directory_path() / ("megasim_pinned_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path log = dir / "one-row.log";
  {
    std::ifstream in(std::string(MEGASIM_SOURCE_DIR) +
                     "/tests/data/nccl-tests/h100-2node-all_reduce.log");
    std::ofstream out(log);
    bool row = false;
    for (std::string line; std::getline(in, line);) {
      std::istringstream s(line);
      std::vector<std::string> fields;
      for (std::string w; s >> w;) fields.push_back(w);
      const bool data = !line.empty() && line[0] != '#' && fields.size() == 13;
      if (data && row) continue;
      row = row || data;
      out << line << "\n";
    }
  }
  const auto r = run_megasim("calibrate import-nccl-tests " + shell_quote(log.string()) +
                             " --device h100-sxm5-80gb --cluster dgx-h100-superpod-6144 -o " +
                             shell_quote((dir / "out.json").string()));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("one-row.log:1: NCCL's model on dgx-h100-superpod-6144 not fitted (no regime "
                   "pinned) against 1 row, rms ") != std::string::npos);
  CHECK(r.out.find("fitted over") == std::string::npos);
  fs::remove_all(dir);
}
