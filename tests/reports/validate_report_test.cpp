// validate's text report: statistics of no rows are said to be none.
#include <doctest/doctest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "plan/validate.h"
#include "reports/validate_report.h"

using megasim::plan::Validation;
using megasim::plan::ValidationRow;

TEST_CASE("validate text: no chain and no band are said, not printed as zeros") {
  // A folder of one Korthikanti row: until 2026-12-04 it printed "largest difference 0.0 MFU
  // points" for chains it did not hold and "0 of 0 rows inside theirs".
  Validation v;
  ValidationRow r;
  r.scenario = "korthikanti-22b-full";
  r.run = "korthikanti-22b-full";
  r.metric = "mfu";
  r.role = "check";
  r.family = "megatron-lm";
  r.source = "Korthikanti et al. 2022";
  r.gpus = 8;
  r.published = 0.40;
  r.predicted = 0.41;
  v.rows.push_back(r);
  v.rows_checked = 1;
  v.mape_checked = 0.025;
  const std::string t = megasim::reports::validate_text(v);
  CHECK(t.find("ablation chains: none among these rows") != std::string::npos);
  CHECK(t.find("error bands: none drawn") != std::string::npos);
  CHECK(t.find("largest difference 0.0") == std::string::npos);
  CHECK(t.find("0 of 0 rows") == std::string::npos);

  v.gains.push_back({"megascale-ablation", 1, 0.046, 0.037});
  v.gain_max_points = 0.9;
  v.bands.rows = 2;
  v.bands.covered = 1;
  const std::string with = megasim::reports::validate_text(v);
  CHECK(with.find("largest difference of a step's gain 0.9 points") != std::string::npos);
  CHECK(with.find("1 of 2 rows inside theirs") != std::string::npos);
  // A gain's difference that rounds to nothing reads +0.0, never -0.0 (a published gain of
  // 0.0124 points predicted as 0.0123 printed "-0.0 pt" until 2026-12-06).
  v.gains.push_back({"megascale-ablation", 7, 0.000124, 0.000123});
  const std::string tiny = megasim::reports::validate_text(v);
  CHECK(tiny.find("-0.0 pt") == std::string::npos);
  CHECK(tiny.find("+0.0 pt         +0.0 pt     +0.0 pt") != std::string::npos);
}

TEST_CASE("validate text and JSON: chain rows without two consecutive steps, and no checked row") {
  // A folder of MegaScale's Table 3 steps 0, 2 and 5 (a user's trial of 2026-12-05): it said
  // "mape 0.0 % over 0 checked rows" and "ablation chains: none among these rows", while the
  // JSON held the chain's largest difference.
  Validation v;
  for (int step : {0, 2, 5}) {
    ValidationRow r;
    r.scenario = "megascale-ablation-" + std::to_string(step);
    r.run = "megascale-ablation";
    r.metric = "mfu";
    r.role = "check";
    r.family = "megascale";
    r.step = step;
    r.published = 0.5;
    r.predicted = 0.54;
    v.rows.push_back(r);
  }
  v.chain_max_points = 4.0;
  const std::string t = megasim::reports::validate_text(v);
  CHECK(t.find("mape: none (no checked row)") != std::string::npos);
  CHECK(t.find("largest difference 4.0 MFU points (no two consecutive steps") != std::string::npos);
  CHECK(t.find("none among these rows") == std::string::npos);
  const auto j = nlohmann::json::parse(megasim::reports::validate_json(v));
  CHECK(j["mape"].is_null());
  CHECK(j["mape_fit_rows"].is_null());
  CHECK(j["chain_max_error_points"].get<double>() == doctest::Approx(4.0));
  CHECK(j["chain_max_gain_error_points"].is_null());
}
