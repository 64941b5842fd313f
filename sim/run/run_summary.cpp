// The run's figures from its trials: simulate_run draws RunSpec::trials trials of the run at the
// preset's checkpoint interval and sums them into the distributions and means of RunResult,
// then sweeps the checkpoint interval (run_steps.cpp).
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "run/run_simulation.h"
#include "run/run_steps.h"

namespace megasim::run {
namespace {

// The run's figures from the reliability model alone: failure rate, MTBF, mean recovery,
// the planned stops' rate and cost, the checkpoint's interval and cost, and Young's and Daly's
// intervals.
void reliability_figures(const StepProfile& step, const ReliabilityModel& model, RunResult& r) {
  const double rate = model.failures_per_hour(step);
  r.failures_per_day = rate * 24.0;
  r.planned_per_day = model.planned_per_hour * 24.0;
  r.planned_stop = model.planned_save_time(step.checkpoint_size) + model.restart_time(step);
  r.mtbf_hours = rate > 0.0 ? 1.0 / rate : std::numeric_limits<double>::infinity();
  r.recovery = model.mean_recovery_time(step);
  r.checkpoint_interval = simulated_interval(model.checkpoint_interval, step, r.steps);
  const std::int64_t every =
      interval_in_steps(model.checkpoint_interval, time_per_step(step, r.steps));
  r.checkpoints_in_run = every > 0 && every < r.steps;
  r.checkpoint_cost = model.blocking_checkpoint_time(step.checkpoint_size);
  if (rate > 0.0) {
    r.young = young_interval(r.checkpoint_cost, r.mtbf_hours);
    r.daly = daly_interval(r.checkpoint_cost, r.mtbf_hours);
  }
}

// The trials' figures as they come: samples for the distributions, sums for the means (job
// hours unless named otherwise).
struct TrialSums {
  std::int64_t steps = 0;  // the run's, each at the failure-free step time
  std::vector<double> days, goodput, restarts, lost, planned;
  std::vector<double> causes;
  double rework = 0.0, down = 0.0, spare_wait = 0.0, checkpointing = 0.0, planned_down = 0.0;
  double trained_s = 0.0, idle_s = 0.0, step_share = 0.0, slowed = 0.0, straggler = 0.0;
  double spare_node_seconds = 0.0, wall_s = 0.0;

  void add(const TrialResult& tr, const StepProfile& step) {
    const double steps_alone = (step.step_time * steps).to_seconds();
    days.push_back(tr.wall.to_days());
    goodput.push_back(trial_goodput(tr));
    restarts.push_back(static_cast<double>(tr.restarts));
    planned.push_back(static_cast<double>(tr.planned_stops));
    lost.push_back((tr.wall - tr.useful + tr.straggler).to_hours() *
                   static_cast<double>(step.gpus));
    if (causes.empty()) causes.assign(tr.by_cause.size(), 0.0);
    for (std::size_t c = 0; c < causes.size(); ++c)
      causes[c] += static_cast<double>(tr.by_cause[c]);
    rework += (tr.trained - tr.useful).to_hours();
    down += tr.down.to_hours();
    planned_down += tr.planned_down.to_hours();
    spare_wait += tr.spare_wait.to_hours();
    checkpointing += tr.checkpointing.to_hours();
    straggler += tr.straggler.to_hours();
    trained_s += tr.trained.to_seconds();
    idle_s += (tr.wall - tr.trained).to_seconds();
    step_share += steps_alone / (tr.useful + tr.first_checkpointing).to_seconds();
    slowed += tr.straggler_slowed ? 1.0 : 0.0;
    spare_node_seconds += tr.spare_idle_node_seconds;
    wall_s += tr.wall.to_seconds();
  }
};

}  // namespace

RunResult simulate_run(const StepProfile& step, const RunSpec& spec, const ReliabilityModel& model,
                       const PowerInputs& power) {
  step.validate();
  // Preconditions: io::run_spec_for reads tokens and trials with these bounds.
  if (!(spec.tokens > 0.0)) throw std::invalid_argument("run: tokens must be positive");
  if (spec.trials < 1)
    throw std::invalid_argument(fmt::format("run: trials must be ≥ 1, got {}", spec.trials));

  RunResult r;
  r.steps = steps_for(spec.tokens, step);
  r.step_time = step.step_time;
  r.evaluation = run_evaluation(step, r.steps);
  r.failure_free = step.step_time * r.steps + r.evaluation;
  r.trials = spec.trials;
  reliability_figures(step, model, r);
  r.power = step_power(step, power);

  TrialSums sums;
  sums.steps = r.steps;
  sums.causes.assign(model.causes.size(), 0.0);
  for (int t = 0; t < spec.trials; ++t) {
    sums.add(simulate_trial(step, spec.tokens, model, model.checkpoint_interval,
                            trial_seed(spec.seed, t)),
             step);
  }
  const double n = static_cast<double>(spec.trials);
  r.days = distribution(sums.days);
  r.goodput = distribution(sums.goodput);
  r.restarts = distribution(sums.restarts);
  r.planned_stops = distribution(sums.planned);
  r.trial_days = sums.days;
  r.trial_goodput = sums.goodput;
  r.lost_gpu_hours = distribution(sums.lost).mean;
  for (std::size_t c = 0; c < sums.causes.size(); ++c) {
    r.interruptions.push_back({model.causes[c].name, sums.causes[c] / n});
  }
  r.rework_hours = sums.rework / n;
  r.straggler_hours = sums.straggler / n;
  r.down_hours = sums.down / n;
  r.planned_hours = sums.planned_down / n;
  r.spare_wait_hours = sums.spare_wait / n;
  r.launch_hours = model.launch_time(step).to_hours();
  r.checkpoint_hours = sums.checkpointing / n;
  r.step_share = sums.step_share / n;
  r.straggler_slowed_share = sums.slowed / n;
  // Spares are reserved with the job (billed, or a small job's share); the places of nodes in
  // repair (failed, or evicted stragglers) draw no power.
  r.energy = run_energy(
      r.power, Time::from_seconds(sums.trained_s / n), Time::from_seconds(sums.idle_s / n),
      step.gpus,
      {model.spares_for(step), sums.wall_s > 0.0 ? sums.spare_node_seconds / sums.wall_s : 0.0,
       step.gpus_per_node, model.billed_spare_share(step)},
      power);

  if (spec.sweep_checkpoint_interval &&
      sweeps_intervals(model.failures_per_hour(step), r.checkpoint_cost,
                       model.async_write_time(step.checkpoint_size)))
    sweep_intervals(step, spec, model, r);
  return r;
}

}  // namespace megasim::run
