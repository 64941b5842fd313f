// The bands' coverage held out (plan/held_out.h): each source's rows scored with its refit's
// errors against bands from the other rows under the same refit, worked by hand; a missing,
// stale or malformed file leaves it undrawn with the reason (never an error).
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "plan/held_out.h"
#include "plan/validate.h"

using namespace megasim::plan;
namespace fs = std::filesystem;

namespace {

ValidationRow row(const std::string& scenario, const std::string& run, double predicted) {
  ValidationRow r;
  r.scenario = scenario;
  r.run = run;
  r.metric = "iteration_time_s";
  r.role = "check";
  r.family = "megatron-lm";
  r.gpus = 256;
  r.published = 10.0;
  r.predicted = predicted;
  return r;
}

// Four publications, a row each (a band needs three rows); today a is 2 % slow, b 2 % fast,
// c right, d 1 % slow.
std::vector<ValidationRow> rows() {
  return {row("a", "p1-x", 10.2), row("b", "p2-x", 9.8), row("c", "p3-x", 10.0),
          row("d", "p4-x", 10.1)};
}

const char* kRows = R"("rows": [{"scenario": "a", "today_error": 0.02},
                                 {"scenario": "b", "today_error": -0.02},
                                 {"scenario": "c", "today_error": 0.0},
                                 {"scenario": "d", "today_error": 0.01}])";
const char* kFolds = R"("folds": {"p1": {"a": 0.01, "b": -0.03, "c": 0.01, "d": 0.0},
                                   "p2": {"a": 0.02, "b": -0.05, "c": 0.03, "d": 0.02},
                                   "p3": {"a": 0.0, "b": -0.01, "c": 0.03, "d": -0.02},
                                   "p4": {"a": 0.01, "b": 0.0, "c": 0.02, "d": 0.05}})";

struct File {
  fs::path path = fs::temp_directory_path() / ("megasim_held_out_" + std::to_string(::getpid())) /
                  "leave_one_source_out.json";
  explicit File(const std::string& text) {
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
  }
  ~File() { fs::remove_all(path.parent_path()); }
};

std::string doc(const std::string& rows, const std::string& folds, const std::string& fit = "[]") {
  return "{" + rows + ", " + folds + ", \"fit_rows\": " + fit + "}";
}

}  // namespace

TEST_CASE("held out: each source's rows against the other rows of the same refit") {
  // Fold p1 scores a (+1 %) against b, c and d under p1's refit, [-3 %, +1 %]: inside, width
  // 4 %. Fold p2 scores b (-5 %) against [+2 %, +3 %]: outside, width 1 %. Fold p3 scores c
  // (+3 %) against [-2 %, 0]: outside, width 2 %. Fold p4 scores d (+5 %) against [0, +2 %]:
  // outside, width 2 %. One of four, median width 2 %.
  const File f(doc(kRows, kFolds));
  const HeldOutCoverage h = held_out_coverage(f.path, rows());
  REQUIRE_MESSAGE(h.bands, h.note);
  CHECK(h.bands->rows == 4);
  CHECK(h.bands->covered == 1);
  CHECK(h.bands->median_width == doctest::Approx(0.02));
  // Named by folder and name, the same in every checkout.
  CHECK(h.file == f.path.parent_path().filename().string() + "/leave_one_source_out.json");
  // In sample (today's residuals, +2, -2, 0, +1 %): a's band [-2 %, +1 %] misses it, b's
  // [0, +2 %] misses it, c's and d's [-2 %, +2 %] hold theirs; widths 3, 2, 4 and 4 %.
  std::vector<ResidualRow> today;
  for (const auto& r : rows()) today.push_back(r.residual());
  CHECK(band_coverage(today).covered == 2);
  CHECK(band_coverage(today).median_width == doctest::Approx(0.035));
  // A fold of a source none of whose rows is scored (p9, say, its rows left out by --scenarios
  // and the file edited to match) is nobody's held-out prediction: passed over, even partial.
  const File partial(doc(
      kRows, std::string(kFolds).insert(std::string(kFolds).size() - 1, R"(, "p9": {"a": 0.5})")));
  const HeldOutCoverage p = held_out_coverage(partial.path, rows());
  REQUIRE_MESSAGE(p.bands, p.note);
  CHECK(p.bands->rows == 4);
  CHECK(p.bands->covered == 1);
}

TEST_CASE("held out: a file that is not today's leaves the coverage undrawn, saying why") {
  HeldOutCoverage h = held_out_coverage("/nonexistent/leave_one_source_out.json", rows());
  CHECK_FALSE(h.bands);
  CHECK(h.note.find("is not there (it is looked for beside the runs file)") != std::string::npos);
  const std::pair<std::string, std::string> cases[] = {
      // b's error today is -2 %; the file was written at -3 %.
      {doc(R"("rows": [{"scenario": "a", "today_error": 0.02},
                       {"scenario": "b", "today_error": -0.03},
                       {"scenario": "c", "today_error": 0.0},
                       {"scenario": "d", "today_error": 0.01}])",
           kFolds),
       "is not today's (b: error -0.030000000000 there, -0.020000000000 today)"},
      {doc(R"("rows": [{"scenario": "a", "today_error": 0.02},
                       {"scenario": "b", "today_error": -0.02},
                       {"scenario": "d", "today_error": 0.01}])",
           kFolds),
       "has no row for c"},
      {doc(R"("rows": [{"scenario": "a", "today_error": 0.02},
                       {"scenario": "b", "today_error": -0.02},
                       {"scenario": "c", "today_error": 0.0},
                       {"scenario": "d", "today_error": 0.01},
                       {"scenario": "ghost", "today_error": 0.0}])",
           kFolds),
       "holds a row for ghost, which validate does not score"},
      {doc(kRows, R"("folds": {"p1": {"a": 0.01, "b": -0.03, "c": 0.01, "d": 0.0},
                               "p2": {"a": 0.02, "b": -0.05, "c": 0.03, "d": 0.02},
                               "p4": {"a": 0.01, "b": 0.0, "c": 0.02, "d": 0.05}})"),
       "has no fold for source p3"},
      {doc(kRows, R"("folds": {"p1": {"a": 0.01, "b": -0.03, "d": 0.0},
                               "p2": {"a": 0.02, "b": -0.05, "c": 0.03, "d": 0.02},
                               "p3": {"a": 0.0, "b": -0.01, "c": 0.03, "d": -0.02},
                               "p4": {"a": 0.01, "b": 0.0, "c": 0.02, "d": 0.05}})"),
       "has no error for c in fold p1"},
      {doc(kRows, kFolds, R"(["a"])"), "was refitted from other fit rows than today's"},
      // A fit row validate no longer scores, on the whole set: stale too.
      {doc(kRows, kFolds, R"(["ghost"])"), "was refitted from other fit rows than today's"}};
  for (const auto& [text, fragment] : cases) {
    CAPTURE(fragment);
    const File f(text);
    h = held_out_coverage(f.path, rows());
    CHECK_FALSE(h.bands);
    CHECK(h.note.find(fragment) != std::string::npos);
    CHECK(h.note.find("re-run scripts/leave_one_source_out.py") != std::string::npos);
  }
}

TEST_CASE("held out: a validation of some of the scenarios is not told to re-run the script") {
  // validate --scenarios on a folder of a few: the file holds rows (ghost) and fit rows it does
  // not score; that is no staleness, but its folds rest on the whole set, so no bands.
  const File f(doc(R"("rows": [{"scenario": "a", "today_error": 0.02},
                               {"scenario": "b", "today_error": -0.02},
                               {"scenario": "c", "today_error": 0.0},
                               {"scenario": "d", "today_error": 0.01},
                               {"scenario": "ghost", "today_error": 0.0}])",
                   kFolds, R"(["ghost"])"));
  const HeldOutCoverage h = held_out_coverage(f.path, rows(), nullptr, false);
  CHECK_FALSE(h.bands);
  CHECK(h.note.find("holds 1 row(s) this validation does not score (a subset of the scenarios)") !=
        std::string::npos);
  CHECK(h.note.find("re-run") == std::string::npos);
  // A fit row it scores that the file was not refitted with is still staleness.
  std::vector<ValidationRow> with_fit = rows();
  with_fit[0].role = "fit";
  const File g(doc(kRows, kFolds, R"(["ghost"])"));
  const HeldOutCoverage s = held_out_coverage(g.path, with_fit, nullptr, false);
  CHECK_FALSE(s.bands);
  INFO(s.note);
  CHECK(s.note.find("was refitted from other fit rows than today's") != std::string::npos);
}

TEST_CASE("held out: a file not of the script's shape is named with its JSON path, not refused") {
  // validate must still run (the script that rewrites the file runs it), so this is a note.
  const std::pair<std::string, std::string> cases[] = {
      {R"({"rows": 3})", "leave_one_source_out.json: rows: missing, or not an array"},
      {doc(R"("rows": [{"today_error": 0.1}])", kFolds), "rows[0].scenario: missing"},
      {doc(R"("rows": [{"scenario": "a", "today_error": -1.0}])", kFolds),
       "rows[0].today_error: missing, or not a number above -1"},
      {doc(R"("rows": [{"scenario": "a", "today_error": 0.1}, {"scenario": "a", "today_error": 0.1}])",
           kFolds),
       "rows[1].scenario: 'a' given twice"},
      {doc(kRows, R"("folds": {"p1": {"a": "x"}})"), "folds.p1.a: missing, or not a number"},
      {doc(kRows, kFolds, "[3]"), "fit_rows[0]: not a string"},
      {"{", ""}};
  for (const auto& [text, fragment] : cases) {
    CAPTURE(text);
    const File f(text);
    const HeldOutCoverage h = held_out_coverage(f.path, rows());
    CHECK_FALSE(h.bands);
    CHECK(h.note.find(fragment) != std::string::npos);
    CHECK(h.note.find("re-run scripts/leave_one_source_out.py") != std::string::npos);
  }
}
