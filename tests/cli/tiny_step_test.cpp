// A tiny model's step, under a millisecond, as the text reports print it: its digits, not
// "0.000 s" beside a breakdown of zeros (a helper's trial, 2026-12-07; the JSON held them).
#include <doctest/doctest.h>

#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "run_command.h"

using megasim::test::run_megasim;
using megasim::test::shell_quote;

TEST_CASE("cli: a step under a millisecond keeps three digits in simulate's and compare's text") {
  // tests/data/tiny: one layer of width 64, two tokens, a vocabulary of two.
  const std::string scenario = MEGASIM_SOURCE_DIR "/tests/data/tiny/tiny-step.json";
  const auto json = run_megasim("simulate " + shell_quote(scenario) + " --json");
  REQUIRE(json.exit_code == 0);
  const double step = nlohmann::json::parse(json.out)["step_time_s"].get<double>();
  REQUIRE(step < 1e-3);
  const auto text = run_megasim("simulate " + shell_quote(scenario));
  REQUIRE(text.exit_code == 0);
  INFO(text.out);
  CHECK(text.out.find("step time            0.000 s") == std::string::npos);
  CHECK(text.out.find(fmt::format("step time            {:.3g} s", step)) != std::string::npos);
  CHECK(text.out.find("MFU / HFU            0.0 %") == std::string::npos);
  const auto compared =
      run_megasim("compare " + shell_quote(scenario) + " --vary plan.global_batch=1,2");
  REQUIRE(compared.exit_code == 0);
  INFO(compared.out);
  CHECK(compared.out.find(fmt::format(" {:.3g} ", step)) != std::string::npos);
  CHECK(compared.out.find("every variant runs on 1 GPU\n") != std::string::npos);
}
