// The run-level simulation: the tokens of a run become steps at the step time; failures are
// drawn from the reliability model (a Poisson process per cause while the job runs); each
// interruption rolls training back to the last durable checkpoint and costs detection,
// replacement (spare pool with repair times) and restart. Seeded Monte Carlo trials, one
// Simulator each, give distributions of wall-clock days, goodput and interruptions; a sweep of
// checkpoint intervals finds the one that minimises expected wall time, beside Young/Daly.
//
// Planned stops (firmware, configuration, dataset updates) come as a Poisson process of their
// own, on a stream of their own, each a save and a restart that lose no work.
//
// Model limits (stated, not hidden): failures and planned stops arrive only while the job runs
// (training or checkpointing), not while it is down (a planned stop's save cannot fail); a
// checkpoint is durable once its storage write ends; checkpoints fall on step boundaries; a
// straggler slows every step by a fixed fraction. Pure functions; a result depends only on its
// inputs and the seed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "engine/time.h"
#include "run/power.h"
#include "run/reliability.h"
#include "run/step_profile.h"

namespace megasim::run {

struct RunSpec {
  double tokens = 0.0;
  std::uint64_t seed = 1;
  int trials = 1;
  // Sweep checkpoint intervals around Young/Daly to find the best one by simulation.
  bool sweep_checkpoint_interval = true;
  int sweep_trials = 32;  // trials per swept interval (common random numbers across intervals)
};

struct TrialResult {
  Time wall;           // launch to the last step
  Time useful;         // first-time steps and evaluations at the trial's step time
  // Of `useful`, the evaluations' share. Goodput leaves it out: MegaScale's effective training
  // time counts training iterations × iteration time, which an evaluation is not.
  Time evaluation;
  Time trained;        // all training time, redone work included
  Time reached;        // the work done when the trial ended: the run's, unless unfinished
  Time checkpointing;  // blocking checkpoint time and waits for a pending write
  // Of it, the stalls and waits of checkpoints taken for the first time at their step: not
  // those a failure cut short, nor those redone after a rollback. The running MFU counts them
  // beside the first-time steps (it counted every one until 2026-12-06).
  Time first_checkpointing;
  Time down;           // detection, replacement, restart, load (the first launch is in `wall`)
  Time spare_wait;     // of `down`, the time replacements waited for a spare to be free
  std::int64_t restarts = 0;
  // Planned stops (ReliabilityModel::planned_per_hour) and their time down: the save waited
  // for, the relaunch and the load; neither in `restarts` nor in `down`.
  std::int64_t planned_stops = 0;
  Time planned_down;
  // False when failures outpaced the checkpoints for a run's longest (kMaxRunYears): the trial
  // stopped there.
  bool finished = true;
  std::int64_t interval_steps = 0;  // steps between its checkpoints, at its own step time (0: none)
  std::vector<std::int64_t> by_cause;  // interruptions per ReliabilityModel::causes entry
  bool straggler_slowed = false;
  // What a straggler the job keeps adds to its first-time steps (inside `useful`, which is
  // MegaScale's iterations × iteration time; lost GPU-hours count it).
  Time straggler;
  std::int64_t spares = 0;  // the pool (evicted stragglers' nodes rejoin it when repaired)
  // Node-seconds the pool's nodes idle, powered: spares × wall, less the time each pool slot's
  // node is out for repair (a failed node a spare replaced rejoins the pool after its repair),
  // up to the run's end. A double: spares × a long run's wall overflows Time.
  double spare_idle_node_seconds = 0.0;
};

// One trial with its own Simulator seeded by `seed`; the checkpoint interval is `interval`.
TrialResult simulate_trial(const StepProfile& step, double tokens, const ReliabilityModel& model,
                           Time interval, std::uint64_t seed);

struct Distribution {
  double mean = 0.0, p10 = 0.0, p50 = 0.0, p90 = 0.0;
};
// Linear-interpolated percentiles of `values` (copied and sorted).
Distribution distribution(std::vector<double> values);

struct CauseSummary {
  std::string name;
  double mean_count = 0.0;
};

struct IntervalPoint {
  Time interval;
  double mean_days = 0.0;
  // Its trials, paired with the best interval's (common random numbers), differ from them by
  // no more than twice the standard error of the mean difference: the sweep cannot tell the
  // two apart.
  bool alike_best = false;
  double mean_goodput = 0.0;  // the trials' goodput at this interval, as RunResult::goodput's
};

struct RunResult {
  std::int64_t steps = 0;
  Time step_time;     // failure-free step, without a straggler's slowdown (trials add it)
  Time failure_free;  // steps × step time, plus the evaluations
  Time evaluation;    // the run's evaluations, failure-free (StepProfile::evaluation)
  int trials = 0;
  Distribution days;     // wall-clock days
  Distribution goodput;  // effective training time rate (MegaScale §6.3): training steps / wall
  Distribution restarts;
  // Planned stops: the trials' count, their mean job hours down, the rate expected while the
  // job runs and one stop's time (the save waited for, relaunch, communicator init, load).
  Distribution planned_stops;
  double planned_hours = 0.0;
  double planned_per_day = 0.0;
  Time planned_stop;
  // Every trial's wall-clock days and goodput, in trial order (the distributions' samples).
  std::vector<double> trial_days, trial_goodput;
  std::vector<CauseSummary> interruptions;  // mean per trial, by cause
  double lost_gpu_hours = 0.0;              // mean of gpus × (wall − useful + straggler)
  double rework_hours = 0.0, down_hours = 0.0, checkpoint_hours = 0.0;  // means, job hours
  double spare_wait_hours = 0.0;  // of down_hours, the mean wait for a free spare
  // The first launch, job hours: processes, the model and the communicators, as a restart's
  // without its detection and checkpoint load (ReliabilityModel::launch_time; in the wall
  // time since 2026-12-04, not charged before).
  double launch_hours = 0.0;
  double straggler_hours = 0.0;  // mean, job hours a kept straggler adds to first-time steps
  double failures_per_day = 0.0;                                        // expected, whole job
  // Of the time the job runs (steps, evaluations, checkpoint stalls, a straggler's slowdown;
  // not redone work or redone and cut-short checkpoints, not downtime), the share its
  // first-time steps would take at the
  // failure-free step time (mean over trials): the step's MFU times this is the MFU of the
  // running job, the figure a production dashboard shows between interruptions.
  double step_share = 1.0;
  double straggler_slowed_share = 0.0;  // of the trials, those a straggler slowed (kept, or
                                        // not evicted: draw_stragglers says when)
  // Mean time between interruptions; infinite without failures. In hours, as an MTBF of
  // centuries is past the simulator's clock (it was a Time until 2026-12-06: an internal error).
  double mtbf_hours = std::numeric_limits<double>::infinity();
  Time recovery;             // mean recovery per interruption (spare free)
  Time checkpoint_interval;  // the one simulated
  bool checkpoints_in_run = false;  // the run's steps reach the interval: a checkpoint is taken
  Time checkpoint_cost;      // blocking time per checkpoint
  Time young, daly;          // analytic optimum intervals
  Time best_interval;        // by simulation (zero when not swept)
  bool best_past_run = false;  // the best is the sweep's interval past the run's steps: none
  // The best is the sweep's shortest interval, or its longest after the sweep went on past it
  // kSweepExtension times: a shorter (longer) one may be better still.
  bool best_at_sweep_edge = false;
  std::int64_t sweep_unfinished = 0;  // swept intervals whose trials cannot finish (left out)
  std::vector<IntervalPoint> sweep;
  // Failures the sweep's trials drew at its first interval (the same seeds at every one): with
  // none, the sweep ranks the checkpoints' cost alone and its best is merely its longest.
  std::int64_t sweep_failures = 0;
  StepPower power;
  RunEnergy energy;  // mean over trials
};

RunResult simulate_run(const StepProfile& step, const RunSpec& spec, const ReliabilityModel& model,
                       const PowerInputs& power);

// Whether the run's checkpoint intervals are swept: failures to lose work to, and checkpoints
// that cost something (a blocking stall, or an asynchronous write a short interval waits for).
bool sweeps_intervals(double failures_per_hour, Time blocking, Time async_write);
// The interval the sweep centres on: Daly's, or the asynchronous write's where that is longer
// (Daly's formula sees only the blocking stall; an interval shorter than the write waits for
// it at the next checkpoint).
Time sweep_centre(Time daly, Time async_write);
// The checkpoint intervals the sweep simulates around its centre, RunSpec::sweep_trials trials
// each: centre × 2^(k/2) for k in [-4, 4]; while the longest is the best, up to
// kSweepExtension more, each √2 past the last.
std::vector<Time> swept_intervals(Time centre);
inline constexpr int kSweepHalfSteps = 4;
inline constexpr int kSweepExtension = 6;
inline constexpr std::size_t kMostSwept = 2 * kSweepHalfSteps + 1 + kSweepExtension;
// The extension's next interval: √2 past `last`, at most the longest run (kMaxRunSeconds);
// none once `last` is that long.
std::optional<Time> next_swept_interval(Time last);

// Expected wall time of `work` with checkpoints every `interval` of work costing `cost`, a
// Poisson failure process of `rate_per_hour` while running and a fixed `recovery` after each
// failure, each failure rolling back to the last checkpoint: Σ over segments of length T of
// (e^{λT} − 1)(1/λ + R) (the last segment carries no checkpoint).
Time expected_wall_time_poisson(Time work, Time interval, Time cost, double rate_per_hour,
                                Time recovery);

}  // namespace megasim::run
