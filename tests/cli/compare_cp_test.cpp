// `megasim compare` over context parallelism: the GPU count kept, data parallelism following.
#include <doctest/doctest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "run_command.h"

using megasim::test::run_megasim;
using megasim::test::shell_quote;

TEST_CASE("cli: compare varying plan.cp keeps the GPU count, dp following tp × cp × pp") {
  // The Megatron-Core 70B row: TP 8 × PP 2 × DP 48 = 768 GPUs; cp 2 and 4 leave 24 and 12
  // replicas of 16 and 32 ranks.
  const std::string scenario = shell_quote(std::string(MEGASIM_SOURCE_DIR) +
                                           "/scenarios/validation/mcore-h100-70b-768.json");
  const auto r = run_megasim("compare --json " + scenario + " --vary plan.cp=1,2,4");
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["variants"].size() == 3);
  const int dps[] = {48, 24, 12};
  for (std::size_t i = 0; i < 3; ++i) {
    const auto& v = j["variants"][i];
    REQUIRE(v["feasible"].get<bool>());
    CHECK(v["plan"]["dp"] == dps[i]);
    CHECK(v["plan"]["cp"] == 1 << i);
    CHECK(v["plan"]["gpus"] == 768);
  }
}
