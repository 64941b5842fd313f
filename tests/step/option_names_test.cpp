// The names presets, scenarios and reports give the system's choices: one pair of functions
// each, so a preset's, a scenario's and simulate's JSON spelling cannot part.
#include <doctest/doctest.h>

#include "step/system_options.h"

using namespace megasim;

TEST_CASE("option names: each fp32 main gradient name parses back to its rule") {
  CHECK(step::main_gradient_names() ==
        std::vector<std::string>{"optimizer-step", "from-backward"});
  for (const bool at_step : {true, false}) {
    CHECK(step::main_gradient_at_step_from_string(step::main_gradient_name(at_step)) == at_step);
  }
  CHECK_FALSE(step::main_gradient_at_step_from_string("optimizer_step").has_value());
}

TEST_CASE("option names: each attention kernel name parses back to its kernel") {
  const std::vector<std::string> names = step::attention_kernel_names();
  CHECK(names == std::vector<std::string>{"unfused", "flash-v1", "flash-v2"});
  for (const std::string& n : names) {
    const auto kernel = step::attention_kernel_from_string(n);
    REQUIRE(kernel.has_value());
    CHECK(std::string(step::to_string(*kernel)) == n);
  }
  CHECK_FALSE(step::attention_kernel_from_string("flash").has_value());
}
