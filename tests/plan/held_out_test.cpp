// The bands' coverage held out (plan/held_out.h): residuals read from the leave-one-source-out
// file, worked by hand; a missing or stale file leaves it undrawn with the reason, a malformed
// one is refused naming its JSON path.
#include <doctest/doctest.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "engine/error.h"
#include "plan/held_out.h"
#include "plan/validate.h"

using namespace megasim::plan;
namespace fs = std::filesystem;

namespace {

ValidationRow row(const std::string& scenario, const std::string& run, double published,
                  double predicted) {
  ValidationRow r;
  r.scenario = scenario;
  r.run = run;
  r.metric = "iteration_time_s";
  r.role = "check";
  r.family = "megatron-lm";
  r.gpus = 256;
  r.published = published;
  r.predicted = predicted;
  return r;
}

// Three publications, one row each. Today: a +2 %, b −2 %, c 0 %: each row's band is its two
// others' range, so a's is [−0.02, 0] (a outside), b's [0, 0.02] (outside), c's [−0.02, 0.02]
// (inside): 1 of 3.
std::vector<ValidationRow> rows() {
  return {row("a", "p1-x", 10.0, 10.2), row("b", "p2-x", 10.0, 9.8), row("c", "p3-x", 10.0, 10.0)};
}

fs::path write(const std::string& text) {
  const fs::path file =
      fs::temp_directory_path() / ("megasim_held_out_" + std::to_string(::getpid()) + ".json");
  std::ofstream(file) << text;
  return file;
}

std::string entry(const std::string& scenario, double error, double today) {
  return "{\"scenario\": \"" + scenario + "\", \"error\": " + std::to_string(error) +
         ", \"today_error\": " + std::to_string(today) + "}";
}

}  // namespace

TEST_CASE("held out: each row and its band's rows take the refitted errors") {
  // Held out, a is +1 %, b −5 %, c +3 %: a's band from b and c is [−0.05, 0.03] (a inside),
  // b's [0.01, 0.03] (outside), c's [−0.05, 0.01] (outside): 1 of 3, and the bands wider.
  const auto file = write("{\"rows\": [" + entry("a", 0.01, 0.02) + ", " +
                          entry("b", -0.05, -0.02) + ", " + entry("c", 0.03, 0.0) + "]}");
  const HeldOutCoverage h = held_out_coverage(file, rows());
  fs::remove(file);
  REQUIRE(h.bands);
  CHECK(h.bands->rows == 3);
  CHECK(h.bands->covered == 1);
  // Widths 0.08, 0.02, 0.06: the median 0.06.
  CHECK(h.bands->median_width == doctest::Approx(0.06));
  // Today's bands for the same rows: widths 0.02, 0.02, 0.04.
  CHECK(band_coverage({rows()[0].residual(), rows()[1].residual(), rows()[2].residual()})
            .median_width == doctest::Approx(0.02));
}

TEST_CASE("held out: a missing or stale file leaves the coverage undrawn, saying why") {
  HeldOutCoverage h = held_out_coverage("/nonexistent/leave_one_source_out.json", rows());
  CHECK_FALSE(h.bands);
  CHECK(h.note.find("is not there") != std::string::npos);
  // b's error today is −2 %; the file was written when it was −3 %.
  auto file = write("{\"rows\": [" + entry("a", 0.01, 0.02) + ", " + entry("b", -0.05, -0.03) +
                    ", " + entry("c", 0.03, 0.0) + "]}");
  h = held_out_coverage(file, rows());
  CHECK_FALSE(h.bands);
  CHECK(h.note.find("not today's (b: error -0.0300 there, -0.0200 today)") != std::string::npos);
  // A row it lacks.
  std::ofstream(file) << "{\"rows\": [" + entry("a", 0.01, 0.02) + ", " + entry("b", -0.05, -0.02) +
                             "]}";
  h = held_out_coverage(file, rows());
  CHECK_FALSE(h.bands);
  CHECK(h.note.find("has no row for c") != std::string::npos);
  fs::remove(file);
}

TEST_CASE("held out: a file not of the script's shape is refused with its JSON path") {
  const std::pair<std::string, std::string> cases[] = {
      {"{\"rows\": 3}", ": rows: missing, or not an array"},
      {"{\"rows\": [{\"error\": 0.1, \"today_error\": 0.1}]}", "rows[0].scenario: missing"},
      {"{\"rows\": [{\"scenario\": \"a\", \"error\": -1.0, \"today_error\": 0.1}]}",
       "rows[0].error: missing, or not a number above -1"},
      {"{\"rows\": [{\"scenario\": \"a\", \"error\": 0.1}]}", "rows[0].today_error: missing"},
      {"{\"rows\": [" + entry("a", 0.1, 0.1) + ", " + entry("a", 0.1, 0.1) + "]}",
       "rows[1].scenario: 'a' given twice"}};
  for (const auto& [text, fragment] : cases) {
    CAPTURE(text);
    const auto file = write(text);
    try {
      (void)held_out_coverage(file, rows());
      FAIL("accepted");
    } catch (const megasim::InputError& e) {
      CHECK(std::string(e.what()).find(fragment) != std::string::npos);
      CHECK(std::string(e.what()).find(file.string()) != std::string::npos);
    }
    fs::remove(file);
  }
}
