// The statistics `megasim validate` prints, on rows worked by hand.
#include <doctest/doctest.h>

#include "plan/validate.h"

using megasim::plan::summarise;
using megasim::plan::ValidationRow;

TEST_CASE("validate: MAPE by role, the worst row, and each chain step's gain") {
  std::vector<ValidationRow> rows = {
      {"a", "r1", "iteration_time_s", "check", -1, 10.0, 11.0, "m", 8, "src"},  // +10 %
      {"b", "r2", "iteration_time_s", "check", -1, 20.0, 19.0, "m", 8, "src"},  // −5 %
      {"c", "r3", "mfu", "fit", -1, 0.5, 0.51, "m", 8, "src"},                  // +2 %
      {"s0", "chain", "mfu", "check", 0, 0.40, 0.42, "m", 8, "src"},            // +2 points
      {"s1", "chain", "mfu", "check", 1, 0.45, 0.46, "m", 8, "src"},            // +1 point; gain 5 vs 4
      {"s2", "chain", "mfu", "check", 2, 0.47, 0.49, "m", 8, "src"},            // +2 points; gain 2 vs 3
  };
  const auto v = summarise(rows);
  CHECK(v.rows_checked == 2);
  CHECK(v.mape_checked == doctest::Approx((0.10 + 0.05) / 2));
  CHECK(v.rows_fitted == 1);
  CHECK(v.mape_fitted == doctest::Approx(0.02));
  REQUIRE(v.worst.has_value());
  CHECK(v.worst->scenario == "a");
  CHECK(v.chain_max_points == doctest::Approx(2.0));
  REQUIRE(v.gains.size() == 2);
  CHECK(v.gains[0].published == doctest::Approx(0.05));
  CHECK(v.gains[0].predicted == doctest::Approx(0.04));
  CHECK(v.gains[1].step == 2);
  CHECK(v.gain_max_points == doctest::Approx(1.0));
}
