// A failure-rate file (reliability/failure-rates-*.json). Only a reliability preset names one, so
// each input is read through a copy of the shipped default preset whose "failure_rates" is the
// input's path (written beside each input, in its scratch folder).
#include <fstream>

#include <nlohmann/json.hpp>

#include "io/reliability_loader.h"

#include "fuzz_input.h"

namespace {

// The shipped default preset, read once; each input's copy names that input's file.
const nlohmann::json& default_preset() {
  static const nlohmann::json preset = [] {
    std::ifstream in(std::filesystem::path(MEGASIM_SOURCE_DIR) / "reliability" / "default.json");
    return nlohmann::json::parse(in);
  }();
  return preset;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return megasim::fuzz::load_from_file(
      data, size, "failure-rates.json", [](const std::filesystem::path& rates) {
        nlohmann::json preset = default_preset();
        preset["failure_rates"] = rates.string();
        const std::filesystem::path file = rates.parent_path() / "reliability.json";
        std::ofstream(file) << preset.dump(2);
        megasim::io::load_reliability_file(file);
      });
}
