#include "run/run_simulation.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "engine/error.h"
#include "engine/rng.h"
#include "engine/simulator.h"
#include "run/run_steps.h"

namespace megasim::run {
namespace {

// Mixed into a trial's seed for its planned stops' stream (as draw_stragglers' own).
constexpr std::uint64_t kPlannedStream = 0x706c616e6e656421ull;

// One Monte Carlo trial as a small event simulation. The job is in one of four modes; every
// mode has exactly one pending "next" event (end of compute chunk, end of stall, end of
// recovery, the end of the step a planned stop waits for), plus the pending failure and
// planned stop while it runs and the pending end of an async write.
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
        planned_save_(model.planned_save_time(step.checkpoint_size)),
        rate_(model.failures_per_hour(step)),
        planned_draw_(seed ^ kPlannedStream) {
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
    result_.reached = progress_;
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
  // Failures and planned stops come in running time: the one pending when a stop of the other
  // kind takes the job down waits, what was left of it kept, until the job runs again.
  struct Arrival {
    EventId id;
    Time at;
    std::optional<Time> left;
  };

  void start_running() {
    arm(failure_, sim_.rng(), rate_, [this] { on_failure(); });
    arm(planned_, planned_draw_, model_.planned_per_hour, [this] { on_planned(); });
    compute();
  }

  // The next failure (or planned stop) in running time: what was left of the one a stop of
  // the other kind cut short, else a new draw. One past the latest a trial can run never
  // comes: its last restart is within kMaxRunSeconds (a later failure ends it unfinished) and
  // its failure-free length too (plan::check_run_work). Past the simulator's clock for an MTBF
  // of centuries.
  template <typename F>
  void arm(Arrival& a, Rng& draw, double per_hour, F callback) {
    Time in;
    if (a.left) {
      in = *a.left;
      a.left.reset();
    } else {
      if (!(per_hour > 0.0)) return;
      const double hours = draw.exponential(1.0 / per_hour);
      if (sim_.now().to_seconds() + hours * 3600.0 >= 3.0 * kMaxRunSeconds) return;
      in = Time::from_hours(hours);
    }
    a.at = sim_.now() + in;
    a.id = sim_.at(a.at, std::move(callback));
  }

  // A storage write under way is lost (a failure) or superseded (a stop's own save).
  void drop_pending_write() {
    if (!write_pending_) return;
    sim_.cancel(durable_);
    write_pending_ = false;
  }

  // Stops a pending arrival's clock while the job is down: what is left of it waits.
  void pause(Arrival& a) {
    if (!sim_.pending(a.id)) return;
    a.left = a.at - sim_.now();
    sim_.cancel(a.id);
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
      sim_.cancel(failure_.id);
      sim_.cancel(planned_.id);
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
    pause(planned_);
    drop_pending_write();
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

  // A planned stop arrives: the step under way ends first (Megatron-LM's exit handler saves
  // after the iteration), running as any step does (a failure may cut it, and the stop with
  // it), then stop(). Arriving in a checkpoint's stall or wait, the job stops at once. The next
  // arrival is drawn now: planned stops come in running time, the step's end included. A stop
  // the run's last step would reach is none: the run ends first.
  void on_planned() {
    const Time now = sim_.now();
    arm(planned_, planned_draw_, model_.planned_per_hour, [this] { on_planned(); });
    if (mode_ != Mode::kCompute) {
      result_.checkpointing += now - mode_since_;
      sim_.cancel(next_);
      return stop();
    }
    const Time done = progress_ + (now - mode_since_);
    const std::int64_t st = step_time_.ns();
    const Time boundary = Time::from_ns((done.ns() + st - 1) / st * st);
    if (boundary >= work_) return;
    result_.trained += done - progress_;
    progress_ = done;
    mode_since_ = now;
    sim_.cancel(next_);
    next_ = sim_.after(boundary - done, [this, boundary] {
      result_.trained += boundary - progress_;
      progress_ = boundary;
      stop();
    });
  }

  // The planned stop itself: the job saves a checkpoint and waits for its write (the save
  // supersedes one being taken or written), then relaunches and loads it; no work is lost. The
  // saves stay at their interval's marks (Megatron-LM saves at multiples of --save-interval).
  // Counted apart from the failures' restarts and downtime.
  void stop() {
    const Time now = sim_.now();
    pause(failure_);
    pause(planned_);
    drop_pending_write();
    durable_progress_ = progress_;
    checkpointed_to_ = progress_;
    // A stop at a checkpoint's mark has saved that checkpoint: the next is an interval on.
    if (interval_steps_ > 0 && progress_ >= base_ + step_time_ * interval_steps_) base_ = progress_;
    ++result_.planned_stops;
    if (now.to_seconds() > kMaxRunSeconds) {
      // Stops outlast the run's longest (simulate_trial refuses it, as failures').
      result_.finished = false;
      mode_ = Mode::kDone;
      return;
    }
    const Time back = now + planned_save_ + restart_;
    result_.planned_down += back - now;
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
  Time stall_, write_, restart_, launch_, planned_save_;
  double rate_;
  Rng planned_draw_;  // planned stops on a stream of their own: they move no failure
  std::vector<double> cause_rates_;
  std::vector<Time> spare_free_at_;
  std::vector<std::vector<std::pair<Time, Time>>> slot_repairs_;  // each slot's spans out, joined

  Mode mode_ = Mode::kCompute;
  Time mode_since_;
  Time progress_, base_, durable_progress_, pending_progress_;
  Time checkpointed_to_;  // the furthest step a checkpoint's stall has ended at
  bool write_pending_ = false;
  EventId next_, durable_;
  Arrival failure_, planned_;
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
  if (!r.finished && (r.restarts == 0 || r.planned_down > r.down + (r.trained - r.reached))) {
    // The planned stops took more than the failures did: their rate and cost hold it.
    throw InputError(fmt::format(
        "run simulation: after {} planned stops of {:.1f} min and {:.0f} years the run has not "
        "finished; they take more of its time than its failures (reliability.planned_stops_per_day "
        "{:.3g}, run.tokens)",
        r.planned_stops,
        (model.planned_save_time(step.checkpoint_size) + model.restart_time(step)).to_seconds() /
            60.0,
        r.wall.to_days() / 365.0, model.planned_per_hour * 24.0));
  }
  if (!r.finished) {
    throw InputError(fmt::format(
        "run simulation: after {} interruptions and {:.0f} years the run has not finished; "
        "failures ({:.3g}/h) outpace checkpoints every {} steps "
        "(reliability.checkpoint_interval_min, run.tokens)",
        r.restarts, r.wall.to_days() / 365.0, model.failures_per_hour(step), r.interval_steps));
  }
  return r;
}

}  // namespace megasim::run
