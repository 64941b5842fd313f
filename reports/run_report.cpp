#include "reports/run_report.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "reports/number_text.h"
#include "reports/power_report.h"

namespace megasim::reports {
namespace {

using run::Distribution;
using run::PowerInputs;
using run::ReliabilityModel;
using run::RunResult;
using run::StepProfile;

using Json = nlohmann::json;

Json dist(const Distribution& d) {
  return Json{{"mean", d.mean}, {"p10", d.p10}, {"p50", d.p50}, {"p90", d.p90}};
}

double minutes(Time t) {
  return t.to_seconds() / 60.0;
}

}  // namespace

namespace {

// The checkpoint interval simulated, the analytic optima and the simulated sweep.
Json checkpoint_json(const RunResult& r, const StepProfile& step, const ReliabilityModel& model) {
  Json sweep = Json::array();
  for (const auto& p : r.sweep) {
    sweep.push_back({{"interval_min", minutes(p.interval)},
                     {"mean_days", p.mean_days},
                     {"mean_goodput", p.mean_goodput},
                     {"alike_best", p.alike_best}});
  }
  const bool failures = std::isfinite(r.mtbf_hours);
  return {
      {"checkpoint_interval_min", model.checkpoint_interval == Time::max()
                                      ? Json(nullptr)
                                      : Json(minutes(r.checkpoint_interval))},
      {"checkpoint_blocking_s", r.checkpoint_cost.to_seconds()},
      {"checkpoint_async_write_min",
       model.async_checkpoint ? Json(minutes(model.async_write_time(step.checkpoint_size)))
                              : Json(nullptr)},
      {"young_interval_min", failures ? Json(minutes(r.young)) : Json(nullptr)},
      {"daly_interval_min", failures ? Json(minutes(r.daly)) : Json(nullptr)},
      // A sweep whose trials drew no failure ranks the checkpoints' cost alone: no best.
      {"best_interval_min",
       r.sweep.empty() || r.sweep_failures == 0 ? Json(nullptr) : Json(minutes(r.best_interval))},
      {"best_interval_past_run", !r.sweep.empty() && r.sweep_failures > 0 && r.best_past_run},
      {"checkpoints_in_run", r.checkpoints_in_run},
      {"best_interval_at_sweep_edge",
       !r.sweep.empty() && r.sweep_failures > 0 && r.best_at_sweep_edge},
      {"interval_sweep_unfinished", r.sweep_unfinished},
      {"interval_sweep_failures", r.sweep_failures},
      {"interval_sweep", sweep}};
}

}  // namespace

Json to_json(const RunResult& r, const StepProfile& step, const PowerInputs& power,
             const ReliabilityModel& model) {
  Json causes = Json::object();
  for (const auto& c : r.interruptions) causes[c.name] = c.mean_count;
  // What each cause's rate rests on: its count, days and units in the table, and the table's
  // source (read and never shown until 2026-12-07).
  Json sources = Json::object();
  for (const auto& c : model.causes) sources[c.name] = c.source;
  Json run = {
      {"reliability_preset", model.name},
      {"failure_rate_scale", model.failure_rate_scale},
      {"steps", r.steps},
      {"step_time_s", r.step_time.to_seconds()},
      {"failure_free_days", r.failure_free.to_days()},
      {"evaluation_hours", r.evaluation.to_hours()},
      {"evaluation_interval_steps", step.evaluation_interval_steps},
      {"evaluation_s", step.evaluation.to_seconds()},
      {"step_share", r.step_share},
      {"running_mfu", step.mfu * r.step_share},
      {"straggler_slowed_share", r.straggler_slowed_share},
      {"stragglers_in_step", model.stragglers_in_step},
      {"evict_stragglers", model.evict_stragglers},
      {"trials", r.trials},
      {"days", dist(r.days)},
      {"goodput", dist(r.goodput)},
      {"restarts", dist(r.restarts)},
      {"planned_stops", dist(r.planned_stops)},
      {"planned_stops_per_day", r.planned_per_day},
      {"planned_stop_min", minutes(r.planned_stop)},
      {"planned_hours", r.planned_hours},
      {"trial_days", r.trial_days},
      {"trial_goodput", r.trial_goodput},
      {"interruptions_by_cause", causes},
      {"interruption_sources", sources},
      {"lost_gpu_hours", r.lost_gpu_hours},
      {"rework_hours", r.rework_hours},
      {"straggler_hours", r.straggler_hours},
      {"down_hours", r.down_hours},
      {"spare_wait_hours", r.spare_wait_hours},
      {"launch_hours", r.launch_hours},
      {"checkpoint_hours", r.checkpoint_hours},
      {"failures_per_day", r.failures_per_day},
      {"mtbf_hours", std::isfinite(r.mtbf_hours) ? Json(r.mtbf_hours) : Json(nullptr)},
      {"recovery_min", minutes(r.recovery)},
      {"comm_init_s", model.comm_init.at(step.gpus).to_seconds()},
      {"comm_init_published_ranks", model.comm_init.published_ranks},
  };
  run.update(checkpoint_json(r, step, model));
  return Json{{"run", run}, {"power", power_json(r, step, power)}};
}

namespace {

// Failures a day: two decimals, or three digits for a job too small to fail weekly ("0.00
// failures/day" beside an MTBF of years read as none).
std::string rate_text(double per_day) {
  return per_day >= 0.1 || per_day == 0.0 ? fmt::format("{:.2f}", per_day)
                                          : fmt::format("{:.3g}", per_day);
}

// Wall-clock days, goodput and restarts over the trials. One trial is one draw of the
// failures: its percentiles would all be that draw, so it prints the draw and says so.
void append_outcomes(std::string& o, const RunResult& r) {
  const std::string mtbf = std::isfinite(r.mtbf_hours) ? fmt::format("{:.2f} h", r.mtbf_hours)
                                                       : std::string("none (no failures)");
  if (r.trials == 1) {
    o += fmt::format(
        "  wall-clock     {} (one trial: one draw of the failures; "
        "set run.trials for p10/p50/p90)\n",
        days_text(r.days.mean));
    o += fmt::format("  goodput        {:.1f}% effective training time (training steps / wall)\n",
                     100.0 * r.goodput.mean);
    o += fmt::format("  restarts       {:.0f}; {} failures/day, MTBF {}\n", r.restarts.mean,
                     rate_text(r.failures_per_day), mtbf);
    return;
  }
  // The mean too, which the energy, cost and lost GPU-hours are counted from (printed nowhere
  // until 2026-12-07, so a cost checked against the median differed unexplained).
  if (r.days.p90 >= 0.01) {
    o += fmt::format(
        "  wall-clock     p10 {:.2f} / p50 {:.2f} / p90 {:.2f} days, mean {:.2f} (energy and "
        "any cost are counted from the mean)\n",
        r.days.p10, r.days.p50, r.days.p90, r.days.mean);
  } else {
    o += fmt::format(
        "  wall-clock     p10 {} / p50 {} / p90 {}, mean {} (energy and any cost are "
        "counted from the mean)\n",
        days_text(r.days.p10), days_text(r.days.p50), days_text(r.days.p90),
        days_text(r.days.mean));
  }
  // The mean beside the deciles, named so (a skewed draw's mean can lie outside them).
  o += fmt::format(
      "  goodput        mean {:.1f}% (p10 {:.1f}%, p90 {:.1f}%) effective training time "
      "(training steps / wall)\n",
      100.0 * r.goodput.mean, 100.0 * r.goodput.p10, 100.0 * r.goodput.p90);
  // The deciles are interpolated, so one decimal each, as --json and the HTML page give them
  // (whole numbers until 2026-12-06: a p90 of 10.5 printed 10).
  o += fmt::format(
      "  restarts       mean {:.1f} (p10 {:.1f}, p90 {:.1f}); {} failures/day, MTBF {}\n",
      r.restarts.mean, r.restarts.p10, r.restarts.p90, rate_text(r.failures_per_day), mtbf);
}

// The running job's MFU, and what takes the running time the steps leave. Evicted stragglers
// cost spare nodes for a repair, not step time.
std::string running_mfu_line(const RunResult& r, const StepProfile& step, bool evaluating) {
  std::vector<std::string> rest;
  if (evaluating) rest.emplace_back("evaluation");
  if (r.checkpoint_hours > 0.0) rest.emplace_back("checkpoint stalls");
  if (r.straggler_slowed_share > 0.0) rest.emplace_back("stragglers");
  std::string others;
  for (std::size_t i = 0; i < rest.size(); ++i)
    others += (i == 0 ? "" : i + 1 == rest.size() ? " and " : ", ") + rest[i];
  // A share short of all of it never reads 100.0% beside what takes the rest.
  const double share = 100.0 * r.step_share;
  const std::string share_text = share < 99.95 || r.step_share >= 1.0
                                     ? fmt::format("the {:.1f}%", share)
                                 : share < 99.995 ? fmt::format("the {:.2f}%", share)
                                                  : std::string("over 99.99%");
  return fmt::format(
      "  running MFU    {:.1f}%: the step's {:.1f}% times {} of the running time spent in "
      "steps{}\n",
      100.0 * step.mfu * r.step_share, 100.0 * step.mfu, share_text,
      rest.empty() ? std::string()
                   : fmt::format(" ({} take{} the rest)", others,
                                 rest.size() == 1 && evaluating ? "s" : ""));
}

// Recovery as the model gives it with a spare free, and the trials' mean downtime a restart
// beside it where they differ, with what of it the replacements waited for a spare: a pool that
// runs short keeps the job waiting for a repair. Until 2026-12-05 any excess was put down to
// the pool, where a trial may simply draw more failures that need a node than the model's
// share (one such failure in a run of one restart).
std::string per_restart_line(const RunResult& r, const run::CommInitModel& init, std::int64_t gpus,
                             bool spares) {
  // No failure, no restart (the line read "0.0 min (comm init 0 s)" under the none preset).
  if (!(r.failures_per_day > 0.0)) return "  per restart    none (no failures)\n";
  // A time the preset's law carries far past its published points is said to be one: the
  // default's 1,047 s on 2,048 GPUs read 8,376 s on 16,384 without a word (a planner's trial,
  // 2026-12-07).
  constexpr double kSaidPast = 2.0;  // times the published ranks
  const double past = init.published_ranks > 0
                          ? static_cast<double>(gpus) / static_cast<double>(init.published_ranks)
                          : 0.0;
  const std::string extrapolated =
      past >= kSaidPast
          ? fmt::format(", extrapolated {:.1f}× past the {} ranks it was published at", past,
                        init.published_ranks)
          : "";
  std::string o = fmt::format("  per restart    {:.1f} min (comm init {:.0f} s{})",
                              minutes(r.recovery), init.at(gpus).to_seconds(), extrapolated);
  // Said, as the page says it (which read "with a spare free" here until 2026-12-06).
  if (!spares) o += ", the failed node's repair waited for: no spares";
  // Without spares the model's recovery holds the repair already: a trial that drew more
  // replacements is longer by chance, not for want of a spare.
  const double mean = r.restarts.mean > 0.0 ? 60.0 * r.down_hours / r.restarts.mean : 0.0;
  const double wait = r.restarts.mean > 0.0 ? 60.0 * r.spare_wait_hours / r.restarts.mean : 0.0;
  if (spares && mean > 1.05 * minutes(r.recovery)) {
    o += fmt::format(" with a spare free; {:.1f} min on average in the trials", mean);
    o += wait >= 0.05 ? fmt::format(", {:.1f} of it waiting for spares", wait)
                      : std::string(" (the failures they drew that need a node)");
  }
  return o + "\n";
}

// Planned stops: how many, how often and what each costs (none where the preset counts none).
std::string planned_line(const RunResult& r) {
  if (!(r.planned_per_day > 0.0)) return "";
  const auto& n = r.planned_stops;
  const std::string count =
      r.trials == 1 ? fmt::format("{:.0f}", n.mean)
                    : fmt::format("mean {:.1f} (p10 {:.1f}, p90 {:.1f})", n.mean, n.p10, n.p90);
  return fmt::format(
      "  planned stops  {}; {} a day of running, {:.1f} min each (the save waited for, "
      "relaunch, comm init, load), {:.1f} h in all\n",
      count, rate_text(r.planned_per_day), minutes(r.planned_stop), r.planned_hours);
}

// The interruptions by cause, most frequent first.
void append_causes(std::string& o, const RunResult& r) {
  // Counts, not hours: the list had no header under the lost GPU-hours, in the presets' order.
  std::vector<run::CauseSummary> causes;
  for (const auto& c : r.interruptions) {
    if (c.mean_count >= 0.05) causes.push_back(c);
  }
  std::stable_sort(causes.begin(), causes.end(),
                   [](const auto& a, const auto& b) { return a.mean_count > b.mean_count; });
  // One trial's counts are one draw, not a mean (a new user's walkthrough, 2026-12-05).
  if (!causes.empty()) {
    o += r.trials == 1 ? "  interruptions  by cause, counts of the one trial drawn:\n"
                       : "  interruptions  by cause, mean count a run:\n";
  }
  for (const auto& c : causes) {
    o += fmt::format("    {:<28} {:.{}f}\n", c.name, c.mean_count, r.trials == 1 ? 0 : 1);
  }
}

}  // namespace

// The checkpoint's line: its interval and cost, Young's and Daly's intervals and the sweep's
// best; none for a run that does not checkpoint.
std::string checkpoint_line(const RunResult& r, const StepProfile& step,
                            const ReliabilityModel& model) {
  if (model.checkpoint_interval == Time::max()) return "";
  std::string o;
  // An interval the run's steps do not reach takes no checkpoint (a one-step run said "every
  // 10.0 min" without a word until 2026-12-05).
  const bool none = !r.checkpoints_in_run;
  o += fmt::format("  checkpoint     every {:.1f} min{}, {:.1f} s blocking; ",
                   minutes(r.checkpoint_interval), none ? " (none within the run)" : "",
                   r.checkpoint_cost.to_seconds());
  o += !std::isfinite(r.mtbf_hours)
           ? std::string("no failures, so no Young or Daly interval")
           : fmt::format("Young {:.1f} min, Daly {:.1f} min", minutes(r.young), minutes(r.daly));
  if (!r.sweep.empty() && r.sweep_failures == 0) {
    // Only the checkpoints' cost to rank by: the longest interval would "win".
    o += ", no simulated best (the sweep's trials drew no failure)";
  } else if (!r.sweep.empty() && r.best_past_run) {
    // The sweep's last interval, past the run's steps: no checkpoint at all is best.
    o += ", best simulated: no checkpoint within the run";
  } else if (!r.sweep.empty()) {
    o += fmt::format(", best simulated {:.1f} min", minutes(r.best_interval));
    // The intervals the trials cannot tell from the best (a flat optimum, or too few failures
    // a trial to rank them), the unbroken run of them around the best (the span of every alike
    // one until 2026-12-05, which took in intervals between them that are not).
    std::size_t first = 0;
    while (first < r.sweep.size() && r.sweep[first].interval != r.best_interval) ++first;
    std::size_t last = first;
    while (first > 0 && r.sweep[first - 1].alike_best) --first;
    while (last + 1 < r.sweep.size() && r.sweep[last + 1].alike_best) ++last;
    double lo = minutes(r.best_interval), hi = lo;
    if (last < r.sweep.size()) {
      lo = minutes(r.sweep[first].interval);
      hi = minutes(r.sweep[last].interval);
    }
    if (hi > lo) o += fmt::format(" ({:.1f}–{:.1f} min alike within the trials' noise)", lo, hi);
    if (r.best_at_sweep_edge) {
      o += r.best_interval == r.sweep.front().interval
               ? " (the sweep's shortest: a shorter one may be better)"
               : " (the sweep's longest: a longer one may be better)";
    }
  }
  if (r.sweep_unfinished > 0) {
    o += fmt::format("; {} swept interval{} cannot finish (failures outpace {} checkpoints)",
                     r.sweep_unfinished, r.sweep_unfinished == 1 ? "" : "s",
                     r.sweep_unfinished == 1 ? "its" : "their");
  }
  // Young and Daly know only the blocking copy: an interval shorter than the asynchronous
  // write waits for it at the next checkpoint (the simulated sweep does).
  if (model.async_checkpoint && model.async_write_time(step.checkpoint_size) > Time::zero()) {
    const Time write = model.async_write_time(step.checkpoint_size);
    o += fmt::format("; the asynchronous write takes {:.1f} min", minutes(write));
    // The wait the blocking figure leaves out (a 0.1 min interval read "5.0 s blocking" beside
    // 316 h of checkpoint stalls until 2026-12-06, a user's trial).
    if (!none && r.checkpoint_interval < write) {
      o += fmt::format(
          ", longer than the interval: each checkpoint also waits about {:.0f} s for the last "
          "write",
          (write - r.checkpoint_interval).to_seconds());
    }
  }
  o += "\n";
  return o;
}

std::string to_text(const RunResult& r, const StepProfile& step, const PowerInputs& power,
                    const ReliabilityModel& model) {
  std::string o;
  o += fmt::format("run ({} trial{}, reliability preset {}{})\n", r.trials,
                   r.trials == 1 ? "" : "s", model.name,
                   model.failure_rate_scale == 1.0
                       ? ""
                       : fmt::format(", its failure rates × {:g}", model.failure_rate_scale));
  // An interval longer than the run evaluates nothing (r.evaluation is zero).
  const bool evaluating = r.evaluation > Time::zero();
  o += fmt::format(
      "  steps          {} at {:.3f} s; {} of steps{} alone (no failure, checkpoint or "
      "launch)\n",
      r.steps, r.step_time.to_seconds(), days_text(r.failure_free.to_days()),
      evaluating ? " and evaluations" : "");
  if (evaluating) {
    o += fmt::format(
        "  evaluation     {:.1f} s every {} step{}; {:.1f} h in all, {:.1f}% of the steps' and "
        "evaluations' time\n",
        step.evaluation.to_seconds(), step.evaluation_interval_steps,
        step.evaluation_interval_steps == 1 ? "" : "s", r.evaluation.to_hours(),
        100.0 * r.evaluation.to_seconds() / r.failure_free.to_seconds());
  }
  o += running_mfu_line(r, step, evaluating);
  append_outcomes(o, r);
  o += per_restart_line(r, model.comm_init, step.gpus, model.spares_for(step) > 0);
  o += planned_line(r);
  o += fmt::format(
      "  lost           {:.0f} GPU-hours (of the job's wall-clock: launch {:.2f} h, rework "
      "{:.1f} h, down {:.1f} h, {}checkpoints {:.1f} h{})\n",
      r.lost_gpu_hours, r.launch_hours, r.rework_hours, r.down_hours,
      r.planned_per_day > 0.0 ? fmt::format("planned stops {:.1f} h, ", r.planned_hours) : "",
      r.checkpoint_hours,
      r.straggler_hours > 0.0 ? fmt::format(", stragglers {:.1f} h", r.straggler_hours) : "");
  if (model.stragglers_in_step) {
    o += "  stragglers     the scenario's slow hosts (stragglers) pace every simulated step; "
         "the preset's straggler draw is off\n";
  }
  // Eviction is all or none (one straggler paces the step): a pool too small keeps them all,
  // and so does one whose spares their repair would leave short for the failures.
  if (model.evict_stragglers && r.straggler_slowed_share > 0.0) {
    o += fmt::format(
        "  stragglers     not evicted in {:.0f}% of the trials: more found than the spare pool "
        "holds (reliability.spare_nodes), or a wait for spares expected while their nodes are "
        "in repair longer than their slowdown of the run, so they slow every step\n",
        100.0 * r.straggler_slowed_share);
  }
  append_causes(o, r);
  o += checkpoint_line(r, step, model);
  append_power(o, r, power);
  return o;
}

}  // namespace megasim::reports
