#include "run/run_steps.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <vector>

#include "engine/rng.h"

namespace megasim::run {

std::int64_t steps_for(double tokens, const StepProfile& step) {
  return static_cast<std::int64_t>(std::ceil(tokens / step.tokens_per_step));
}

std::int64_t interval_in_steps(Time interval, Time step_time) {
  if (interval == Time::max() || interval <= Time::zero()) return 0;
  const double n = std::round(interval.to_seconds() / step_time.to_seconds());
  return std::max<std::int64_t>(1, static_cast<std::int64_t>(n));
}

// Trial t's seed: the run seed offset by t golden-ratio increments (splitmix64's stream step),
// then mixed through Rng's own seeding, so trial t can be rerun alone in O(1).
std::uint64_t trial_seed(std::uint64_t seed, int trial) {
  constexpr std::uint64_t kGoldenGamma = 0x9e3779b97f4a7c15ull;
  Rng r(seed + kGoldenGamma * (static_cast<std::uint64_t>(trial) + 1));
  return r.next_u64();
}

// The run's evaluations: one after every whole interval of steps, as Megatron-LM evaluates at
// each multiple of --eval-interval. Trials spread them evenly over the steps, so redone steps
// redo their share.
Time run_evaluation(const StepProfile& step, std::int64_t steps) {
  if (step.evaluation_interval_steps <= 0) return Time::zero();
  return step.evaluation * static_cast<double>(steps / step.evaluation_interval_steps);
}

// A step of a run of `steps` as the trials run it: its time and its share of the evaluations.
Time time_per_step(const StepProfile& step, std::int64_t steps) {
  return step.step_time +
         (steps > 0 ? run_evaluation(step, steps) / static_cast<double>(steps) : Time::zero());
}

// The interval as trials take it: whole steps, each with its evaluation share (simulate_trial).
Time simulated_interval(Time interval, const StepProfile& step, std::int64_t steps) {
  const Time per_step = time_per_step(step, steps);
  const std::int64_t every = interval_in_steps(interval, per_step);
  return every > 0 ? per_step * static_cast<double>(every) : interval;
}

// MegaScale's effective training time rate: training iterations × iteration time over the
// wall time (evaluations are not training iterations; a kept straggler's slower steps are).
double trial_goodput(const TrialResult& tr) {
  return (tr.useful - tr.evaluation).to_seconds() / tr.wall.to_seconds();
}

namespace {

// One swept interval's trials: their days, mean goodput and failures.
struct IntervalTrials {
  std::vector<double> days;
  double goodput = 0.0;
  std::int64_t restarts = 0;
};

// The trials of one interval, the same seeds at every interval; nullopt when failures outpaced
// the checkpoints in one of them (the rest are not run).
std::optional<IntervalTrials> run_interval(const StepProfile& step, const RunSpec& spec,
                                           const ReliabilityModel& model, Time interval,
                                           int trials) {
  IntervalTrials out;
  for (int t = 0; t < trials; ++t) {
    const TrialResult tr = run_trial(step, spec.tokens, model, interval, trial_seed(spec.seed, t));
    if (!tr.finished) return std::nullopt;
    out.days.push_back(tr.wall.to_days());
    out.goodput += trial_goodput(tr);
    out.restarts += tr.restarts;
  }
  out.goodput /= static_cast<double>(trials);  // summed then divided, as before the split
  return out;
}

// Paired differences with the best: alike when their mean is within two standard errors.
void mark_alike(const std::vector<std::vector<double>>& days, std::size_t best_at, RunResult& r) {
  const std::size_t trials = days.front().size();
  const auto n = static_cast<double>(trials);
  for (std::size_t i = 0; i < r.sweep.size(); ++i) {
    double sum = 0.0, sum2 = 0.0;
    for (std::size_t t = 0; t < trials; ++t) {
      const double diff = days[i][t] - days[best_at][t];
      sum += diff;
      sum2 += diff * diff;
    }
    const double mean = sum / n;
    const double var = trials > 1 ? std::max(0.0, (sum2 - n * mean * mean) / (n - 1.0)) : 0.0;
    r.sweep[i].alike_best = mean <= 2.0 * std::sqrt(var / n);
  }
}

}  // namespace

// Mean wall-clock days at checkpoint intervals around the sweep's centre (sweep_centre), with
// common random numbers; the least is the best. While the longest is the best the sweep goes
// on past it (until 2026-12-05 a 62-minute asynchronous write printed the sweep's last
// interval, 25.8 min, as best: 115 days against 57 at 60 min). An interval whose trials
// failures outpace is left out and counted (it aborted the run until then).
void sweep_intervals(const StepProfile& step, const RunSpec& spec, const ReliabilityModel& model,
                     RunResult& r) {
  const int trials = std::max(1, spec.sweep_trials);
  double best = std::numeric_limits<double>::infinity();
  std::size_t best_at = 0;
  std::vector<std::vector<double>> days;  // per interval, per trial
  std::vector<Time> unfinished;
  // Each interval as the trials take it, whole steps (the nominal one was reported until
  // 2026-12-05): one the run's steps do not reach never checkpoints, so the sweep stops at the
  // first tried, and an interval that rounds to the steps of the one before it is the same.
  const std::int64_t steps = steps_for(spec.tokens, step);
  const Time whole_run = time_per_step(step, steps) * static_cast<double>(steps);
  const auto unfinished_beyond = [&](bool longer) {
    return std::any_of(unfinished.begin(), unfinished.end(),
                       [&](Time u) { return longer ? u > r.best_interval : u < r.best_interval; });
  };
  std::vector<Time> nominals =
      swept_intervals(sweep_centre(r.daly, model.async_write_time(step.checkpoint_size)));
  std::optional<Time> last_tried;
  for (std::size_t k = 0; k < nominals.size(); ++k) {
    const Time interval = simulated_interval(nominals[k], step, steps);
    if (last_tried && *last_tried >= whole_run) break;
    if (!last_tried || *last_tried != interval) {
      last_tried = interval;
      const auto tried = run_interval(step, spec, model, interval, trials);
      if (!tried) {
        unfinished.push_back(interval);
      } else {
        if (r.sweep.empty()) r.sweep_failures = tried->restarts;
        const double mean = std::accumulate(tried->days.begin(), tried->days.end(), 0.0) / trials;
        days.push_back(tried->days);
        r.sweep.push_back(
            {.interval = interval, .mean_days = mean, .mean_goodput = tried->goodput});
        if (mean < best) {
          best = mean;
          best_at = r.sweep.size() - 1;
          r.best_interval = interval;
          r.best_past_run = interval >= whole_run;
        }
      }
    }
    const bool longest_best = !r.sweep.empty() && best_at + 1 == r.sweep.size();
    if (k + 1 == nominals.size() && longest_best && !unfinished_beyond(true) &&
        nominals.size() < kMostSwept) {
      if (const auto next = next_swept_interval(nominals.back())) nominals.push_back(*next);
    }
  }
  r.sweep_unfinished = static_cast<std::int64_t>(unfinished.size());
  if (r.sweep.empty()) return;
  // An end of the sweep is its edge only where nothing beyond it was tried: past the longest
  // the extension ran out, and below the shortest lies more than one step.
  const bool top =
      best_at + 1 == r.sweep.size() && !unfinished_beyond(true) && nominals.size() == kMostSwept;
  const bool bottom = best_at == 0 && !unfinished_beyond(false) &&
                      r.sweep.front().interval > time_per_step(step, steps);
  r.best_at_sweep_edge = !r.best_past_run && r.sweep.size() > 1 && (top || bottom);
  mark_alike(days, best_at, r);
}

}  // namespace megasim::run
