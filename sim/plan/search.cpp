#include "plan/search.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <cmath>
#include <optional>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "engine/error.h"
#include "hw/kernel_cost_model.h"
#include "io/reliability_loader.h"
#include "net/topology.h"
#include "plan/assembly.h"
#include "plan/evaluate.h"
#include "step/step_model.h"

namespace megasim::plan {
namespace {

constexpr std::array<const char*, 5> kObjectiveNames{"step-time", "mfu", "time-to-train", "cost",
                                                     "energy"};

// IT energy of one step on the job, in joules: each activity's time at the GPUs' board power
// for it, and the nodes' overhead and the job's switches over the whole step.
double step_joules(const EnergyModel& e, const Candidate& c, const StepFigures& f) {
  const run::PowerInputs& w = e.power;
  const double per_gpu =
      f.gemm_time.to_seconds() * w.gpu_in(run::Activity::kGemm).value() +
      f.memory_bound_time.to_seconds() * w.gpu_in(run::Activity::kMemory).value() +
      f.comm_time.to_seconds() * w.gpu_in(run::Activity::kCommunication).value() +
      f.idle_time.to_seconds() * w.gpu_in(run::Activity::kIdle).value();
  const std::int64_t gpus = c.plan.gpus();
  assert(e.fabric != nullptr && "energy_model() gives the energy objective its fabric");
  const double rest = w.node_overhead.value() * run::node_share(gpus, e.gpus_per_node) +
                      w.per_switch.value() * job_switches(*e.fabric, gpus);
  return per_gpu * static_cast<double>(gpus) + rest * f.step_time.to_seconds();
}

// The step's event-level figures; zero (refused) when its work passes the limit.
StepFigures simulate(const io::Inputs& base, const net::Topology& topology,
                     const hw::KernelCostModel& kernels, const Candidate& c,
                     const WorkLimits& limits) {
  io::Inputs in = base;
  in.scenario.plan = c.plan;
  in.system = c.system;
  // Past the work bound: a zero step time, which the ranking lists as refused. Any other
  // refusal is an error of the search's input, and propagates.
  if (plan_passes(c.plan, false) > static_cast<double>(limits.max_events)) return {};
  const step::StepRequest request = assemble_step(in, topology);
  return figures_of(step::predict_step(request, topology, kernels, in.collective));
}

bool better(const RankedPlan& a, const RankedPlan& b) {
  if (a.objective != b.objective) return a.objective < b.objective;
  return a.candidate.key < b.candidate.key;
}

// Pareto fronts of the event-level ranking: tokens/s (higher) against memory headroom
// (higher), and against the GPU count (lower).
void mark_fronts(std::vector<RankedPlan>& plans, bool by_gpus) {
  auto dominated = [&plans](const RankedPlan& p, auto&& other_axis) {
    const double tput = p.figures().tokens_per_s;
    return std::any_of(plans.begin(), plans.end(), [&](const RankedPlan& o) {
      if (!o.event) return false;
      const double ot = o.figures().tokens_per_s;
      const auto [mine, theirs] = other_axis(p, o);  // higher is better
      return ot >= tput && theirs >= mine && (ot > tput || theirs > mine);
    });
  };
  for (RankedPlan& p : plans) {
    if (!p.event) continue;
    p.pareto_memory = !dominated(p, [](const RankedPlan& a, const RankedPlan& b) {
      return std::pair{shown_gib(a.candidate.headroom_gib()),
                       shown_gib(b.candidate.headroom_gib())};
    });
    if (by_gpus) {
      p.pareto_gpus = !dominated(p, [](const RankedPlan& a, const RankedPlan& b) {
        return std::pair{-static_cast<double>(a.candidate.plan.gpus()),
                         -static_cast<double>(b.candidate.plan.gpus())};
      });
    }
  }
}

}  // namespace

Objective objective_from_string(const std::string& name) {
  for (std::size_t i = 0; i < kObjectiveNames.size(); ++i) {
    if (name == kObjectiveNames[i]) return static_cast<Objective>(i);
  }
  throw InputError(
      fmt::format("--objective {}: expected step-time, mfu, time-to-train, cost or "
                  "energy",
                  name));
}

const char* to_string(Objective o) {
  return kObjectiveNames[static_cast<std::size_t>(o)];
}

StepFigures figures_of(const step::StepPrediction& p) {
  StepFigures f;
  f.step_time = p.step_time;
  f.breakdown = p.breakdown;
  f.tokens_per_s = p.tokens_per_s;
  f.mfu = p.mfu;
  f.gemm_time = p.gemm_time;
  f.memory_bound_time = p.memory_bound_time;
  f.comm_time = p.comm_only_time;
  f.idle_time = p.idle_time;
  return f;
}

EnergyModel energy_model(const io::Inputs& in, const net::Topology& topology) {
  EnergyModel e;
  e.power = io::power_for(in.scenario, in.device);
  e.gpus_per_node = in.cluster.node.gpus;
  e.fabric = &topology;
  return e;
}

double objective_value(Objective o, const io::Inputs& in, const Candidate& c, const StepFigures& f,
                       const EnergyModel& energy) {
  const double tokens = in.scenario.run.tokens.value_or(0.0);
  // Whole steps, as the run level counts them (run::steps_for; a fraction of one until
  // 2026-12-07, 0.66 % short at 10^8 tokens).
  const double tokens_per_step =
      static_cast<double>(c.plan.global_batch) * static_cast<double>(in.model.seq);
  const double steps = std::ceil(tokens / tokens_per_step);
  const double seconds = steps * f.step_time.to_seconds();
  switch (o) {
    case Objective::kStepTime:
      return f.step_time.to_seconds();
    case Objective::kMfu:
      return -f.mfu;
    case Objective::kTimeToTrain:
      return seconds;
    case Objective::kCost:
      return seconds / 3600.0 * static_cast<double>(c.plan.gpus()) *
             in.scenario.power.usd_per_gpu_hour.value_or(0.0);
    case Objective::kEnergy:
      return step_joules(energy, c, f) * steps;
  }
  return 0.0;
}

namespace {

void check_objective(const io::Inputs& in, const SearchOptions& o) {
  const bool needs_tokens = o.objective == Objective::kTimeToTrain ||
                            o.objective == Objective::kCost || o.objective == Objective::kEnergy;
  if (needs_tokens && !in.scenario.run.tokens) {
    throw InputError(fmt::format("{}: --objective {} needs run.tokens in the scenario",
                                 in.scenario.file.string(), to_string(o.objective)));
  }
  // A price of 0 makes every plan cost 0, and the ranking nothing but the order of the space.
  if (o.objective == Objective::kCost &&
      !(in.scenario.power.usd_per_gpu_hour.value_or(0.0) > 0.0)) {
    throw InputError(fmt::format("{}: --objective cost needs a power.usd_per_gpu_hour above 0",
                                 in.scenario.file.string()));
  }
  if (o.top_k < 1) throw InputError(fmt::format("--top {}: must be at least 1", o.top_k));
}

FigureMap gathered(const SearchShare& share, const FigureMap& mine) {
  return share.gather ? share.gather(mine) : mine;
}

// Plans this process takes of n: every size-th from its rank.
std::int64_t share_of(const SearchShare& share, std::int64_t n) {
  return (n - share.rank + share.size - 1) / share.size;
}

// Stage 1: every feasible plan in closed form, this process's share, then everyone's figures;
// r.analytic ends sorted by objective.
void analytic_stage(const io::Inputs& in, const SearchOptions& o, const SearchShare& share,
                    AnalyticEstimator& estimator, const EnergyModel& energy, SearchResult& r) {
  std::vector<Candidate>& plans = r.space.feasible;
  FigureMap mine;
  const auto n = static_cast<std::int64_t>(plans.size());
  std::int64_t done = 0;
  for (std::int64_t i = share.rank; i < n; i += share.size) {
    const Candidate& c = plans[static_cast<std::size_t>(i)];
    mine[c.hash] = estimator.estimate(c);
    if (share.progress) share.progress("analytic", ++done, share_of(share, n));
  }
  const FigureMap estimates = gathered(share, mine);
  for (Candidate& c : plans) {
    RankedPlan p;
    p.analytic = estimates.at(c.hash);
    p.objective = objective_value(o.objective, in, c, p.analytic, energy);
    p.candidate = std::move(c);
    r.analytic.push_back(std::move(p));
  }
  plans.clear();
  std::sort(r.analytic.begin(), r.analytic.end(), better);
  r.scenario_plan_outside = outside_space(in.scenario.plan, in.model.layers);
  if (!r.scenario_plan_outside.empty()) return;
  // The space writes alike plans once (space_alike).
  const std::string own = canonical_key(in.scenario.plan, in.system, in.system);
  const std::string own_alike = canonical_key(space_alike(in.scenario.plan), in.system, in.system);
  for (std::size_t i = 0; i < r.analytic.size(); ++i) {
    const std::string& key = r.analytic[i].candidate.key;
    if (key == own || key == own_alike) r.scenario_plan_rank = i;
  }
  // Not found at its own GPU count: pruned, by memory as simulate refuses it, or by --fix.
  if (!r.scenario_plan_rank &&
      std::find(r.gpus.begin(), r.gpus.end(), in.scenario.plan.gpus()) != r.gpus.end()) {
    try {
      assemble_workload(in);
    } catch (const InputError& e) {
      r.scenario_plan_pruned = e.what();
    }
  }
  if (!r.scenario_plan_rank && r.scenario_plan_pruned.empty())
    r.scenario_plan_not_searched = not_searched(in, o.space, r.gpus);
}

// The plans the event-level stage simulates, in order: the best top_k by estimate, the
// scenario's own plan when it is further down (so the ranking shows it beside the best), and
// with several GPU counts, for each count that has none among them, its best by estimate and
// the next ones within kCountSlack of it, of at most kCountShapes shapes (until 2026-12-05
// `--gpus 6144,12288` ranked 12,288-GPU plans only: the larger count's were all faster a step;
// until 2026-12-06 a count's best by estimate alone, which the estimate's misranking of plans a
// percent apart left 1.1 % slow: Korthikanti's 22B under `--gpus 8,16` against `--gpus 8`).
std::vector<std::size_t> event_plans(const SearchOptions& o, const SearchResult& r) {
  std::vector<std::size_t> out;
  const std::size_t k = std::min(r.analytic.size(), static_cast<std::size_t>(o.top_k));
  for (std::size_t i = 0; i < k; ++i) out.push_back(i);
  if (r.scenario_plan_rank && *r.scenario_plan_rank >= k) out.push_back(*r.scenario_plan_rank);
  if (r.gpus.size() < 2) return out;
  // A plan's shape: what it splits and recomputes. Plans of one shape (sequence parallelism,
  // the optimizer's sharding or an overlap switched) are near-copies the estimate ranks side by
  // side, so they count as one against kCountShapes.
  const auto shape = [](const workload::ParallelPlan& p) {
    return std::tuple(p.tp, p.cp, p.pp, p.vpp, p.dp, p.micro_batch, p.recompute);
  };
  for (const std::int64_t g : r.gpus) {
    const auto at_count = [g](const RankedPlan& p) { return p.candidate.plan.gpus() == g; };
    if (std::any_of(r.analytic.begin(), r.analytic.begin() + static_cast<std::ptrdiff_t>(k),
                    at_count)) {
      continue;
    }
    std::optional<double> best;
    std::set<decltype(shape(r.analytic.front().candidate.plan))> shapes;
    for (std::size_t i = k; i < r.analytic.size(); ++i) {
      const RankedPlan& p = r.analytic[i];
      if (!at_count(p)) continue;
      if (!best) best = p.objective;
      if (p.objective > *best + std::abs(*best) * kCountSlack) break;
      shapes.insert(shape(p.candidate.plan));
      if (shapes.size() > kCountShapes) break;  // a shape past the limit
      if (std::find(out.begin(), out.end(), i) == out.end()) out.push_back(i);
    }
  }
  return out;
}

// Stage 2: the best top_k event by event (those in o.done taken as they are), this process's
// share; everyone's figures returned.
FigureMap event_stage(const io::Inputs& in, const SearchOptions& o, const SearchShare& share,
                      const net::Topology& topology, const hw::KernelCostModel& kernels,
                      const SearchResult& r) {
  const std::vector<std::size_t> plans = event_plans(o, r);
  const auto k = static_cast<std::int64_t>(plans.size());
  FigureMap simulated;
  std::int64_t ran = 0, done = 0;
  for (std::int64_t i = share.rank; i < k; i += share.size) {
    const Candidate& c = r.analytic[plans[static_cast<std::size_t>(i)]].candidate;
    // Past the work bound, a plan read back is refused as one simulated would be: a resumed
    // search prints what the uninterrupted one does (it ranked read-back plans until
    // 2026-12-05).
    if (plan_passes(c.plan, false) > static_cast<double>(o.limits.max_events)) {
      simulated[c.hash] = {};
    } else if (auto it = o.done.find(c.hash); it != o.done.end()) {
      simulated[c.hash] = it->second;
    } else if (o.stop_after && ran >= *o.stop_after) {
      continue;
    } else {
      const StepFigures f = simulate(in, topology, kernels, c, o.limits);
      ++ran;
      simulated[c.hash] = f;
      // A refusal is not a result: not written, so that a search with a larger bound does it.
      if (o.on_simulated && f.step_time > Time::zero()) o.on_simulated(c, f);
    }
    if (share.progress) share.progress("event-level", ++done, share_of(share, k));
  }
  return gathered(share, simulated);
}

// The scenario's own plan beside the ranking, where the space does not hold it (every rank
// simulates it: one step, the same figures); named as refused where simulate refuses it.
void simulate_beside(const io::Inputs& in, const SearchOptions& o, const net::Topology& topology,
                     const hw::KernelCostModel& kernels, const EnergyModel& energy,
                     SearchResult& r) {
  const workload::ParallelPlan& own = in.scenario.plan;
  r.scenario_plan_gpus = own.gpus();
  if (r.scenario_plan_rank || !r.scenario_plan_pruned.empty() ||
      std::find(r.gpus.begin(), r.gpus.end(), own.gpus()) == r.gpus.end()) {
    return;
  }
  Candidate c;
  c.plan = own;
  c.system = in.system;
  try {
    const StepFigures f = simulate(in, topology, kernels, c, o.limits);
    if (f.step_time > Time::zero()) {
      r.scenario_plan_beside = f;
      r.scenario_plan_beside_objective = objective_value(o.objective, in, c, f, energy);
    }
  } catch (const InputError& e) {
    r.scenario_plan_beside_refused = e.what();  // as simulate refuses it (its memory)
  }
}

}  // namespace

void check_search_options(const io::Inputs& in, const SearchOptions& o) {
  check_objective(in, o);
  check_space(in, o.space);
}

SearchResult search(const io::Inputs& in, const SearchOptions& o, const SearchShare& share) {
  check_objective(in, o);
  SearchResult r;
  r.scenario = in.scenario.name;
  r.rank_order = in.scenario.plan.rank_order;
  r.objective = o.objective;
  r.space = enumerate_space(in, o.space);
  r.gpus = o.space.gpus.empty() ? std::vector<std::int64_t>{in.scenario.plan.gpus()} : o.space.gpus;
  const net::Topology topology(in.cluster);
  const hw::KernelCostModel kernels(in.device);
  AnalyticEstimator estimator(in, topology, kernels, o.limits.max_events);
  const EnergyModel energy =
      o.objective == Objective::kEnergy ? energy_model(in, topology) : EnergyModel{};
  analytic_stage(in, o, share, estimator, energy, r);
  const FigureMap events = event_stage(in, o, share, topology, kernels, r);

  const std::vector<std::size_t> simulated = event_plans(o, r);
  const std::size_t k = std::min(r.analytic.size(), static_cast<std::size_t>(o.top_k));
  r.scenario_plan_added = r.scenario_plan_rank && *r.scenario_plan_rank >= k;
  std::set<std::int64_t> counts_added;
  for (std::size_t j = k + (r.scenario_plan_added ? 1 : 0); j < simulated.size(); ++j) {
    counts_added.insert(r.analytic[simulated[j]].candidate.plan.gpus());
  }
  r.count_bests_added = counts_added.size();
  r.count_plans_added = simulated.size() - k - (r.scenario_plan_added ? 1 : 0);
  if (r.scenario_plan_added) {
    const std::size_t own = *r.scenario_plan_rank;
    const std::int64_t g = r.analytic[own].candidate.plan.gpus();
    const auto before =
        std::find_if(r.analytic.begin(), r.analytic.begin() + static_cast<std::ptrdiff_t>(own),
                     [g](const RankedPlan& p) { return p.candidate.plan.gpus() == g; });
    r.scenario_plan_count_best = counts_added.count(g) != 0 &&
                                 before == r.analytic.begin() + static_cast<std::ptrdiff_t>(own);
  }
  for (const std::size_t i : simulated) {
    RankedPlan p = r.analytic[i];
    p.scenario_plan = r.scenario_plan_rank == i;
    const auto it = events.find(p.candidate.hash);
    if (it == events.end()) {
      r.stopped = true;
      continue;
    }
    // A plan refused by --max-events took nothing from the file, whatever it holds.
    if (o.done.count(p.candidate.hash) != 0 && it->second.step_time > Time::zero()) {
      ++r.from_results;
    }
    if (it->second.step_time == Time::zero()) {
      p.refused = fmt::format("more than --max-events {} pipeline passes", o.limits.max_events);
      p.objective = 0.0;
    } else {
      p.event = it->second;
      p.objective = objective_value(o.objective, in, p.candidate, *p.event, energy);
    }
    r.ranked.push_back(std::move(p));
  }
  std::stable_sort(r.ranked.begin(), r.ranked.end(), [](const RankedPlan& a, const RankedPlan& b) {
    if (a.event.has_value() != b.event.has_value()) return a.event.has_value();
    return better(a, b);
  });
  mark_fronts(r.ranked, r.gpus.size() > 1);
  simulate_beside(in, o, topology, kernels, energy, r);
  return r;
}

}  // namespace megasim::plan
