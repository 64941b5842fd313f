// The inputs of a shipped scenario as `megasim search` loads them (no run level), for the
// search tests.
#pragma once

#include <filesystem>
#include <string>

#include "io/inputs.h"
#include "io/scenario.h"

namespace megasim::test {

inline io::Inputs search_inputs(const std::string& scenario) {
  io::InputOptions o;
  o.run_level = false;
  return io::load_inputs(
      io::load_scenario(std::filesystem::path(MEGASIM_SOURCE_DIR) / scenario, {}), o);
}

}  // namespace megasim::test
