// The reliability model of a training run: how often something interrupts the job (a rate per
// component type, per GPU or per node, so the job's rate scales with its size), and what an
// interruption costs (detection and diagnosis, getting a healthy node, relaunching, the
// communicator initialisation that grows with rank count, loading the last checkpoint), plus
// the checkpoint policy (two-stage: a blocking copy to host memory, then an asynchronous write
// to storage) and stragglers. Values come from the presets in reliability/ (each with its
// source) through io::load_reliability_preset(); this header only computes with them.
// Plain value types.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/time.h"
#include "engine/units.h"
#include "run/step_profile.h"

namespace megasim::run {

// What a failure rate is counted per, and so what it scales with.
enum class FailureScope { kGpu, kNode };
const char* to_string(FailureScope s);

struct FailureCause {
  std::string name;
  FailureScope scope = FailureScope::kGpu;
  double rate_per_unit_hour = 0.0;  // interruptions per GPU (or node) per hour of running
  bool needs_replacement = false;   // hardware: the node is swapped for a spare
  std::string source;
};

// Communicator initialisation time as a power law in the rank count,
// t(n) = t_ref · (n / n_ref)^exponent, fitted through two published points (or one point and
// a stated exponent). See fit_comm_init().
struct CommInitModel {
  Time at_reference;
  double reference_ranks = 1.0;
  double exponent = 1.0;
  // The most ranks a published point of the law has (0: none given): past it the time is the
  // law's extrapolation, which the report says.
  std::int64_t published_ranks = 0;
  std::string source;
  Time at(std::int64_t ranks) const;
};

// The power law through (n1, t1) and (n2, t2); throws InputError unless n1 ≠ n2 and t1, t2 > 0.
CommInitModel fit_comm_init(double n1, Time t1, double n2, Time t2);

struct ReliabilityModel {
  std::string name;
  std::string source;
  std::vector<FailureCause> causes;
  // What the causes' rates were multiplied by (the scenario's reliability.failure_rate_scale):
  // said beside the preset's name.
  double failure_rate_scale = 1.0;
  // Stops the operators plan (firmware upgrades, configuration or dataset updates: Llama 3
  // counted 47 in its 54 days beside the 419 failures), per hour of the whole job whatever its
  // size, while it runs; failure_rate_scale leaves them be. Each lets the step under way end,
  // saves a checkpoint and waits for its write (Megatron-LM's exit handler), then relaunches
  // and loads it: no detection, no node to replace, no work lost.
  double planned_per_hour = 0.0;

  Time detection;         // failure to decision: detection, diagnostics, eviction
  Time restart_overhead;  // relaunching processes and building the model, without comm init
  CommInitModel comm_init;
  BytesPerSec checkpoint_read_bw;   // aggregate, loading the last checkpoint after a restart
  BytesPerSec checkpoint_write_bw;  // aggregate, stage 2 (or the whole save when synchronous)
  Time checkpoint_stall;            // stage 1: blocking copy of the states to host memory
  bool async_checkpoint = true;     // false: training also waits for the storage write
  Time checkpoint_interval;         // training time between checkpoints

  double spare_fraction = 0.0;              // spare pool as a share of the job's nodes
  std::optional<std::int64_t> spare_nodes;  // an absolute pool size, when the user sets one
  Time replacement_time;                    // swapping a spare node into the job
  Time repair_time;  // a failed node back in the spare pool (or back in the job, no spares)

  double straggler_node_fraction = 0.0;  // share of nodes that run slow
  double straggler_slowdown = 0.0;       // step time penalty while one is in the job
  bool evict_stragglers = false;  // replaced by spares at launch, their nodes sent for repair
  // The scenario's own slow hosts (its `stragglers`) already pace the simulated step: they stand
  // for the run's stragglers, whose draw is then off (straggler_node_fraction 0), or they would
  // be counted twice.
  bool stragglers_in_step = false;

  // Spare nodes available to the job: spare_nodes, else spare_fraction × nodes to the nearest
  // server, at least one when the fraction is above 0.
  std::int64_t spares_for(const StepProfile& step) const;
  // A job whose share of the pool rounds to no server (under 25 servers at 2 %) has the one
  // spare it may draw on and pays its share of it (0.32 of a node for 16 servers; its GPUs'
  // worth of nodes for a job smaller than a node), as of a pool the cluster shares; nullopt
  // for every other job, which pays for spares_for.
  std::optional<double> billed_spare_share(const StepProfile& step) const;
  // Interruptions per hour of the whole job.
  double failures_per_hour(const StepProfile& step) const;
  // Of them, those that need a node replaced (FailureCause::needs_replacement).
  double replacements_per_hour(const StepProfile& step) const;
  // The job's waiting for spares that evicting `evicted` nodes at launch is expected to add:
  // while they are in repair the pool is short of them, and a failure that needs a replacement
  // and finds it empty waits for the first of them back. The replacements a Poisson stream of
  // replacements_per_hour, the j-th at T_j, each j with spares - evicted < j <= spares waits
  // E[(R - T_j)+] over a repair of R (a wait that the pool would have spared it), counting the
  // failures that come within `horizon` of running (the run's failure-free training time).
  Time eviction_wait(const StepProfile& step, std::int64_t evicted, Time horizon) const;
  double cause_rate_per_hour(const FailureCause& c, const StepProfile& step) const;
  // Blocking time per checkpoint: the stage-1 stall, plus the storage write when synchronous.
  Time blocking_checkpoint_time(Bytes checkpoint) const;
  // Storage write time that runs beside training (zero when synchronous).
  Time async_write_time(Bytes checkpoint) const;
  Time checkpoint_load_time(Bytes checkpoint) const;
  // A planned stop's save, all of it waited for: the stall and the whole storage write.
  Time planned_save_time(Bytes checkpoint) const;
  // Relaunch + communicator initialisation + checkpoint load, once a healthy node set exists.
  Time restart_time(const StepProfile& step) const;
  // The job's first launch: restart_overhead and communicator init, no checkpoint to load.
  Time launch_time(const StepProfile& step) const;
  // detection + replacement + restart, assuming a spare is free when one is needed.
  Time mean_recovery_time(const StepProfile& step) const;
};

// A trial's stragglers: each node is one with probability straggler_node_fraction. Evicted,
// they are replaced by spares at launch and go for repair, as a failed node does, rejoining
// the pool as spares when repaired. One straggler paces the step, so they are evicted all or
// none: all where the pool replaces them and the waiting for spares their repair is expected
// to add (eviction_wait) is less than their slowdown of the failure-free `training` time
// (straggler_slowdown × training); else they stay and slow the job, the pool kept for
// failures. Kept, the job is slowed when it holds at least one. Drawn node by node on a
// stream of `seed`'s own, so the failures' draws do not move.
struct StragglerEffect {
  std::int64_t evicted = 0;  // replaced by spares at launch, their nodes out for repair
  bool slowed = false;       // the job holds one, and every step is slowed
};
StragglerEffect draw_stragglers(const StepProfile& step, const ReliabilityModel& m,
                                std::uint64_t seed, Time training);

// A model with no failures, no checkpoints and no stragglers (the "none" preset).
ReliabilityModel no_failures_model();

// A run (run_simulation.h) that has not finished after this long will not finish: failures outpace
// checkpoints. Its failure-free length is refused past it too (plan::check_run_work), well inside
// the 292 years the simulator's clock holds.
constexpr double kMaxRunYears = 50.0;
constexpr double kMaxRunSeconds = kMaxRunYears * 365.0 * 86400.0;

// Young's (1974) first-order optimum checkpoint interval sqrt(2·δ·M) and Daly's (2006)
// higher-order estimate sqrt(2·δ·M)·(1 + √ξ/3 + ξ/9) − δ with ξ = δ/2M (for δ < 2M; M beyond),
// with δ the blocking checkpoint cost and M the mean time between interruptions, in hours (an
// MTBF of centuries is past the simulator's clock; an interval past the longest run, whose
// checkpoint never comes, is taken as that length). Daly's optimum does not depend on the
// restart time R.
Time young_interval(Time checkpoint_cost, double mtbf_hours);
Time daly_interval(Time checkpoint_cost, double mtbf_hours);

}  // namespace megasim::run
