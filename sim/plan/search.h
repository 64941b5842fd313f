// `megasim search`: the best plans of a model on a cluster, out of every plan of the space
// (plan_space.h). Two stages: every feasible plan estimated in closed form (estimate.h), then
// the best top_k re-simulated event by event (the executor every other command uses; beside
// them the scenario's own plan and, with several GPU counts, for each count with none among
// them, its best by estimate and those within kCountSlack of it, of at most kCountShapes
// shapes),
// which gives the final ranking. The ranking is a total order (objective, then the canonical plan
// key), so the result does not depend on how the work was split.
//
// The work can be split (SearchShare): each process estimates and simulates its share of the
// plans, and a gather hook returns everyone's figures to all; what each process then ranks
// is identical. Finished event-level figures can be kept in a results file (results_file.h)
// and are not simulated again.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "io/inputs.h"
#include "plan/estimate.h"
#include "plan/plan_space.h"
#include "plan/work_bounds.h"
#include "run/power.h"

namespace megasim::plan {

enum class Objective { kStepTime, kMfu, kTimeToTrain, kCost, kEnergy };
// "step-time" | "mfu" | "time-to-train" | "cost" | "energy"; InputError for anything else.
Objective objective_from_string(const std::string& name);
const char* to_string(Objective o);

// The figures of one plan that the ranking and the report read, keyed by the plan's hash.
using FigureMap = std::map<std::uint64_t, StepFigures>;

// How the work is split over processes, and how the shares come back together.
struct SearchShare {
  int rank = 0, size = 1;
  // Every process's figures to every process (a no-op for one process).
  std::function<FigureMap(const FigureMap& mine)> gather;
  // Called as plans finish on this process: (stage, done, total of this process's share).
  std::function<void(const char* stage, std::int64_t done, std::int64_t total)> progress;
};

struct SearchOptions {
  SpaceOptions space;
  Objective objective = Objective::kStepTime;
  int top_k = 50;
  WorkLimits limits;  // on each event-level step
  // Event-level figures already known (from a results file): not simulated again.
  FigureMap done;
  // Called with each event-level figure this process finishes (to append it to a file).
  std::function<void(const Candidate&, const StepFigures&)> on_simulated;
  // Stop after this many event-level simulations on this process (tests of resuming):
  // the result is then partial and `stopped` is set.
  std::optional<std::int64_t> stop_after;
};

// With several GPU counts, a count with no plan among the top by estimate has simulated its
// best by estimate and the plans within kCountSlack of its objective, of at most kCountShapes
// shapes (tp, cp, pp, vpp, dp, micro-batch, recomputation; near-copies switching sequence
// parallelism or the optimizer's sharding count as one). The slack is above how far the
// event-level best's estimate sits above its count's best estimate where the estimate
// misranks: 1.4 % on Korthikanti's 22B (8 GPUs), 1.5 % on SC'21's 39.1B (512 GPUs).
inline constexpr double kCountSlack = 0.02;
inline constexpr std::size_t kCountShapes = 4;

struct RankedPlan {
  Candidate candidate;
  StepFigures analytic;
  std::optional<StepFigures> event;  // the top_k plans
  std::string refused;               // an event-level step refused (work bound), with why
  double objective = 0.0;            // of the event-level figures when present
  bool pareto_memory = false;        // tokens/s against memory headroom
  bool pareto_gpus = false;          // tokens/s against GPU count (several counts)
  bool scenario_plan = false;        // the scenario's own plan
  const StepFigures& figures() const { return event ? *event : analytic; }
};

struct SearchResult {
  std::string scenario;
  workload::RankOrder rank_order = workload::RankOrder::kTpCpDpPp;  // the scenario's: every plan's
  Objective objective = Objective::kStepTime;
  Space space;  // feasible plans moved into `analytic`
  // The event-level ranking, best first: the top_k by estimate, the scenario's own plan
  // wherever its estimate put it, and each GPU count's best by estimate (several counts).
  std::vector<RankedPlan> ranked;
  std::vector<RankedPlan> analytic;  // every feasible plan by its estimate, best first
  std::vector<std::int64_t> gpus;    // the GPU counts searched
  bool stopped = false;              // stop_after cut the event-level stage short
  // Where the scenario's own plan ranks (by estimate), if it is in the space.
  std::optional<std::size_t> scenario_plan_rank;
  std::string scenario_plan_outside;  // why the scenario's plan is not in the space (outside_space)
  // In the space's form but pruned: why, as simulate refuses it (over the device's memory).
  std::string scenario_plan_pruned;
  // In the space's form, not pruned, yet none of the plans searched: why (not_searched).
  std::string scenario_plan_not_searched;
  bool scenario_plan_added = false;  // simulated beside the top_k, not among them
  // The scenario's own plan where the space does not hold it (outside it, or not searched) and
  // its GPU count was searched: simulated event by event beside the ranking, for the user to
  // read the ranked plans against (a plan with context parallelism, ZeRO-3 or an uneven split
  // may be faster than every plan the space holds). Unset otherwise, or past the work bound.
  std::optional<StepFigures> scenario_plan_beside;
  double scenario_plan_beside_objective = 0.0;  // its objective value, as RankedPlan::objective
  std::int64_t scenario_plan_gpus = 0;          // the scenario's own plan's GPU count
  std::string scenario_plan_beside_refused;  // why simulating it beside failed, as simulate says
  // GPU counts whose best plans by estimate were simulated beside the top_k (several counts),
  // and how many plans they took (each count's best and those within kCountSlack of it, of at
  // most kCountShapes shapes).
  std::size_t count_bests_added = 0;
  std::size_t count_plans_added = 0;
  // The scenario's own plan, simulated beside the top_k, is the best by estimate of its GPU
  // count and that count's runners-up were added too: those plans are not the count's best.
  bool scenario_plan_count_best = false;
  // Of the ranked plans, those whose event-level figures came from the results file
  // (SearchOptions::done) rather than a simulation of this run.
  std::size_t from_results = 0;
};

// What the energy objective counts beside the GPUs' board power: the job's nodes' overhead
// and its share of the fabric's switches for the whole step, as simulate's IT energy does
// (run::cluster_power). The facility's PUE scales every plan alike and is left out.
struct EnergyModel {
  run::PowerInputs power;  // node and switch watts; the GPU's by activity
  int gpus_per_node = 8;
  const net::Topology* fabric = nullptr;  // its switches, a job's share by job_switches()
};
// The scenario's power preset and device power (io::power_for) on that fabric.
EnergyModel energy_model(const io::Inputs& inputs, const net::Topology& topology);

// The value the ranking minimises (MFU negated) from a plan's figures; `energy` is read for
// Objective::kEnergy only.
double objective_value(Objective o, const io::Inputs& inputs, const Candidate& c,
                       const StepFigures& f, const EnergyModel& energy = {});

// Every check search() makes of its options before it searches (InputError), on its own: so
// the ranks of an mpirun job can agree that all of them refuse before any of them searches.
void check_search_options(const io::Inputs& inputs, const SearchOptions& options);

SearchResult search(const io::Inputs& inputs, const SearchOptions& options,
                    const SearchShare& share = {});

// The step's figures from an event-level prediction.
StepFigures figures_of(const step::StepPrediction& p);

}  // namespace megasim::plan
