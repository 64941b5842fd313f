// Every file a command reads is recorded where files are read (io/files_read.h), presets found
// by name included: what no output of the command may replace (io/output.h).
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/error.h"
#include "io/files_read.h"
#include "io/inputs.h"
#include "io/scenario.h"

namespace fs = std::filesystem;
using megasim::io::FilesRead;

namespace {
const fs::path kSource = MEGASIM_SOURCE_DIR;

std::vector<std::string> relative(const FilesRead& read) {
  std::vector<std::string> out;
  for (const auto& f : read.files()) out.push_back(fs::relative(f, fs::canonical(kSource)).string());
  std::sort(out.begin(), out.end());
  return out;
}
}  // namespace

TEST_CASE("the default scenario's command reads eight files and records each of them") {
  FilesRead read;
  megasim::io::load_inputs(
      megasim::io::load_scenario(kSource / "scenarios/megascale-175b-12288.json", {}, nullptr, &read),
      {}, &read);
  // The scenario, what it names (model, cluster, device), the system preset and the run-level
  // presets it names (reliability "megascale" and its failure rates, power by the device's name).
  CHECK(relative(read) == std::vector<std::string>{
                              "calibrate/profiles/a100-sxm4-80gb.json",
                              "models/gpt-175b-megascale.json",
                              "power/a100-sxm4-80gb.json",
                              "reliability/failure-rates-llama3-405b.json",
                              "reliability/megascale.json",
                              "scenarios/megascale-175b-12288.json",
                              "systems/megascale.json",
                              "topologies/megascale-a100-12288.json",
                          });
}

TEST_CASE("a file that fails to parse is recorded all the same, once") {
  FilesRead read;
  const fs::path bad = fs::path(MEGASIM_TEST_DATA) / "bad/truncated.json";
  CHECK_THROWS_AS(megasim::io::load_scenario(bad, {}, nullptr, &read), megasim::InputError);
  CHECK_THROWS_AS(megasim::io::load_scenario(bad, {}, nullptr, &read), megasim::InputError);
  REQUIRE(read.files().size() == 1);
  CHECK(read.files().front() == fs::canonical(bad));
}
