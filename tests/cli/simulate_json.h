// `simulate --json ARGS` for the CLI tests, the run required to succeed (one helper for the
// test files that read simulate's JSON; three copies until 2026-12-07).
#pragma once

#include <doctest/doctest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "run_command.h"

namespace megasim::test {

inline nlohmann::json simulate_json(const std::string& args) {
  const auto r = run_megasim("simulate --json " + args);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.out);
}

}  // namespace megasim::test
