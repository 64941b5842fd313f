// A failure-rate file (reliability/failure-rates-*.json). Only a reliability preset names one, so
// each input is read through a copy of the shipped default preset whose "failure_rates" is the
// input's path (written once, before the first input).
#include <fstream>

#include <nlohmann/json.hpp>

#include "io/reliability_loader.h"

#include "fuzz_input.h"

namespace {

std::filesystem::path preset_naming(const std::filesystem::path& rates) {
  std::ifstream in(std::filesystem::path(MEGASIM_SOURCE_DIR) / "reliability" / "default.json");
  nlohmann::json preset = nlohmann::json::parse(in);
  preset["failure_rates"] = rates.string();
  const std::filesystem::path file = megasim::fuzz::scratch_dir() / "reliability.json";
  std::ofstream(file) << preset.dump(2);
  return file;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::filesystem::path preset =
      preset_naming(megasim::fuzz::scratch_dir() / "failure-rates.json");
  return megasim::fuzz::load_from_file(data, size, "failure-rates.json",
                                       [](const std::filesystem::path&) {
                                         megasim::io::load_reliability_file(preset);
                                       });
}
