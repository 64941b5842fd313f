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

TEST_CASE("report: search's seconds keep three significant digits on a small model's steps") {
  // Steps of 1.3 and 1.7 ms read 0.001 and 0.002 s, and their difference "+0.000 s", until
  // 2026-12-06; at 5 s and more the table keeps its three decimals.
  plan::SearchResult r;
  r.gpus = {64};
  r.ranked = {ranked("best", 0.0013, 0.0), ranked("slow", 0.0013, 0.0004)};
  r.analytic = r.ranked;
  std::string text = reports::search_text(r);
  INFO(text);
  CHECK(text.find(" 0.00130 ") != std::string::npos);
  CHECK(text.find(" 0.00170 ") != std::string::npos);
  CHECK(text.find("+0.00040 s bubble\n") != std::string::npos);

  r.ranked = {ranked("best", 5.0, 0.5), ranked("grown", 5.0, 0.6)};
  text = reports::search_text(r);
  CHECK(text.find(" 5.500 ") != std::string::npos);
  CHECK(text.find("+0.100 s bubble\n") != std::string::npos);
}

TEST_CASE("report: search's header says where the scenario's own plan is a count's best") {
  plan::SearchResult r;
  r.gpus = {8, 16};
  r.ranked = {ranked("best", 1.0, 0.0), ranked("own", 1.2, 0.0), ranked("runner-up", 1.21, 0.0)};
  r.analytic = r.ranked;
  r.scenario_plan_rank = 1;
  r.scenario_plan_added = true;
  r.count_bests_added = 1;
  r.count_plans_added = 1;
  std::string text = reports::search_text(r);
  INFO(text);
  // One plan added at one count read "the best of 1 more GPU count" though it was a runner-up.
  CHECK(text.find("the best of 1 more GPU count") != std::string::npos);
  r.scenario_plan_count_best = true;
  text = reports::search_text(r);
  CHECK(text.find("the best of 1 more GPU count") == std::string::npos);
  CHECK(text.find("1 plan of 1 more GPU count: each count's plans within 2 % of its best by "
                  "estimate, the scenario's own plan being that count's best") !=
        std::string::npos);
}

TEST_CASE("report: search's why keeps the sign of an MFU loss that rounds to nothing") {
  // A plan 0.03 points of MFU behind the best read "+0.0 pt MFU" until 2026-12-06.
  plan::SearchResult r;
  r.gpus = {64};
  r.objective = plan::Objective::kMfu;
  r.ranked = {ranked("best", 5.0, 0.5), ranked("close", 5.0, 0.5)};
  r.ranked[0].event->mfu = 0.42644;
  r.ranked[1].event->mfu = 0.42614;
  r.ranked[0].objective = -0.42644;
  r.ranked[1].objective = -0.42614;
  r.analytic = r.ranked;
  const std::string text = reports::search_text(r);
  INFO(text);
  CHECK(text.find("-0.03 pt MFU") != std::string::npos);
  CHECK(text.find("+0.0 pt MFU") == std::string::npos);
}
