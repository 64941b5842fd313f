// The run simulation's step arithmetic, shared by its trials (run_simulation.cpp) and its
// sweep of checkpoint intervals (run_steps.cpp): whole steps, their evaluation share, the
// interval as trials take it, trial seeds. Internal to the run module.
#pragma once

#include <cstdint>

#include "run/run_simulation.h"

namespace megasim::run {

// The steps of a run of `tokens`.
std::int64_t steps_for(double tokens, const StepProfile& step);
// Steps between checkpoints every `interval` (at least one; 0 without checkpoints).
std::int64_t interval_in_steps(Time interval, Time step_time);
// Trial t's seed.
std::uint64_t trial_seed(std::uint64_t seed, int trial);
// The run's evaluations, their whole time.
Time run_evaluation(const StepProfile& step, std::int64_t steps);
// A step of a run of `steps` as the trials run it: its time and its share of the evaluations.
Time time_per_step(const StepProfile& step, std::int64_t steps);
// The interval as trials take it: whole steps, each with its evaluation share.
Time simulated_interval(Time interval, const StepProfile& step, std::int64_t steps);
// MegaScale's effective training time rate of one trial.
double trial_goodput(const TrialResult& tr);

// simulate_trial without its refusal: a trial that failures outpaced comes back unfinished.
TrialResult run_trial(const StepProfile& step, double tokens, const ReliabilityModel& model,
                      Time interval, std::uint64_t seed);

// The mean wall-clock days at checkpoint intervals around sweep_centre, into r.sweep and its
// best (simulate_run runs it when sweeps_intervals).
void sweep_intervals(const StepProfile& step, const RunSpec& spec, const ReliabilityModel& model,
                     RunResult& r);

}  // namespace megasim::run
