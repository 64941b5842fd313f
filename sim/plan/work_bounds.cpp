#include "plan/work_bounds.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "engine/error.h"

namespace megasim::plan {

double step_passes(const io::Inputs& in, bool full) {
  const workload::ParallelPlan& p = in.scenario.plan;
  // A TP group runs lock-stepped as one unit even in full mode (step/README.md).
  const double ranks = static_cast<double>(p.pp) * (full ? p.dp : 1);
  const auto micro_batches = static_cast<double>(p.micro_batches());
  // Forward and backward; zero-bubble splits the backward into input and weight gradients.
  const double passes = p.schedule == workload::Schedule::kZeroBubble ? 3.0 : 2.0;
  return ranks * micro_batches * static_cast<double>(p.vpp) * passes;
}

void check_step_work(const io::Inputs& in, bool full, const WorkLimits& limits) {
  const double passes = step_passes(in, full);
  if (passes <= static_cast<double>(limits.max_events)) return;
  const workload::ParallelPlan& p = in.scenario.plan;
  throw InputError(fmt::format(
      "{}: plan.global_batch: a step of {:.3g} pipeline passes ({} stages{} × {:.3g} "
      "micro-batches of global_batch {} / (dp {} × micro_batch {}) × vpp {}, forward and "
      "backward) needs at least as many events, more than --max-events {}",
      in.scenario.file.string(), passes, p.pp, full ? fmt::format(" × dp {} (--full)", p.dp) : "",
      static_cast<double>(p.micro_batches()),
      p.global_batch, p.dp, p.micro_batch, p.vpp, limits.max_events));
}

void check_run_work(const io::Inputs& in, const run::StepProfile& step, const WorkLimits& limits) {
  const io::RunInputs& r = *in.run;
  const double steps = std::ceil(r.spec.tokens / step.tokens_per_step);
  const Time interval = r.reliability.checkpoint_interval;
  // The trial takes a checkpoint every whole number of steps, at least one.
  const double checkpoints =
      interval == Time::max() || interval <= Time::zero()
          ? 0.0
          : steps / std::max(1.0, std::round(interval.to_seconds() / step.step_time.to_seconds()));
  const double failures =
      r.reliability.failures_per_hour(step) * step.step_time.to_hours() * steps;
  const double events = static_cast<double>(r.spec.trials) * (checkpoints + failures);
  if (events <= static_cast<double>(limits.max_events)) return;
  throw InputError(fmt::format(
      "{}: run.tokens: {:.3g} tokens are {:.3g} steps of {:.3g} s; with {:.3g} checkpoints and "
      "{:.3g} expected failures a trial, {} trial(s) (run.trials or --trials {}) need at least "
      "{:.3g} events, more than --max-events {}",
      in.scenario.file.string(), r.spec.tokens, steps, step.step_time.to_seconds(), checkpoints,
      failures, r.spec.trials, r.spec.trials, events, limits.max_events));
}

}  // namespace megasim::plan
