#include "step/executor.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "step/executor_internal.h"

namespace megasim::step {
namespace detail {

Executor::Executor(const PipelineSchedule& sched, const std::vector<StageCosts>& costs,
                   const ExecutorConfig& cfg)
    : sched_(sched), costs_(costs), cfg_(cfg), sim_(1) {
  const int dp = cfg.full ? cfg.dp : 1;
  slots_ = sched.vpp * sched.micro_batches;
  for (int d = 0; d < dp; ++d) {
    for (int s = 0; s < sched.pp; ++s) {
      Unit u;
      u.d = d;
      u.s = s;
      u.slowdown = unit_slowdown(d, s);
      u.finished.assign(3 * slots_, kUnknown);
      u.arrived.assign(3 * slots_, kUnknown);
      u.produced.assign(3 * slots_, kUnknown);
      if (!cfg.pp_overlap) {
        u.exchange.inbox.assign(3 * slots_, BlockingMessage{});
      }
      u.dp.ag_done.assign(sched.vpp, !cfg.dp_overlap);
      u.dp.ag_buckets_done.assign(sched.vpp, 0);
      u.dp.ag_complete_at.assign(sched.vpp, Time::zero());
      u.dp.rs_buckets_sent.assign(sched.vpp, 0);
      u.dp.backward_left.assign(sched.vpp, sched.micro_batches);
      units_.push_back(std::move(u));
    }
  }
  // Every bucket's all-gather and reduce-scatter, twice over, and a few more; under ZeRO-2 a
  // reduce-scatter of every bucket after every backward pass.
  const std::size_t rounds =
      cfg.reduce_every_backward ? static_cast<std::size_t>(sched.micro_batches) : 1;
  for (int s = 0; s < sched.pp; ++s) {
    std::size_t n = 4;
    for (int c = 0; c < sched.vpp; ++c) {
      n += 2 * static_cast<std::size_t>(buckets(s, c)) +
           2 * rounds * static_cast<std::size_t>(reduce_buckets(s, c));
    }
    dp_stride_ = std::max(dp_stride_, n);
  }
  dp_members_ready_.assign(static_cast<std::size_t>(sched.pp) * dp_stride_, 0);
  if (!cfg.pp_overlap) {
    for (int s = 0; s < sched.pp; ++s) program_.push_back(blocking_p2p_program(sched, s));
    rendezvous_ = blocking_sends_rendezvous(sched);
  }
  init_network();
}

ExecutionResult Executor::run() {
  for (std::size_t i = 0; i < units_.size(); ++i) {
    sim_.at(Time::zero(), [this, i] { start_unit(static_cast<int>(i)); });
  }
  sim_.run();
  ExecutionResult r;
  r.stages.assign(sched_.pp, StageBreakdown{});
  for (const Unit& u : units_) {
    if (u.phase != StepPhase::kDone) {
      throw std::logic_error(fmt::format("step executor: stage {} of replica {} did not finish "
                                         "the step (dependency deadlock)", u.s, u.d));
    }
    StageBreakdown& b = r.stages[u.s];
    if (u.stats.end > b.end) b = u.stats;  // ties: replica 0, the one traced
    if (u.stats.end > r.step_time) {
      r.step_time = u.stats.end;
      r.critical_stage = u.s;
    }
  }
  r.events = sim_.events_run();
  r.ranks_simulated = static_cast<std::int64_t>(units_.size()) * (cfg_.full ? cfg_.tp : 1);
  if (solver_) {
    r.network_solves = solver_->solves();
    r.network_flows_solved = solver_->flows_solved();
  }
  r.trace = std::move(trace_);
  return r;
}

double Executor::unit_slowdown(int d, int s) const {
  if (cfg_.rank_slowdown.empty()) return 1.0;
  const workload::RankIndex ranks(cfg_.tp, sched_.pp, cfg_.dp);
  assert(static_cast<std::int64_t>(cfg_.rank_slowdown.size()) == ranks.size());
  double worst = 1.0;
  for (int t = 0; t < cfg_.tp; ++t) {
    worst = std::max(worst, cfg_.rank_slowdown[static_cast<std::size_t>(ranks.linear(s, d, t))]);
  }
  return worst;
}

void Executor::start_unit(int i) {
  Unit& u = units_[i];
  if (cfg_.dp_overlap) {
    for (int c = 0; c < sched_.vpp; ++c) {
      const int n = buckets(u.s, c);
      for (int b = 0; b < n; ++b) enqueue_dp(i, DpOp{true, c, b, n});
    }
  }
  u.phase = StepPhase::kPasses;
  const Time load = costs_[u.s].data_loading;
  if (load > Time::zero()) {
    u.stats.data_loading += load;
    return run_compute(i, load, false, "data loading");
  }
  try_compute(i);
}

void Executor::begin_wait(Unit& u, Wait why) {
  if (u.compute.waiting == Wait::kNone) {
    u.compute.waiting = why;
    u.compute.wait_since = sim_.now();
  }
}

void Executor::end_wait(Unit& u, std::int64_t producer_finish) {
  if (u.compute.waiting == Wait::kNone) return;
  const Time now = sim_.now();
  if (u.compute.waiting == Wait::kProducer || u.compute.waiting == Wait::kExchange) {
    // Bubble until the other side was ready (the producer finished, or the peers posted
    // their exchange), PP communication after.
    const Time ready = u.compute.waiting == Wait::kProducer ? Time::from_ns(producer_finish)
                                                    : u.exchange.ready;
    const Time split = std::clamp(ready, u.compute.wait_since, now);
    u.stats.bubble += split - u.compute.wait_since;
    u.stats.pp_exposed += now - split;
  } else {
    // The part spent for the DP group's slower members to reach the collective is theirs.
    const Time waited = now - u.compute.wait_since;
    const Time peers = std::min(u.dp.peer_wait, waited);
    u.stats.slowest_gpu += peers;
    u.stats.dp_exposed += waited - peers;
    u.dp.peer_wait = Time::zero();
    // Drawn as counted: the wait for slower members first, on the compute line as the rest of
    // slowest_gpu is, then the DP wait line's dp_exposed (all of it on that line until
    // 2026-12-06, a review's find); a pass held mid-way for its chunk's last bucket (compute
    // busy) is drawn by finish_pass instead.
    if (traced(u) && now > u.compute.wait_since && !u.compute.busy) {
      const char* what =
          u.compute.waiting == Wait::kAllGather  ? "parameter all-gather (before the pass)"
          : u.phase == StepPhase::kParameterSync ? "parameter all-gather (after the optimizer)"
          : u.phase == StepPhase::kGradientSync  ? "gradient reduction (before the optimizer)"
                                                 : "gradient reduce-scatters (before the pass)";
      const Time split = u.compute.wait_since + peers;
      if (peers > Time::zero()) {
        record(u, "compute", "waiting for the DP group's slower members (slowest gpu)",
               u.compute.wait_since, split);
      }
      if (now > split) record(u, "dp wait", what, split, now);
    }
  }
  u.compute.waiting = Wait::kNone;
}

void Executor::try_compute(int i) {
  Unit& u = units_[i];
  if (u.compute.busy || u.phase == StepPhase::kDone) return;
  if (u.phase == StepPhase::kPasses) {
    if (cfg_.reduce_every_backward && !cfg_.dp_overlap) {
      // Blocking ZeRO-2: a pass's reduce-scatters hold the next pass until they are done.
      if (u.dp.rs_outstanding > 0) return begin_wait(u, Wait::kDp);
      if (u.compute.waiting == Wait::kDp) end_wait(u, 0);
    }
    if (cfg_.pp_overlap ? next_pass(i) : next_step(i)) return;
    // All passes done: gradients.
    if (!cfg_.dp_overlap) {
      for (int c = 0; c < sched_.vpp; ++c) enqueue_dp(i, DpOp{false, c, 0, 1});
    }
    u.phase = StepPhase::kGradientSync;
    u.stats.passes_end = sim_.now();
  }
  if (u.phase == StepPhase::kGradientSync) {
    if (u.dp.rs_outstanding > 0) return begin_wait(u, Wait::kDp);
    end_wait(u, 0);
    u.phase = StepPhase::kOptimizer;
    const Time opt = costs_[u.s].optimizer;
    u.stats.optimizer += opt;
    return run_compute(i, opt, true, "optimizer step");
  }
  if (u.phase == StepPhase::kOptimizer) {
    u.phase = StepPhase::kParameterSync;
    if (!cfg_.dp_overlap) {
      for (int c = 0; c < sched_.vpp; ++c) enqueue_dp(i, DpOp{true, c, 0, 1});
    }
  }
  if (u.phase == StepPhase::kParameterSync) {
    if (u.dp.ag_outstanding > 0) return begin_wait(u, Wait::kDp);
    end_wait(u, 0);
    u.phase = StepPhase::kDone;
    u.stats.end = sim_.now();
  }
}

namespace {

// The timeline a traced pass is drawn with (executor_trace.cpp), or null: once a chunk and
// kind of pass, its first micro-batch. A pass's slices number its layers' collectives, and
// every micro-batch's are alike (a ZeRO-3 trace of 32 micro-batches took 26 MB and 0.5 GB to
// write with each drawn, a reviewer's trial, 2026-12-07).
const ShardedTimeline* detailed_timeline(const StageCosts& c, const PassId& p) {
  const auto& kept = p.pass == Pass::kForward    ? c.forward_timeline
                     : p.pass == Pass::kBackward ? c.backward_timeline
                                                 : c.weight_grad_timeline;
  const auto chunk = static_cast<std::size_t>(p.chunk);
  return p.micro_batch == 0 && chunk < kept.size() ? &kept[chunk] : nullptr;
}

}  // namespace

void Executor::start_pass(int i, const PassId& p) {
  Unit& u = units_[i];
  const StageCosts& c = costs_[u.s];
  const auto& t = p.pass == Pass::kForward    ? c.forward
                  : p.pass == Pass::kBackward ? c.backward
                                              : c.weight_grad;
  const auto& tp = p.pass == Pass::kForward    ? c.forward_tp
                   : p.pass == Pass::kBackward ? c.backward_tp
                                               : c.weight_grad_tp;
  const auto& dp = p.pass == Pass::kForward    ? c.forward_dp
                   : p.pass == Pass::kBackward ? c.backward_dp
                                               : c.weight_grad_dp;
  const bool slowed = p.pass == Pass::kForward || cfg_.slow_all_passes;
  const Time dp_wait = dp.empty() ? Time::zero() : dp[p.chunk];
  const Time waits = tp[p.chunk] + dp_wait;
  // A straggling host slows its kernels, not the exposed TP and ZeRO-3 waits (as the
  // slowest-GPU term below); until 2026-12-04 it stretched those too and booked them as compute.
  const Time kernels = t[p.chunk] - waits;
  const Time nominal = slowed ? waits + kernels * u.slowdown : t[p.chunk];
  const Time paced = kernels * cfg_.slowest_gpu;
  const Time capped = kernels * cfg_.power_cap;
  const Time work = nominal + paced + capped;
  if (!u.passes_begun) u.stats.dp_before_passes = u.stats.dp_exposed;
  u.passes_begun = true;
  u.stats.tp_exposed += tp[p.chunk];
  u.stats.dp_exposed += dp_wait;
  u.stats.compute += nominal - waits;
  u.stats.slowest_gpu += paced;
  u.stats.power_cap += capped;
  u.compute.running_pass = true;
  u.compute.current = p;
  const int n = buckets(u.s, p.chunk);
  if (p.pass == Pass::kForward && !u.dp.ag_done[p.chunk]) {
    // Started on the chunk's first buckets: its last bucket's layers wait for their parameters.
    u.compute.gate_chunk = p.chunk;
    u.compute.gate_tail = work * (1.0 / n);
  }
  const bool last_grad_pass = sched_.split_backward() ? p.pass == Pass::kWeightGrad
                                                      : p.pass == Pass::kBackward;
  // The chunk's last backward pass (under ZeRO-2 every one) produces its gradients bucket by
  // bucket: each bucket's reduce-scatter goes out when its share of the pass is done (the last
  // one at the end). ZeRO-2's went out at the pass's end until 2026-12-06.
  const int rn = reduce_buckets(u.s, p.chunk);
  const bool bucketed = cfg_.dp_overlap && rn > 1 && last_grad_pass &&
                        (u.dp.backward_left[p.chunk] == 1 || cfg_.reduce_every_backward);
  // Names are built only for traced ranks: this is the executor's hottest path.
  // A sharded pass (ZeRO-3, FSDP) waits on its layers' gathers between its kernels, an FP8 one
  // on its amax all-reduces (the part breakdown_s counts as dp_exposed): finish_pass draws
  // each chunk's first micro-batch as its timeline places them (executor_trace.cpp), the other
  // passes as one compute slice named with how long they waited, the waits summed after it.
  // Beside a collective the pass's kernels slow, not its waits (the exposed TP/CP exchanges,
  // ZeRO-3 and FP8 collectives: they slowed too until 2026-12-05), spread evenly over the
  // pass, as the executor does not order a pass's kernels and waits. A GEMM priced with its TP
  // collective (slowed by it in pricing) slows again beside a DP or PP collective: two NCCL
  // kernels beside it take SMs and memory bandwidth each (README, Known limitations).
  const double kernel_share =
      work > Time::zero()
          ? std::clamp(static_cast<double>((work - waits).ns()) / static_cast<double>(work.ns()),
                       0.0, 1.0)
          : 1.0;
  run_compute(i, work, true,
              !traced(u) ? std::string()
                         : fmt::format("{} mb{} c{}", to_string(p.pass), p.micro_batch, p.chunk),
              kernel_share);
  if (traced(u)) {
    pending_slices_[i].dp_wait = dp_wait;
    pending_slices_[i].timeline = detailed_timeline(c, p);
  }
  if (bucketed) {
    u.compute.bucket_chunk = p.chunk;
    u.compute.bucket_next = 1;
    u.compute.bucket_count = rn;
    schedule_bucket(i);
  }
}

void Executor::run_compute(int i, Time work, bool interferable, std::string name,
                           double slowed_share) {
  Unit& u = units_[i];
  u.compute.busy = true;
  u.compute.interferable = interferable;
  u.compute.slowed_share = slowed_share;
  u.compute.remaining_ns = static_cast<double>(work.ns());
  u.compute.rate_since = sim_.now();
  const Time start = sim_.now();
  u.compute.started = start;
  u.compute.nominal = work;
  schedule_completion(i);
  if (traced(u)) pending_slices_[i] = {std::move(name), start, Time::zero()};
}

void Executor::comm_changed(int i, int delta) {
  Unit& u = units_[i];
  const double old_rate = rate(u);
  u.active_comm += delta;
  if (!u.compute.busy || !u.compute.interferable || cfg_.interference == 0.0) return;
  const double new_rate = rate(u);
  if (new_rate == old_rate) return;
  const double elapsed = static_cast<double>((sim_.now() - u.compute.rate_since).ns());
  u.compute.remaining_ns = std::max(0.0, u.compute.remaining_ns - elapsed * old_rate);
  u.compute.rate_since = sim_.now();
  // The same completion, moved: the engine keeps its callback.
  u.compute.done_event = sim_.reschedule(u.compute.done_event, sim_.now() + time_left(u));
  if (u.compute.bucket_chunk >= 0) {  // and the next gradient bucket with it
    sim_.cancel(u.compute.bucket_event);
    schedule_bucket(i);
  }
}

void Executor::compute_done(int i) {
  Unit& u = units_[i];
  u.compute.work_end = sim_.now();
  if (u.compute.bucket_chunk >= 0) {  // a bucket due at the end: pass_done sends what is left
    sim_.cancel(u.compute.bucket_event);
    u.compute.bucket_chunk = -1;
  }
  if (u.compute.interferable) {
    // Interference stretched the work: the time is the pass's (or the optimizer's).
    const Time stretch = sim_.now() - u.compute.started - u.compute.nominal;
    (u.compute.running_pass ? u.stats.compute : u.stats.optimizer) += stretch;
  }
  const int c = u.compute.gate_chunk;
  if (u.compute.running_pass && c >= 0) {
    if (!u.dp.ag_done[c]) {
      // Held until the chunk's last bucket is gathered (finish_dp releases it).
      u.compute.held = true;
      begin_wait(u, Wait::kAllGather);
      return;
    }
    const Time ready = u.dp.ag_complete_at[c] + u.compute.gate_tail;
    u.compute.gate_chunk = -1;
    if (ready > sim_.now()) {
      begin_wait(u, Wait::kAllGather);
      return release_pass_at(i, ready);
    }
  }
  finish_pass(i);
}

void Executor::release_pass_at(int i, Time t) {
  sim_.at(t, [this, i] {
    end_wait(units_[i], 0);
    finish_pass(i);
  });
}

void Executor::finish_pass(int i) {
  Unit& u = units_[i];
  u.compute.busy = false;
  u.compute.held = false;
  if (traced(u)) {
    // A forward held for its chunk's last parameter bucket: the hold is DP time (dp_exposed),
    // drawn on the DP line, not as compute.
    const PendingSlice& slice = pending_slices_[i];
    const std::string& pass = slice.name;
    const std::string name = slice.dp_wait > Time::zero() ? fmt::format("{} (DP wait {:.3f} ms)",
                                                                        pass, slice.dp_wait.to_ms())
                                                          : pass;
    const Time work_end = u.compute.running_pass ? u.compute.work_end : sim_.now();
    if (slice.timeline != nullptr && !slice.timeline->compute.empty()) {
      record_sharded_pass(u, slice, work_end);
    } else {
      // Waits inside a pass drawn without its timeline (a later micro-batch, or StageCosts built
      // by hand), together at its end: the compute slice is the pass's compute, as breakdown_s
      // counts it.
      const Time compute_end = std::max(slice.start, work_end - slice.dp_wait);
      record(u, "compute", name, slice.start, compute_end);
      if (compute_end < work_end) {
        // ZeRO-3 / FSDP gathers, or FP8's amax all-reduces (priced on the DP group).
        record(u, "dp wait", "DP collectives inside the pass, summed (" + pass + ")", compute_end,
               work_end);
      }
    }
    if (sim_.now() > work_end) {
      record(u, "dp wait", "parameter all-gather (" + pass + ")", work_end, sim_.now());
    }
  }
  if (u.compute.running_pass) {
    u.compute.running_pass = false;
    ++(cfg_.pp_overlap ? u.next_pass : u.next_step);
    const PassId p = u.compute.current;  // a copy: `current` belongs to the unit's running pass
    pass_done(i, p);
  }
  try_compute(i);
}

void Executor::pass_done(int i, const PassId& p) {
  Unit& u = units_[i];
  u.finished[slot(p)] = sim_.now().ns();
  const bool last_grad_pass = sched_.split_backward() ? p.pass == Pass::kWeightGrad
                                                      : p.pass == Pass::kBackward;
  if (last_grad_pass) {
    const int left = --u.dp.backward_left[p.chunk];
    const int n = reduce_buckets(u.s, p.chunk);
    if (left == 0 && cfg_.dp_overlap) {
      send_rs_buckets(i, p.chunk, n);
    } else if (left > 0 && cfg_.reduce_every_backward && cfg_.dp_overlap) {
      // ZeRO-2: what is left of this micro-batch's buckets of the chunk; the next backward
      // pass sends its own from the first.
      send_rs_buckets(i, p.chunk, n);
      u.dp.rs_buckets_sent[p.chunk] = 0;
    } else if (left > 0 && cfg_.reduce_every_backward) {
      // Blocking ZeRO-2: all the chunk's buckets at the pass's end, holding the next pass.
      for (int b = 0; b < n; ++b) enqueue_dp(i, DpOp{false, p.chunk, b, n});
    }
  }
  // Asynchronous PP: hand the output to the consumer pass on the next (forward) or
  // previous (backward) virtual stage, if that lives on another stage. Blocking PP sends it
  // in the program's next exchange.
  if (!cfg_.pp_overlap) return;
  const auto [to, key] = consumer(u, p);
  if (to < 0) return;
  const StageCosts& c = costs_[u.s];
  u.pp.queue.emplace_back(p.pass == Pass::kForward ? c.pp_activation : c.pp_gradient, to);
  u.pp.dest_pass.push_back(key);
  u.pp.producer_finish.push_back(sim_.now().ns());
  start_pp(i);
}

}  // namespace detail

ExecutionResult execute_step(const PipelineSchedule& schedule,
                             const std::vector<StageCosts>& stages, const ExecutorConfig& config) {
  assert(static_cast<int>(stages.size()) == schedule.pp);
  detail::Executor e(schedule, stages, config);
  e.prepare_trace();
  return e.run();
}

}  // namespace megasim::step
