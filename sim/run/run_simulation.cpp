#include "run/run_simulation.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "engine/error.h"
#include "engine/simulator.h"
#include "run/run_steps.h"

namespace megasim::run {
namespace {

// One Monte Carlo trial as a small event simulation. The job is in one of four modes; every
// mode has exactly one pending "next" event (end of compute chunk, end of stall, end of
// recovery), plus the pending failure while it runs and the pending end of an async write.
class Trial {
 public:
  Trial(const StepProfile& step, std::int64_t steps, Time step_time, const ReliabilityModel& model,
        std::int64_t interval_steps, std::uint64_t seed, std::int64_t evicted)
      : model_(model),
        sim_(seed),
        step_time_(step_time),
        work_(step_time * steps),
        interval_steps_(interval_steps),
        stall_(model.blocking_checkpoint_time(step.checkpoint_size)),
        write_(model.async_write_time(step.checkpoint_size)),
        restart_(model.restart_time(step)),
        launch_(model.launch_time(step)),
        rate_(model.failures_per_hour(step)) {
    for (const auto& c : model_.causes) cause_rates_.push_back(model_.cause_rate_per_hour(c, step));
    spare_free_at_.assign(
        static_cast<std::size_t>(std::max<std::int64_t>(model_.spares_for(step), 0)), Time::zero());
    slot_repairs_.resize(spare_free_at_.size());
    // Stragglers evicted at launch: a spare each joins the job, their nodes out for repair.
    for (std::size_t i = 0; i < static_cast<std::size_t>(evicted); ++i) {
      spare_free_at_.at(i) = model_.repair_time;
      slot_repairs_[i].emplace_back(Time::zero(), model_.repair_time);
    }
    result_.by_cause.assign(model_.causes.size(), 0);
    result_.useful = work_;
  }

  TrialResult run() {
    // The first launch, as a restart's but with no checkpoint to load; no failure is drawn
    // during it, as none is during a restart.
    mode_ = Mode::kDown;
    next_ = sim_.at(launch_, [this] { start_running(); });
    sim_.run();
    result_.wall = sim_.now();
    result_.spares = static_cast<std::int64_t>(spare_free_at_.size());
    // In seconds: spares × a long run's wall overflows Time's 64-bit nanoseconds.
    double idle = result_.wall.to_seconds() * static_cast<double>(result_.spares);
    for (const auto& slot : slot_repairs_) {
      for (const auto& [start, end] : slot) {
        idle -= (std::min(end, result_.wall) - std::min(start, result_.wall)).to_seconds();
      }
    }
    result_.spare_idle_node_seconds = std::max(0.0, idle);
    return result_;
  }

 private:
  enum class Mode { kCompute, kStall, kWaitWrite, kDown, kDone };

  void start_running() {
    if (rate_ > 0.0) {
      // A failure past the latest a trial can run never comes: its last restart is within
      // kMaxRunSeconds (a later failure ends it unfinished) and its failure-free length too
      // (plan::check_run_work). Past the simulator's clock for an MTBF of centuries.
      const double hours = sim_.rng().exponential(1.0 / rate_);
      if (sim_.now().to_seconds() + hours * 3600.0 < 3.0 * kMaxRunSeconds)
        failure_ = sim_.after(Time::from_hours(hours), [this] { on_failure(); });
    }
    compute();
  }

  // Computes up to the next checkpoint mark (a whole number of steps past the last snapshot)
  // or the end of the run.
  void compute() {
    mode_ = Mode::kCompute;
    mode_since_ = sim_.now();
    const Time remaining = work_ - progress_;
    Time chunk = remaining;
    if (interval_steps_ > 0) {
      const Time to_mark = base_ + step_time_ * interval_steps_ - progress_;
      chunk = std::min(chunk, to_mark);
    }
    next_ = sim_.after(chunk, [this, chunk] { on_mark(chunk); });
  }

  void on_mark(Time chunk) {
    progress_ += chunk;
    result_.trained += chunk;
    if (progress_ >= work_) {
      mode_ = Mode::kDone;
      sim_.cancel(failure_);
      sim_.cancel(durable_);
      return;
    }
    if (write_pending_) {
      mode_ = Mode::kWaitWrite;  // the host copy of the previous checkpoint is still in use
      mode_since_ = sim_.now();
      return;
    }
    begin_stall();
  }

  void begin_stall() {
    mode_ = Mode::kStall;
    mode_since_ = sim_.now();
    next_ = sim_.after(stall_, [this] { on_stall_end(); });
  }

  void on_stall_end() {
    result_.checkpointing += stall_;
    if (progress_ > checkpointed_to_) {
      result_.first_checkpointing += stall_;
      checkpointed_to_ = progress_;
    }
    base_ = progress_;
    if (write_ <= Time::zero()) {
      durable_progress_ = progress_;
    } else {
      write_pending_ = true;
      pending_progress_ = progress_;
      durable_ = sim_.after(write_, [this] { on_durable(); });
    }
    compute();
  }

  void on_durable() {
    write_pending_ = false;
    durable_progress_ = pending_progress_;
    if (mode_ == Mode::kWaitWrite) {
      result_.checkpointing += sim_.now() - mode_since_;
      // The wait belongs to the checkpoint it holds back, first-time where that one is.
      if (progress_ > checkpointed_to_) result_.first_checkpointing += sim_.now() - mode_since_;
      begin_stall();
    }
  }

  void on_failure() {
    const Time now = sim_.now();
    switch (mode_) {
      case Mode::kCompute:
        result_.trained += now - mode_since_;
        break;
      case Mode::kStall:
      case Mode::kWaitWrite:
        result_.checkpointing += now - mode_since_;
        break;
      case Mode::kDown:
      case Mode::kDone:
        break;
    }
    sim_.cancel(next_);
    if (write_pending_) {
      sim_.cancel(durable_);
      write_pending_ = false;
    }
    progress_ = durable_progress_;
    base_ = durable_progress_;
    ++result_.restarts;
    if (now.to_seconds() > kMaxRunSeconds) {
      // Failures outpace the checkpoints: the trial ends unfinished (simulate_trial refuses
      // it, the interval sweep leaves the interval out).
      result_.finished = false;
      mode_ = Mode::kDone;
      return;
    }

    const std::size_t cause = pick_cause();
    ++result_.by_cause[cause];
    Time ready = now + model_.detection;
    if (model_.causes[cause].needs_replacement) ready = replace_node(now, ready);
    // Nothing durable yet (no checkpoint in the run, or a failure before the first one is
    // written): the job starts again from scratch, with no checkpoint to load (until
    // 2026-12-06 every restart loaded one, 148 s for 530B).
    const Time back = ready + (durable_progress_ > Time::zero() ? restart_ : launch_);
    result_.down += back - now;
    mode_ = Mode::kDown;
    next_ = sim_.at(back, [this] { start_running(); });
  }

  // A spare joins once one is free; the failed node returns to the pool after repair. With no
  // spares the job waits for its own node's repair.
  Time replace_node(Time now, Time ready) {
    if (spare_free_at_.empty()) return std::max(ready, now + model_.repair_time);
    auto it = std::min_element(spare_free_at_.begin(), spare_free_at_.end());
    if (*it > ready) result_.spare_wait += *it - ready;
    const Time joined = std::max(ready, *it) + model_.replacement_time;
    *it = now + model_.repair_time;
    // The slot's node is out from now until its repair ends; when the slot was already out
    // (the job waited for the node in repair), the two spans join rather than count twice.
    auto& spans = slot_repairs_[static_cast<std::size_t>(it - spare_free_at_.begin())];
    if (!spans.empty() && spans.back().second >= now) {
      spans.back().second = *it;
    } else {
      spans.emplace_back(now, *it);
    }
    return joined;
  }

  std::size_t pick_cause() {
    double u = sim_.rng().uniform() * rate_;
    for (std::size_t i = 0; i < cause_rates_.size(); ++i) {
      if (u < cause_rates_[i]) return i;
      u -= cause_rates_[i];
    }
    return cause_rates_.size() - 1;
  }

  const ReliabilityModel& model_;
  Simulator sim_;
  Time step_time_, work_;
  std::int64_t interval_steps_;  // 0: never checkpoint
  Time stall_, write_, restart_, launch_;
  double rate_;
  std::vector<double> cause_rates_;
  std::vector<Time> spare_free_at_;
  std::vector<std::vector<std::pair<Time, Time>>> slot_repairs_;  // each slot's spans out, joined

  Mode mode_ = Mode::kCompute;
  Time mode_since_;
  Time progress_, base_, durable_progress_, pending_progress_;
  Time checkpointed_to_;  // the furthest step a checkpoint's stall has ended at
  bool write_pending_ = false;
  EventId next_, failure_, durable_;
  TrialResult result_;
};

Time slowed(Time t, double slowdown) {
  return t * (1.0 + slowdown);
}

}  // namespace

TrialResult run_trial(const StepProfile& step, double tokens, const ReliabilityModel& model,
                      Time interval, std::uint64_t seed) {
  step.validate();
  const std::int64_t steps = steps_for(tokens, step);
  const auto n = static_cast<double>(steps);
  const Time per_step = time_per_step(step, steps);
  const StragglerEffect s = draw_stragglers(step, model, seed, per_step * n);
  Rng draw(seed);
  // The trial's first number decided a kept straggler until 2026-12-06 (draw_stragglers finds
  // them now, node by node on a stream of their own); still drawn, so that every trial's
  // failures are those of before, and the same with stragglers evicted, kept or absent.
  static_cast<void>(draw.uniform());
  const bool slow = s.slowed;
  // A straggler slows the evaluation's forward passes as much as the step's.
  const Time step_time = slow ? slowed(per_step, model.straggler_slowdown) : per_step;
  const std::int64_t every = interval_in_steps(interval, step_time);
  Trial t(step, steps, step_time, model, every, draw.next_u64(), s.evicted);
  TrialResult r = t.run();
  r.interval_steps = every;
  const Time evaluations = run_evaluation(step, steps);
  r.evaluation = r.useful * (evaluations.to_seconds() / (per_step * n).to_seconds());
  r.straggler_slowed = slow;
  if (slow) r.straggler = (step_time - per_step) * n;
  return r;
}

TrialResult simulate_trial(const StepProfile& step, double tokens, const ReliabilityModel& model,
                           Time interval, std::uint64_t seed) {
  TrialResult r = run_trial(step, tokens, model, interval, seed);
  if (!r.finished) {
    throw InputError(fmt::format(
        "run simulation: after {} interruptions and {:.0f} years the run has not finished; "
        "failures ({:.3g}/h) outpace checkpoints every {} steps "
        "(reliability.checkpoint_interval_min, run.tokens)",
        r.restarts, r.wall.to_days() / 365.0, model.failures_per_hour(step), r.interval_steps));
  }
  return r;
}

namespace {

// The run's figures from the reliability model alone: failure rate, MTBF, mean recovery,
// the checkpoint's interval and cost, and Young's and Daly's intervals.
void reliability_figures(const StepProfile& step, const ReliabilityModel& model, RunResult& r) {
  const double rate = model.failures_per_hour(step);
  r.failures_per_day = rate * 24.0;
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
  const double rate = model.failures_per_hour(step);
  reliability_figures(step, model, r);

  std::vector<double> days, goodput, restarts, lost;
  std::vector<double> causes(model.causes.size(), 0.0);
  double rework = 0.0, down = 0.0, spare_wait = 0.0, ckpt = 0.0, trained = 0.0, idle = 0.0,
         step_share = 0.0;
  double slowed = 0.0, straggler = 0.0, spare_node_seconds = 0.0, wall_seconds = 0.0;
  const double steps_alone = (step.step_time * r.steps).to_seconds();
  r.power = step_power(step, power);
  for (int t = 0; t < spec.trials; ++t) {
    const TrialResult tr = simulate_trial(step, spec.tokens, model, model.checkpoint_interval,
                                          trial_seed(spec.seed, t));
    days.push_back(tr.wall.to_days());
    goodput.push_back(trial_goodput(tr));
    restarts.push_back(static_cast<double>(tr.restarts));
    lost.push_back((tr.wall - tr.useful + tr.straggler).to_hours() *
                   static_cast<double>(step.gpus));
    straggler += tr.straggler.to_hours();
    for (std::size_t c = 0; c < causes.size(); ++c)
      causes[c] += static_cast<double>(tr.by_cause[c]);
    rework += (tr.trained - tr.useful).to_hours();
    down += tr.down.to_hours();
    spare_wait += tr.spare_wait.to_hours();
    ckpt += tr.checkpointing.to_hours();
    trained += tr.trained.to_seconds();
    idle += (tr.wall - tr.trained).to_seconds();
    step_share += steps_alone / (tr.useful + tr.first_checkpointing).to_seconds();
    slowed += tr.straggler_slowed ? 1.0 : 0.0;
    spare_node_seconds += tr.spare_idle_node_seconds;
    wall_seconds += tr.wall.to_seconds();
  }
  const double n = static_cast<double>(spec.trials);
  r.days = distribution(days);
  r.goodput = distribution(goodput);
  r.restarts = distribution(restarts);
  r.trial_days = days;
  r.trial_goodput = goodput;
  r.lost_gpu_hours = distribution(lost).mean;
  for (std::size_t c = 0; c < causes.size(); ++c) {
    r.interruptions.push_back({model.causes[c].name, causes[c] / n});
  }
  r.rework_hours = rework / n;
  r.straggler_hours = straggler / n;
  r.down_hours = down / n;
  r.spare_wait_hours = spare_wait / n;
  r.launch_hours = model.launch_time(step).to_hours();
  r.checkpoint_hours = ckpt / n;
  r.step_share = step_share / n;
  r.straggler_slowed_share = slowed / n;
  // Spares are reserved with the job (billed, or a small job's share); the places of nodes in
  // repair (failed, or evicted stragglers) draw no power.
  r.energy = run_energy(
      r.power, Time::from_seconds(trained / n), Time::from_seconds(idle / n), step.gpus,
      {model.spares_for(step), wall_seconds > 0.0 ? spare_node_seconds / wall_seconds : 0.0,
       step.gpus_per_node, model.billed_spare_share(step)},
      power);

  if (spec.sweep_checkpoint_interval &&
      sweeps_intervals(rate, r.checkpoint_cost, model.async_write_time(step.checkpoint_size)))
    sweep_intervals(step, spec, model, r);
  return r;
}

}  // namespace megasim::run
