#include "reports/search_report.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "reports/json_text.h"
#include "reports/number_text.h"
#include "reports/plan_json.h"

namespace megasim::reports {
namespace {

// The objective as a user reads it: the search minimises, so it ranks MFU by its negative.
double shown_objective(plan::Objective o, double ranked_value) {
  return o == plan::Objective::kMfu ? -ranked_value : ranked_value;
}

// How an objective is written: its unit in --json, and for the run objectives a column of the
// text table (time to train in days, cost in USD, IT energy in MWh: the value over `scale`,
// with `digits` decimals); the step time and the MFU have their columns already.
struct ObjectiveUnits {
  const char* json_unit;
  const char* column = "";
  double scale = 1.0;
  int digits = 0;
};
ObjectiveUnits objective_units(plan::Objective o) {
  switch (o) {
    case plan::Objective::kStepTime:
      return {"s"};
    case plan::Objective::kMfu:
      return {"fraction of the peak"};
    case plan::Objective::kTimeToTrain:
      return {"s", "days", 86400.0, 2};
    case plan::Objective::kCost:
      return {"USD", "USD", 1.0, 0};
    case plan::Objective::kEnergy:
      return {"J", "IT MWh", 3.6e9, 1};
  }
  return {""};
}
std::string objective_cell(plan::Objective o, double value) {
  const ObjectiveUnits u = objective_units(o);
  if (*u.column == '\0') return std::string();
  // Three significant digits where the column's decimals keep fewer: a small job's energy read
  // "0.0" MWh and its cost "4" USD beside "+3.9 % energy" (until 2026-12-06).
  const double v = value / u.scale;
  if (v != 0.0 && std::abs(v) < std::pow(10.0, 2 - u.digits)) return fmt::format(" {:>9.3g}", v);
  return fmt::format(" {:>9.{}f}", v, u.digits);
}

// The GPU counts searched that no feasible plan has.
std::vector<std::int64_t> gpus_without_plans(const plan::SearchResult& r) {
  std::vector<std::int64_t> out;
  for (const auto g : r.gpus) {
    const bool any =
        std::any_of(r.analytic.begin(), r.analytic.end(),
                    [g](const plan::RankedPlan& p) { return p.candidate.plan.gpus() == g; });
    if (!any) out.push_back(g);
  }
  return out;
}

// Every part of a step's breakdown is carried here: a new part must be added below too.
static_assert(sizeof(step::Breakdown) == 9 * sizeof(Time),
              "step::Breakdown changed: carry the new part in parts()");

// Analytic estimates listed besides the event-level ranking.
constexpr std::size_t kAnalyticListed = 20;

// The breakdown's parts, named as breakdown_json names them.
std::array<std::pair<const char*, Time>, 9> parts(const step::Breakdown& b) {
  return {{{"compute", b.compute},
           {"slowest_gpu", b.slowest_gpu},
           {"power_cap", b.power_cap},
           {"tp_exposed", b.tp_exposed},
           {"pp_exposed", b.pp_exposed},
           {"dp_exposed", b.dp_exposed},
           {"bubble", b.bubble},
           {"optimizer", b.optimizer},
           {"other", b.other}}};
}

// Decimals of the seconds a text table prints: three, and more where the shortest step simulated
// is under a tenth of a second, so it keeps three significant digits (a small model's steps read
// 0.001 s, and its differences "+0.000 s" beside a 31 % slower plan, until 2026-12-06).
int time_digits(const plan::SearchResult& r) {
  double shortest = 0.0;
  for (const auto& p : r.ranked) {
    const double s = p.event ? p.figures().step_time.to_seconds() : 0.0;
    if (s > 0.0 && (shortest == 0.0 || s < shortest)) shortest = s;
  }
  if (shortest == 0.0) return 3;
  return std::clamp(2 - static_cast<int>(std::floor(std::log10(shortest))), 3, 9);
}

// The part of a plan's step that grew most against the best's, in seconds; and where other
// parts shrank by more than a fifth of it, the one that shrank most (a +0.096 s step read
// "+0.354 s compute" alone until 2026-12-05, its 0.26 s less bubble unsaid).
std::string grown_part(const plan::RankedPlan& p, const plan::RankedPlan& best, int digits) {
  const auto mine = parts(p.figures().breakdown);
  const auto theirs = parts(best.figures().breakdown);
  const auto delta = [&](std::size_t i) {
    return (mine[i].second - theirs[i].second).to_seconds();
  };
  std::size_t worst = 0, most_saved = 0;
  for (std::size_t i = 1; i < mine.size(); ++i) {
    if (delta(i) > delta(worst)) worst = i;
    if (delta(i) < delta(most_saved)) most_saved = i;
  }
  std::string t = fmt::format("{:+.{}f} s {}", delta(worst), digits, mine[worst].first);
  const double step = (p.figures().step_time - best.figures().step_time).to_seconds();
  if (delta(worst) - step > 0.2 * delta(worst) && delta(most_saved) < 0.0) {
    t += fmt::format(", {:+.{}f} s {}", delta(most_saved), digits, mine[most_saved].first);
  }
  return t;
}

// Why a plan ranks below the best. By step time (and time to train, at the search's one batch)
// a longer step: its part that grew most. By MFU, cost or energy the objective's own
// difference first, then what made it: a longer step on as many GPUs, or another GPU count
// (a faster plan on twice the GPUs can cost more).
std::string why(const plan::RankedPlan& p, const plan::RankedPlan& best, plan::Objective o,
                int digits) {
  if (&p == &best) return "best";
  if (o == plan::Objective::kStepTime || o == plan::Objective::kTimeToTrain) {
    return grown_part(p, best, digits);
  }
  std::string t =
      o == plan::Objective::kMfu
          ? signed_small(100.0 * (p.figures().mfu - best.figures().mfu)) + " pt MFU"
          : fmt::format("{} % {}", signed_small(100.0 * (p.objective / best.objective - 1.0)),
                        o == plan::Objective::kCost ? "cost" : "energy");
  const std::int64_t gpus = p.candidate.plan.gpus(), best_gpus = best.candidate.plan.gpus();
  if (gpus != best_gpus) {
    t += fmt::format(", {} GPUs against {}", gpus, best_gpus);
  } else if (p.figures().step_time > best.figures().step_time) {
    t += ", " + grown_part(p, best, digits);
  }
  return t;
}

std::string label(const plan::Candidate& c) {
  // The canonical key without its GPU count (a column of its own).
  const auto space = c.key.find(' ');
  return space == std::string::npos ? c.key : c.key.substr(space + 1);
}

nlohmann::json figures_json(const plan::StepFigures& f) {
  return {{"step_time_s", f.step_time.to_seconds()},
          {"mfu", f.mfu},
          {"tokens_per_s", f.tokens_per_s},
          {"breakdown_s", breakdown_json(f.breakdown)}};
}

}  // namespace

std::string search_json(const plan::SearchResult& r) {
  nlohmann::json pruned = nlohmann::json::object();
  for (std::size_t i = 0; i < plan::kPruneNames.size(); ++i)
    pruned[plan::kPruneNames[i]] = r.space.pruned[i];
  nlohmann::json ranked = nlohmann::json::array();
  for (const auto& p : r.ranked) {
    nlohmann::json row = {{"key", p.candidate.key},
                          {"hash", fmt::format("{:016x}", p.candidate.hash)},
                          {"plan", plan_json(p.candidate.plan)},
                          {"peak_memory_gib", p.candidate.peak_memory.value() / kGiB.value()},
                          {"memory_headroom_gib", p.candidate.headroom_gib()},
                          {"tight", p.candidate.tight()},
                          {"over_device", p.candidate.over()},
                          {"analytic", figures_json(p.analytic)}};
    if (p.event) {
      row.update(figures_json(*p.event));
      row["objective"] = shown_objective(r.objective, p.objective);
      row["why"] = why(p, r.ranked.front(), r.objective, time_digits(r));
      row["pareto_memory"] = p.pareto_memory;
      if (r.gpus.size() > 1) row["pareto_gpus"] = p.pareto_gpus;
    } else {
      row["refused"] = p.refused;
    }
    row["scenario_plan"] = p.scenario_plan;
    ranked.push_back(row);
  }
  nlohmann::json analytic = nlohmann::json::array();
  for (std::size_t i = 0; i < std::min(kAnalyticListed, r.analytic.size()); ++i) {
    const auto& p = r.analytic[i];
    analytic.push_back({{"key", p.candidate.key},
                        {"objective", shown_objective(r.objective, p.objective)},
                        {"step_time_s", p.analytic.step_time.to_seconds()},
                        {"mfu", p.analytic.mfu}});
  }
  nlohmann::json j = {
      {"scenario", r.scenario},
      {"objective", plan::to_string(r.objective)},
      {"objective_unit", objective_units(r.objective).json_unit},
      {"gpus", r.gpus},
      {"space", {{"size", r.space.size}, {"feasible", r.analytic.size()}, {"pruned", pruned}}},
      {"ranked", ranked},
      {"analytic_best", analytic}};
  j["scenario_plan_analytic_rank"] =
      r.scenario_plan_rank ? nlohmann::json(*r.scenario_plan_rank + 1) : nlohmann::json(nullptr);
  j["scenario_plan_outside_space"] = r.scenario_plan_outside.empty()
                                         ? nlohmann::json(nullptr)
                                         : nlohmann::json(r.scenario_plan_outside);
  j["scenario_plan_pruned"] = r.scenario_plan_pruned.empty()
                                  ? nlohmann::json(nullptr)
                                  : nlohmann::json(r.scenario_plan_pruned);
  j["scenario_plan_not_searched"] = r.scenario_plan_not_searched.empty()
                                        ? nlohmann::json(nullptr)
                                        : nlohmann::json(r.scenario_plan_not_searched);
  j["scenario_plan_beside"] = nullptr;
  if (r.scenario_plan_beside) {
    j["scenario_plan_beside"] = figures_json(*r.scenario_plan_beside);
    j["scenario_plan_beside"]["objective"] =
        shown_objective(r.objective, r.scenario_plan_beside_objective);
  }
  j["scenario_plan_beside_refused"] = r.scenario_plan_beside_refused.empty()
                                          ? nlohmann::json(nullptr)
                                          : nlohmann::json(r.scenario_plan_beside_refused);
  j["gpus_without_plans"] = gpus_without_plans(r);
  return json_text(j);
}

namespace {

// The search's header: its GPU counts and objective, the space and its pruning, how many plans
// ran event by event, and where the scenario's own plan ranks.
// Where the scenario's own plan stands: its rank by estimate, why it was pruned, or why the
// space does not hold it and, then, its step simulated beside the ranking.
std::string scenario_plan_line(const plan::SearchResult& r) {
  if (r.scenario_plan_rank) {
    return fmt::format("the scenario's own plan ranks {} of {} by estimate\n",
                       *r.scenario_plan_rank + 1, r.analytic.size());
  }
  if (!r.scenario_plan_pruned.empty()) {
    return "the scenario's own plan is pruned, as simulate refuses it: " + r.scenario_plan_pruned +
           "\n";
  }
  std::string t = "the scenario's own plan is not in the space searched";
  if (!r.scenario_plan_outside.empty()) {
    t += " (" + r.scenario_plan_outside + ": the space's plans have none)";
  } else if (!r.scenario_plan_not_searched.empty()) {
    t += " (" + r.scenario_plan_not_searched + ")";
  }
  t += "\n";
  if (!r.scenario_plan_beside_refused.empty()) {
    return t + "  not simulated beside the ranking, as simulate refuses it: " +
           r.scenario_plan_beside_refused + "\n";
  }
  if (!r.scenario_plan_beside) return t;
  const plan::StepFigures& f = *r.scenario_plan_beside;
  t += fmt::format("  simulated beside the ranking, event by event: step {:.{}f} s, MFU {:.1f} %",
                   f.step_time.to_seconds(), time_digits(r), 100.0 * f.mfu);
  // Against the best ranked plan of its own GPU count, in the objective ranked (the first plan's
  // step until a review of 2026-12-07 found it compared across GPU counts and objectives).
  const auto best = std::find_if(r.ranked.begin(), r.ranked.end(), [&](const auto& p) {
    return p.event && p.candidate.plan.gpus() == r.scenario_plan_gpus;
  });
  if (best != r.ranked.end()) {
    const double own = shown_objective(r.objective, r.scenario_plan_beside_objective);
    const double other = shown_objective(r.objective, best->objective);
    const std::string against =
        fmt::format("the best ranked plan of its {} GPUs", r.scenario_plan_gpus);
    t += r.objective == plan::Objective::kMfu
             ? fmt::format(" ({:+.1f} MFU points against {})", 100.0 * (own - other), against)
             : fmt::format(" ({:+.1f} % {} against {})", 100.0 * (own / other - 1.0),
                           plan::to_string(r.objective), against);
  }
  return t + "\n";
}

std::string search_header(const plan::SearchResult& r) {
  std::string gpus;
  for (const auto g : r.gpus) {
    if (!gpus.empty()) gpus.push_back(',');
    gpus += std::to_string(g);
  }
  // Every plan of the space takes the scenario's rank order (plan::PlanSpace).
  std::string t =
      fmt::format("search {}: {} GPU{}, objective {}{}\n", r.scenario, gpus, gpus == "1" ? "" : "s",
                  plan::to_string(r.objective), rank_order_suffix(r.rank_order));
  // A count of the list with no feasible plan would otherwise pass as one that lost.
  std::string none;
  for (const auto g : gpus_without_plans(r)) none += (none.empty() ? "" : ", ") + std::to_string(g);
  if (!none.empty()) {
    t += fmt::format(
        "no feasible plan at {} GPUs: every plan of that count is pruned (--gpus "
        "with that count alone gives the counts by cause)\n",
        none);
  }
  const auto refused = static_cast<std::size_t>(
      std::count_if(r.ranked.begin(), r.ranked.end(), [](const auto& p) { return !p.event; }));
  // The plans taken to the event level (the top by estimate, and the scenario's own where it is
  // not among them), then how many of them ran and how many --max-events refused.
  std::vector<std::string> beside = {"the best by estimate"};
  if (r.scenario_plan_added) beside.push_back("the scenario's own plan");
  if (r.count_bests_added > 0) {
    const char* counts = r.count_bests_added == 1 ? "" : "s";
    if (r.count_plans_added == r.count_bests_added && !r.scenario_plan_count_best) {
      beside.push_back(fmt::format("the best of {} more GPU count{}", r.count_bests_added, counts));
    } else {
      // Where the scenario's own plan is its count's best, the plans added at that count are
      // its runners-up (the header called them the count's best until 2026-12-06).
      beside.push_back(fmt::format(
          "{} plan{} of {} more GPU count{}: each count's plans within {:g} % of its best by "
          "estimate{}",
          r.count_plans_added, r.count_plans_added == 1 ? "" : "s", r.count_bests_added, counts,
          plan::kCountSlack * 100.0,
          !r.scenario_plan_count_best ? ""
          : r.count_bests_added == 1  ? ", the scenario's own plan being that count's best"
                                      : ", the scenario's own plan being one count's best"));
    }
  }
  std::string which = beside.back();  // "a", "a and b", "a, b and c"
  if (beside.size() > 1) {
    which = fmt::format("{} and {}", fmt::join(beside.begin(), beside.end() - 1, ", "), which);
  }
  const std::string taken =
      beside.size() == 1 ? fmt::format("{} taken to the event level", r.ranked.size())
                         : fmt::format("{} taken to the event level ({})", r.ranked.size(), which);
  t += fmt::format(
      "space {} plan{}: pruned {} by cluster size, {} by heads, {} by divisibility, "
      "{} by memory; {} feasible, estimated; {}: {} simulated event by event{}\n",
      r.space.size, r.space.size == 1 ? "" : "s", r.space.pruned[0], r.space.pruned[1],
      r.space.pruned[2], r.space.pruned[3], r.analytic.size(), taken, r.ranked.size() - refused,
      refused > 0 ? fmt::format(", {} refused by --max-events", refused) : std::string());
  return t + scenario_plan_line(r);
}

}  // namespace

std::string search_text(const plan::SearchResult& r) {
  std::string t = search_header(r);
  const std::string column = objective_units(r.objective).column;
  t += fmt::format(
      "\n{:>4} {:>6} {:<66} {:>8} {:>6} {:>9}{} {:>8} {:>8} {:>7} {:>7} {:>7} {:>7} {:>7}  {:<4} "
      "{}\n",
      "rank", "GPUs", "plan", "step s", "MFU %", "tok/s",
      column.empty() ? "" : fmt::format(" {:>9}", column), "room GiB", "estim. s", "compute",
      "bubble", "tp exp", "pp exp", "dp exp", "P", "why");
  const int digits = time_digits(r);
  std::size_t rank = 0;
  for (const auto& p : r.ranked) {
    ++rank;
    if (!p.event) {
      t += fmt::format("{:>4} {:>6} {:<66} refused{}: {}\n", "-", p.candidate.plan.gpus(),
                       label(p.candidate), p.scenario_plan ? " (*, the scenario's own plan)" : "",
                       p.refused);
      continue;
    }
    const auto& f = *p.event;
    const auto& b = f.breakdown;
    std::string front;
    if (p.pareto_memory) front.push_back('m');
    if (p.pareto_gpus) front.push_back('g');
    if (p.scenario_plan) front.push_back('*');
    if (p.candidate.tight()) front.push_back('t');
    if (p.candidate.over()) front.push_back('o');
    const auto secs = [digits](Time x, int width) {
      return fmt::format("{:>{}.{}f}", x.to_seconds(), width, digits);
    };
    t += fmt::format(
        "{:>4} {:>6} {:<66} {} {:>6.1f} {:>9.0f}{} {:>8.1f} {} {} {} {} {} {}  {:<4} {}\n", rank,
        p.candidate.plan.gpus(), label(p.candidate), secs(f.step_time, 8), 100 * f.mfu,
        f.tokens_per_s, objective_cell(r.objective, p.objective), p.candidate.headroom_gib(),
        secs(p.analytic.step_time, 8), secs(b.compute, 7), secs(b.bubble, 7), secs(b.tp_exposed, 7),
        secs(b.pp_exposed, 7), secs(b.dp_exposed, 7), front,
        why(p, r.ranked.front(), r.objective, digits));
  }
  // The run-level objectives are the steps alone, failure-free (the labels said only "days",
  // "USD" and "IT MWh" until 2026-12-07).
  if (r.objective == plan::Objective::kTimeToTrain || r.objective == plan::Objective::kCost ||
      r.objective == plan::Objective::kEnergy) {
    t += "\nthe objective is failure-free: the run's whole steps at the step time (no "
         "evaluations, failures, planned stops, checkpoints or spares; simulate with run.tokens "
         "prices them)";
  }
  t += "\nP: on the Pareto front of tokens/s against memory headroom (m)";
  t += r.gpus.size() > 1 ? " and against the GPU count (g); " : "; ";
  t += "*: the scenario's own plan; t: tight, over the device only with the fragmentation "
       "margin (room GiB counts it)";
  const bool any_over = std::any_of(r.ranked.begin(), r.ranked.end(),
                                    [](const plan::RankedPlan& p) { return p.candidate.over(); });
  t += any_over ? "; o: over the device without the margin too, run by validation.allow_oom's "
                  "allowance\n"
                : "\n";
  // The columns a step's breakdown has beside these, and an FP8 plan's MFU, said (the columns
  // summed short of the step unexplained, and FP8's MFU read as over 100 %, until 2026-12-07).
  t += "compute to dp exp are the step's main terms; the slowest GPU, power cap, optimizer and "
       "other make up the rest (simulate prints them)\n";
  const bool any_fp8 = std::any_of(r.ranked.begin(), r.ranked.end(), [](const plan::RankedPlan& p) {
    return p.event && p.candidate.plan.fp8;
  });
  if (any_fp8) t += "MFU of a plan with FP8 GEMMs is of the 16-bit peak\n";
  return t;
}

}  // namespace megasim::reports
