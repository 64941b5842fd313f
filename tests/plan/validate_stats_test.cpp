// The statistics `megasim validate` prints, on rows worked by hand.
#include <doctest/doctest.h>

#include "plan/validate.h"

using megasim::plan::measurement_key;
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

TEST_CASE("validate: a row's measurement is its run's configuration, MFU and step time as one") {
  // A run's step time and MFU are one measurement; Korthikanti's run names two configurations
  // in its metrics; a chain's steps are one each; a row naming another run takes its measurement.
  CHECK(measurement_key("r", "iteration_time_s", -1) == measurement_key("r", "mfu", -1));
  CHECK(measurement_key("r", "iteration_time_s_full_recompute", -1) == "r #full_recompute");
  CHECK(measurement_key("r", "mfu_bf16", -1) == measurement_key("r", "tflops_per_gpu", -1));
  CHECK(measurement_key("r", "iteration_time_s_full_recompute", -1) !=
        measurement_key("r", "iteration_time_s_sp_selective", -1));
  CHECK(measurement_key("r", "tflops_per_gpu_hw", -1) == "r");
  CHECK(measurement_key("chain", "mfu", 8) == "chain step 8");
  CHECK(measurement_key("chain", "mfu", 8, "r") == measurement_key("r", "mfu", -1));
  // In coverage: a measurement whose two rows lie one inside and one outside counts a half.
  std::vector<ValidationRow> rows = {
      {"a1", "ra", "iteration_time_s", "check", -1, 10.0, 10.1, "m", 8, "pa"},  // +1 %
      {"a2", "ra", "mfu", "check", -1, 0.5, 0.4, "m", 8, "pa"},                 // +25 %
      {"b", "rb", "iteration_time_s", "check", -1, 10.0, 10.2, "m", 8, "pb"},   // +2 %
      {"c", "rc", "iteration_time_s", "check", -1, 10.0, 9.9, "m", 8, "pc"},    // −1 %
      {"d", "rd", "iteration_time_s", "check", -1, 10.0, 9.9, "m", 8, "pd"},    // −1 %
  };
  const auto v = summarise(rows);
  CHECK(v.bands.rows == 5);
  CHECK(v.bands.measurements == 4);
  // a1, b, c and d lie in the others' bands; a2 (+25 %) does not.
  CHECK(v.bands.covered == 4);
  CHECK(v.bands.measurements_covered == doctest::Approx(3.5));
}
