// The search table's "why" column on plans set by hand.
#include <doctest/doctest.h>

#include <string>

#include "plan/search.h"
#include "reports/search_report.h"

using namespace megasim;

namespace {

plan::RankedPlan ranked(const std::string& key, double compute, double bubble) {
  plan::RankedPlan p;
  p.candidate.key = "gpus=64 " + key;
  p.candidate.plan.tp = 8;
  p.candidate.plan.dp = 8;
  p.candidate.plan.global_batch = 64;
  plan::StepFigures f;
  f.breakdown.compute = Time::from_seconds(compute);
  f.breakdown.bubble = Time::from_seconds(bubble);
  f.step_time = f.breakdown.compute + f.breakdown.bubble;
  f.tokens_per_s = 1.0;
  p.analytic = f;
  p.event = f;
  p.objective = f.step_time.to_seconds();
  return p;
}

}  // namespace

TEST_CASE("report: search's why names the part that grew, and the one that shrank beside it") {
  // A plan 0.1 s slower whose compute grew 0.35 s and whose bubble shrank 0.25 s: the column
  // read "+0.350 s compute" alone until 2026-12-05, more than the plan loses.
  plan::SearchResult r;
  r.gpus = {64};
  r.ranked = {ranked("best", 5.0, 0.5), ranked("shifted", 5.35, 0.25), ranked("grown", 5.0, 0.6)};
  r.analytic = r.ranked;
  const std::string text = reports::search_text(r);
  INFO(text);
  CHECK(text.find("+0.350 s compute, -0.250 s bubble") != std::string::npos);
  // Where nothing shrank, the part that grew alone.
  CHECK(text.find("+0.100 s bubble\n") != std::string::npos);
}
