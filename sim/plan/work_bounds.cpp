#include "plan/work_bounds.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include <fmt/format.h>

#include "engine/error.h"
#include "run/reliability.h"
#include "run/run_simulation.h"

namespace megasim::plan {

namespace {
// Forward and backward; zero-bubble splits the backward into input and weight gradients.
double passes_per_micro_batch(const workload::ParallelPlan& p) {
  return p.schedule == workload::Schedule::kZeroBubble ? 3.0 : 2.0;
}
}  // namespace

double step_passes(const io::Inputs& in, bool full) {
  return plan_passes(in.scenario.plan, full);
}

double plan_passes(const workload::ParallelPlan& p, bool full) {
  // A TP group runs lock-stepped as one unit even in full mode (step/README.md).
  // Full mode runs every replica of every context-parallel rank: dp × cp units a stage.
  const double ranks = static_cast<double>(p.pp) * (full ? static_cast<double>(p.dp) * p.cp : 1);
  const auto micro_batches = static_cast<double>(p.micro_batches());
  return ranks * micro_batches * static_cast<double>(p.vpp) * passes_per_micro_batch(p);
}

void check_step_work(const io::Inputs& in, bool full, const WorkLimits& limits) {
  const double passes = step_passes(in, full);
  if (passes <= static_cast<double>(limits.max_events)) return;
  const workload::ParallelPlan& p = in.scenario.plan;
  // At one micro-batch the passes grow with the stages alone, as the memory refusal says.
  throw InputError(fmt::format(
      "{}: {}: a step of {:.0f} pipeline passes ({} stages{} × {:.0f} "
      "micro-batches of global_batch {} / (dp {} × micro_batch {}) × vpp {} × {:.0f} passes, "
      "forward and backward) needs at least as many events, more than --max-events {}",
      in.scenario.file.string(), p.micro_batches() > 1 ? "plan.global_batch" : "plan.pp", passes,
      p.pp,
      full ? (p.cp > 1 ? fmt::format(" × dp {} × cp {} (--full)", p.dp, p.cp)
                       : fmt::format(" × dp {} (--full)", p.dp))
           : "",
      static_cast<double>(p.micro_batches()), p.global_batch, p.dp, p.micro_batch, p.vpp,
      passes_per_micro_batch(p), limits.max_events));
}

Bytes step_memory(const io::Inputs& in, bool full, bool trace) {
  const double cluster_gpus = static_cast<double>(in.cluster.gpus);
  return kBaseMemory + kMemoryPerClusterGpu * cluster_gpus +
         kMemoryPerStage * static_cast<double>(in.scenario.plan.pp) +
         kMemoryPerPass * step_passes(in, full) +
         (trace ? kMemoryPerTracedPass * step_passes(in, false) : Bytes{});
}

namespace {
// "40 MiB", "8.5 GiB": a size as the user wrote --max-memory.
std::string size_text(Bytes b) {
  if (b >= kGiB) return fmt::format("{:.3g} GiB", b / kGiB);
  if (b >= kMiB) return fmt::format("{:.3g} MiB", b / kMiB);
  if (b >= kKiB) return fmt::format("{:.3g} KiB", b / kKiB);
  return fmt::format("{:.0f} B", b.value());
}
}  // namespace

void check_step_memory(const io::Inputs& in, bool full, bool trace, const WorkLimits& limits) {
  const Bytes need = step_memory(in, full, trace);
  if (need <= limits.max_memory) return;
  const workload::ParallelPlan& p = in.scenario.plan;
  // The key named first is the largest term's (until 2026-12-05 always plan.global_batch, where
  // on a large cluster its GPUs' bookkeeping is most of the figure).
  const Bytes cluster = kMemoryPerClusterGpu * static_cast<double>(in.cluster.gpus);
  const Bytes stages = kMemoryPerStage * static_cast<double>(p.pp);
  // The passes' terms, traced ones included, grow with the micro-batches, or with the stages
  // alone at one micro-batch (a review found plan.global_batch named where it was 1).
  const Bytes per_pass = need - kBaseMemory - cluster - stages;
  const Bytes most = std::max({per_pass, cluster, stages});
  // The fixed base the largest: no key of the scenario lowers it.
  const std::string key = most < kBaseMemory                          ? ""
                          : per_pass == most && p.micro_batches() > 1 ? "plan.global_batch: "
                          : cluster == most                           ? "cluster: "
                                                                      : "plan.pp: ";
  throw InputError(fmt::format(
      "{}: {}a step of {:.0f} pipeline passes (plan.pp {}{} × {:.0f} "
      "micro-batches of plan.global_batch {} / (plan.dp {} × plan.micro_batch {}) × plan.vpp "
      "{} × {:.0f} passes, forward and backward){} needs an estimated {} ({} + {} cluster GPUs × "
      "{} + {} stages × {} + passes × {}{}), "
      "more than --max-memory {}",
      in.scenario.file.string(), key, step_passes(in, full), p.pp,
      full ? (p.cp > 1 ? fmt::format(" × plan.dp {} × plan.cp {} (--full)", p.dp, p.cp)
                       : fmt::format(" × plan.dp {} (--full)", p.dp))
           : "",
      static_cast<double>(p.micro_batches()), p.global_batch, p.dp, p.micro_batch, p.vpp,
      passes_per_micro_batch(p), trace ? " with its trace (--trace or --html)" : "",
      size_text(need), size_text(kBaseMemory), in.cluster.gpus, size_text(kMemoryPerClusterGpu),
      p.pp, size_text(kMemoryPerStage), size_text(kMemoryPerPass),
      trace ? fmt::format(" + {:.0f} traced passes × {}", step_passes(in, false),
                          size_text(kMemoryPerTracedPass))
            : "",
      size_text(limits.max_memory)));
}

namespace {

// What the run's checkpoints hold training for, failure-free: each blocks for the stall (and
// the write when synchronous), and an asynchronous write longer than the training between two
// checkpoints holds the next one back by the difference. In double: the clock would overflow.
struct CheckpointHold {
  double checkpoints = 0.0;
  double seconds_each = 0.0;
};

// Steps between two checkpoints every `interval` of training, as a trial takes them (a whole
// number, at least one); 0 for a run without checkpoints.
double interval_steps(Time interval, const run::StepProfile& step) {
  if (interval == Time::max() || interval <= Time::zero()) return 0.0;
  return std::max(1.0, std::round(interval.to_seconds() / step.step_time.to_seconds()));
}

CheckpointHold checkpoint_hold(const run::ReliabilityModel& m, const run::StepProfile& step,
                               double steps) {
  const double every = interval_steps(m.checkpoint_interval, step);
  if (every == 0.0) return {};
  const double step_s = step.step_time.to_seconds();
  const double bytes = step.checkpoint_size.value();
  const double write_s = bytes > 0.0 ? bytes / m.checkpoint_write_bw.value() : 0.0;
  const double held = m.async_checkpoint ? std::max(0.0, write_s - every * step_s) : write_s;
  return {std::floor(steps / every), m.checkpoint_stall.to_seconds() + held};
}

// A trial's expected failures with checkpoints every `interval_s` of `work_s`: the rate over
// its expected wall time (Daly's segments, (e^{λT} − 1)(1/λ + R), as
// run::expected_wall_time_poisson, in double; the asynchronous write counted as blocking, the
// longer side), at most a run's longest, where a trial stops unfinished. The steps' time alone
// was counted until 2026-12-05: a sweep centred on a write of many MTBFs drew 100 times that.
double expected_failures(double rate_per_hour, double work_s, double interval_s, double cost_s,
                         double recovery_s) {
  if (rate_per_hour <= 0.0) return 0.0;
  const double lambda = rate_per_hour / 3600.0;
  const auto segment = [&](double t) {
    return std::expm1(lambda * t) * (1.0 / lambda + recovery_s);
  };
  const double full =
      interval_s > 0.0 && interval_s < work_s ? std::ceil(work_s / interval_s) - 1.0 : 0.0;
  // No checkpointed segment is no term: 0 × an overflowed segment would be NaN, and a NaN
  // bound refused every run (a reviewer's interval of 2·10⁵ min).
  const double checkpointed = full > 0.0 ? full * segment(interval_s + cost_s) : 0.0;
  const double wall = checkpointed + segment(work_s - full * interval_s);
  return rate_per_hour * (wall < run::kMaxRunSeconds ? wall : run::kMaxRunSeconds) / 3600.0;
}

// One checkpoint's write or read longer than a run may last: refused before the clock, whose
// range it passes (a read at the loader's floor of 1e-6 GB/s was an internal error until
// 2026-12-05, and so was such a write when the run took no checkpoint).
void check_checkpoint_transfers(const io::Inputs& in, const run::StepProfile& step) {
  const run::ReliabilityModel& m = in.run->reliability;
  const double bytes = step.checkpoint_size.value();
  if (bytes <= 0.0) return;
  const auto check = [&](const char* what, BytesPerSec bw, const char* key) {
    const double seconds = bytes / bw.value();
    if (seconds <= run::kMaxRunSeconds) return;
    throw InputError(fmt::format(
        "{}: reliability preset '{}': {} the {:.3g} GB checkpoint at {:.3g} GB/s ({}) takes "
        "{:.3g} years, more than the {:.0f} a run may last",
        in.scenario.file.string(), m.name, what, bytes / 1e9, bw.value() / 1e9, key,
        seconds / run::kMaxRunSeconds * run::kMaxRunYears, run::kMaxRunYears));
  };
  check("writing", m.checkpoint_write_bw, "checkpoint_write_gbyte_per_s");
  check("reading", m.checkpoint_read_bw, "checkpoint_read_gbyte_per_s");
}

}  // namespace

namespace {

// The planned stops' downtime on top of the run's `seconds` without failures: refused past the
// longest run, naming them (a trial stopped there and blamed the failures, 2026-12-07). Returns
// the events a trial's stops take: an arrival, the step's end and the relaunch each.
double check_planned_stops(const io::Inputs& in, const run::StepProfile& step, double seconds) {
  const run::ReliabilityModel& m = in.run->reliability;
  const double stops = m.planned_per_hour * seconds / 3600.0;
  if (!(stops > 0.0)) return 0.0;
  const double stop_s =
      (m.planned_save_time(step.checkpoint_size) + m.restart_time(step)).to_seconds();
  const double total = seconds + stops * stop_s;
  if (total > run::kMaxRunSeconds) {
    throw InputError(fmt::format(
        "{}: reliability.planned_stops_per_day: {:.3g} planned stops of {:.1f} min each on top "
        "of {:.3g} failure-free years (steps, evaluations and checkpoints) make {:.3g} years "
        "without a failure, more than the {:.0f} a run may last",
        in.scenario.file.string(), stops, stop_s / 60.0,
        seconds / run::kMaxRunSeconds * run::kMaxRunYears,
        total / run::kMaxRunSeconds * run::kMaxRunYears, run::kMaxRunYears));
  }
  constexpr double kEventsPerStop = 3.0;
  return kEventsPerStop * stops;
}

// The run's length without failures (steps, evaluations, checkpoints' holds), in double: its
// product in the clock would overflow. Refused past the longest run, naming what makes it long.
struct RunLength {
  double steps = 0.0, step_s = 0.0, evaluation_s = 0.0, seconds = 0.0;
};

RunLength failure_free_length(const io::Inputs& in, const run::StepProfile& step) {
  const io::RunInputs& r = *in.run;
  const run::ReliabilityModel& m = r.reliability;
  RunLength len;
  const double steps = std::ceil(r.spec.tokens / step.tokens_per_step);
  len.steps = steps;
  const double evaluations =
      step.evaluation_interval_steps > 0 ? std::floor(steps / step.evaluation_interval_steps) : 0.0;
  const CheckpointHold hold = checkpoint_hold(m, step, steps);
  const double checkpoints = hold.checkpoints, per_checkpoint_s = hold.seconds_each;
  const double step_s = step.step_time.to_seconds() * steps;
  const double evaluation_s = step.evaluation.to_seconds() * evaluations;
  const double checkpoint_s = checkpoints * per_checkpoint_s;
  const double seconds = step_s + evaluation_s + checkpoint_s;
  len.step_s = step_s;
  len.evaluation_s = evaluation_s;
  len.seconds = seconds;
  if (seconds > run::kMaxRunSeconds) {
    const std::string key = checkpoint_s > std::max(step_s, evaluation_s)
                                ? fmt::format("the checkpoints of reliability preset '{}'", m.name)
                            : evaluation_s > step_s ? "run.evaluation"
                                                    : "run.tokens";
    throw InputError(fmt::format(
        "{}: {}: {:.3g} tokens are {:.3g} steps of {:.3g} s{}{}: {:.3g} years without a "
        "failure, more than the {:.0f} a run may last",
        in.scenario.file.string(), key, r.spec.tokens, steps, step.step_time.to_seconds(),
        evaluations > 0.0 ? fmt::format(" and {:.3g} evaluations of {:.3g} s (run.evaluation)",
                                        evaluations, step.evaluation.to_seconds())
                          : "",
        checkpoints > 0.0 && per_checkpoint_s > 0.0
            ? fmt::format(" and {:.3g} checkpoints that hold training {:.3g} s each "
                          "(reliability.checkpoint_interval_min; the preset's checkpoint_stall_s, "
                          "checkpoint_write_gbyte_per_s, async_checkpoint)",
                          checkpoints, per_checkpoint_s)
            : "",
        seconds / run::kMaxRunSeconds * run::kMaxRunYears, run::kMaxRunYears));
  }
  return len;
}

}  // namespace

void check_run_work(const io::Inputs& in, const run::StepProfile& step, const WorkLimits& limits) {
  const io::RunInputs& r = *in.run;
  const run::ReliabilityModel& m = r.reliability;
  const RunLength len = failure_free_length(in, step);
  const double steps = len.steps, step_s = len.step_s, evaluation_s = len.evaluation_s;
  const double seconds = len.seconds;
  check_checkpoint_transfers(in, step);
  const double planned_events = check_planned_stops(in, step, seconds);
  const double rate = m.failures_per_hour(step);
  const Time cost = m.blocking_checkpoint_time(step.checkpoint_size);
  const Time write = m.async_write_time(step.checkpoint_size);
  const auto failures_at = [&](Time interval) {
    const double every = interval_steps(interval, step);
    return expected_failures(rate, step_s, every * step.step_time.to_seconds(),
                             (cost + write).to_seconds(), m.mean_recovery_time(step).to_seconds());
  };
  const double failures = failures_at(m.checkpoint_interval);
  // A trial's events: a checkpoint every whole number of steps (at least one), and failures.
  const auto per_trial = [&](Time interval) {
    const double every = interval_steps(interval, step);
    return (every > 0.0 ? steps / every : 0.0) + failures_at(interval) + planned_events;
  };
  const double run_events = static_cast<double>(r.spec.trials) * per_trial(m.checkpoint_interval);
  // The sweep of checkpoint intervals (simulate_run runs it when failures and a checkpoint
  // cost both exist), its trials at each interval, past its longest as far as it goes on.
  double sweep_events = 0.0;
  std::size_t swept = 0;
  if (r.spec.sweep_checkpoint_interval && run::sweeps_intervals(rate, cost, write)) {
    std::vector<Time> intervals =
        run::swept_intervals(run::sweep_centre(run::daly_interval(cost, 1.0 / rate), write));
    // As the sweep stops: after the first interval the run's steps do not reach (its steps
    // with their evaluation share, as the trials take them); counting the ones past it charged
    // a hopeless run eight more 50-year trials, as the sweep did until 2026-12-05.
    const double per_step_s = (step_s + evaluation_s) / steps;
    double least = std::numeric_limits<double>::infinity();  // expected failures: rate × wall
    for (std::size_t k = 0; k < intervals.size(); ++k) {
      const Time interval = intervals[k];
      sweep_events += static_cast<double>(std::max(1, r.spec.sweep_trials)) * per_trial(interval);
      ++swept;
      if (std::max(1.0, std::round(interval.to_seconds() / per_step_s)) >= steps) break;
      // And as it goes on past its longest: only while the longest is the best (run_steps.cpp),
      // judged here by the closed form's wall time in place of the trials' mean. Every
      // extension counted charged a run of frequent failures the e^{λT} of intervals the
      // sweep never tries: 4.3·10⁸ events refused for a run of 0.8 s (a review, 2026-12-07).
      const double failures = failures_at(interval);
      const bool longest_best = failures <= least;
      least = std::min(least, failures);
      if (k + 1 == intervals.size() && longest_best && intervals.size() < run::kMostSwept) {
        if (const auto next = run::next_swept_interval(intervals.back()))
          intervals.push_back(*next);
      }
    }
  }
  const double events = run_events + sweep_events;
  if (events <= static_cast<double>(limits.max_events)) return;
  throw InputError(fmt::format(
      "{}: run.tokens: {:.3g} tokens are {:.3g} steps of {:.3g} s; with {:.3g} checkpoints, "
      "{:.3g} expected failures{} a trial, {} trial(s) (run.trials or --trials {}) and the "
      "checkpoint-interval sweep ({:.3g} events: {} trials at each of {} intervals, whatever "
      "--trials says) need about {:.3g} events, more than --max-events {} (raise it, or "
      "fewer tokens)",
      in.scenario.file.string(), r.spec.tokens, steps, step.step_time.to_seconds(),
      per_trial(m.checkpoint_interval) - failures - planned_events, failures,
      planned_events > 0.0 ? fmt::format(" and {:.3g} events of planned stops", planned_events)
                           : std::string(),
      r.spec.trials, r.spec.trials, sweep_events, std::max(1, r.spec.sweep_trials), swept, events,
      limits.max_events));
}

}  // namespace megasim::plan
