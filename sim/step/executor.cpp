#include "step/executor.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "engine/simulator.h"

namespace megasim::step {
namespace {

constexpr std::int64_t kUnknown = -1;

enum class Wait { kNone, kProducer, kAllGather, kDp, kExchange };

struct DpOp {
  bool all_gather = false;
  int chunk = 0;
};

// One simulated unit: a TP group (all TP ranks of one (data-parallel index, stage)), lock-stepped
// by the TP collectives inside every pass.
struct Unit {
  int d = 0, s = 0;
  double slowdown = 1.0;

  std::size_t next_pass = 0;  // into the schedule's order (asynchronous PP)
  std::size_t next_step = 0;  // into the blocking p2p program (Megatron-LM's PP)
  std::vector<std::int64_t> finished;  // [pass · V·m + chunk · m + mb]: own pass finish
  std::vector<std::int64_t> arrived;   // same index: input from another stage arrived
  std::vector<std::int64_t> produced;  // same index: producer finished (for attribution)

  // Compute stream.
  bool busy = false;
  double remaining_ns = 0.0;  // standalone work left in the running pass
  bool interferable = false;  // true for a compute pass (not a host synchronisation)
  bool running_pass = false;  // the compute stream runs `current`
  PassId current;
  Time rate_since;
  EventId done_event;
  Wait waiting = Wait::kNone;
  Time wait_since;
  int phase = 0;  // 0 start, 1 passes, 2 wait RS, 3 optimizer, 4 all-gather, 5 done

  // Blocking exchange in progress: messages not yet delivered, and when the last of them
  // could start (both sides posted).
  bool exchange_open = false;
  int exchange_pending = 0;
  Time exchange_ready;
  // Blocking messages to this unit, by the producing pass's index: when each side posted
  // (kUnknown until then), the sending unit, the transfer alone and how many messages share
  // each side's link in its exchange.
  std::vector<std::int64_t> send_posted, recv_posted;
  std::vector<int> send_from, send_share, recv_share;
  std::vector<Time> send_time;

  // Communication streams.
  int active_comm = 0;
  bool pp_busy = false;
  std::vector<std::pair<Time, int>> pp_queue;  // (duration, receiving unit), FIFO
  std::vector<int> pp_dest_pass;               // index into `arrived` of the receiver
  std::size_t pp_head = 0;
  std::vector<std::int64_t> pp_producer_finish;
  bool dp_busy = false;
  std::vector<DpOp> dp_queue;
  std::size_t dp_head = 0;
  std::vector<bool> ag_done;
  std::vector<int> backward_left;  // per chunk: B (or W) passes still to run
  int rs_outstanding = 0;
  int ag_outstanding = 0;

  StageBreakdown stats;
};

class Executor {
 public:
  Executor(const PipelineSchedule& sched, const std::vector<StageCosts>& costs,
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
          u.send_posted.assign(3 * slots_, kUnknown);
          u.recv_posted.assign(3 * slots_, kUnknown);
          u.send_from.assign(3 * slots_, 0);
          u.send_share.assign(3 * slots_, 1);
          u.recv_share.assign(3 * slots_, 1);
          u.send_time.assign(3 * slots_, Time::zero());
        }
        u.ag_done.assign(sched.vpp, !cfg.dp_overlap);
        u.backward_left.assign(sched.vpp, sched.micro_batches);
        units_.push_back(std::move(u));
      }
    }
    dp_members_ready_.assign(static_cast<std::size_t>(sched.pp) * (4 * sched.vpp + 4), 0);
    if (!cfg.pp_overlap) {
      for (int s = 0; s < sched.pp; ++s) program_.push_back(blocking_p2p_program(sched, s));
      rendezvous_ = sched.kind == workload::Schedule::kOneFOneB ||
                    sched.kind == workload::Schedule::kInterleaved;
    }
  }

  ExecutionResult run() {
    for (std::size_t i = 0; i < units_.size(); ++i) {
      sim_.at(Time::zero(), [this, i] { start_unit(static_cast<int>(i)); });
    }
    sim_.run();
    ExecutionResult r;
    r.stages.assign(sched_.pp, StageBreakdown{});
    for (const Unit& u : units_) {
      if (u.phase != 5) {
        throw std::logic_error(fmt::format("step executor: stage {} of replica {} did not finish "
                                           "the step (dependency deadlock)", u.s, u.d));
      }
      StageBreakdown& b = r.stages[u.s];
      if (u.stats.end >= b.end) b = u.stats;
      if (u.stats.end > r.step_time) {
        r.step_time = u.stats.end;
        r.critical_stage = u.s;
      }
    }
    r.events = sim_.events_run();
    r.ranks_simulated = static_cast<std::int64_t>(units_.size()) * (cfg_.full ? cfg_.tp : 1);
    r.trace = std::move(trace_);
    return r;
  }

 private:
  int index(int d, int s) const { return d * sched_.pp + s; }
  int slot(const PassId& p) const {
    return static_cast<int>(p.pass) * slots_ + p.chunk * sched_.micro_batches + p.micro_batch;
  }

  double unit_slowdown(int d, int s) const {
    if (cfg_.rank_slowdown.empty()) return 1.0;
    double worst = 1.0;
    for (int t = 0; t < cfg_.tp; ++t) {
      worst = std::max(worst, cfg_.rank_slowdown[(static_cast<std::size_t>(d) * sched_.pp + s) *
                                                     cfg_.tp + t]);
    }
    return worst;
  }

  bool traced(const Unit& u) const { return cfg_.record_trace && u.d == 0; }
  void record(const Unit& u, const char* stream, std::string name, Time start, Time end,
              int flow_to = -1) {
    if (!traced(u)) return;
    trace_.push_back({u.s * cfg_.tp, u.s, stream, std::move(name), start, end, flow_to});
  }

  // --- compute stream -------------------------------------------------------------------

  void start_unit(int i) {
    Unit& u = units_[i];
    if (cfg_.dp_overlap) {
      for (int c = 0; c < sched_.vpp; ++c) enqueue_dp(i, DpOp{true, c});
    }
    u.phase = 1;
    const Time load = costs_[u.s].data_loading;
    if (load > Time::zero()) {
      u.stats.data_loading += load;
      return run_compute(i, load, false, "data loading");
    }
    try_compute(i);
  }

  void begin_wait(Unit& u, Wait why) {
    if (u.waiting == Wait::kNone) {
      u.waiting = why;
      u.wait_since = sim_.now();
    }
  }

  void end_wait(Unit& u, std::int64_t producer_finish) {
    if (u.waiting == Wait::kNone) return;
    const Time now = sim_.now();
    if (u.waiting == Wait::kProducer || u.waiting == Wait::kExchange) {
      // Bubble until the other side was ready (the producer finished, or the peers posted
      // their exchange), PP communication after.
      const Time ready = u.waiting == Wait::kProducer ? Time::from_ns(producer_finish)
                                                      : u.exchange_ready;
      const Time split = std::clamp(ready, u.wait_since, now);
      u.stats.bubble += split - u.wait_since;
      u.stats.pp_exposed += now - split;
    } else {
      u.stats.dp_exposed += now - u.wait_since;
    }
    u.waiting = Wait::kNone;
  }

  void try_compute(int i) {
    Unit& u = units_[i];
    if (u.busy || u.phase == 5) return;
    if (u.phase == 1) {
      if (cfg_.pp_overlap ? next_pass(i) : next_step(i)) return;
      // All passes done: gradients.
      if (!cfg_.dp_overlap) {
        for (int c = 0; c < sched_.vpp; ++c) enqueue_dp(i, DpOp{false, c});
      }
      u.phase = 2;
    }
    if (u.phase == 2) {
      if (u.rs_outstanding > 0) return begin_wait(u, Wait::kDp);
      end_wait(u, 0);
      u.phase = 3;
      const Time opt = costs_[u.s].optimizer;
      u.stats.optimizer += opt;
      return run_compute(i, opt, true, "optimizer step");
    }
    if (u.phase == 3) {
      u.phase = 4;
      if (!cfg_.dp_overlap) {
        for (int c = 0; c < sched_.vpp; ++c) enqueue_dp(i, DpOp{true, c});
      }
    }
    if (u.phase == 4) {
      if (u.ag_outstanding > 0) return begin_wait(u, Wait::kDp);
      end_wait(u, 0);
      u.phase = 5;
      u.stats.end = sim_.now();
    }
  }

  // Asynchronous PP: start the next pass of the schedule once its input is here. False when
  // every pass has run.
  bool next_pass(int i) {
    Unit& u = units_[i];
    const auto& order = sched_.order[u.s];
    if (u.next_pass == order.size()) return false;
    const PassId& p = order[u.next_pass];
    const Dependency dep = dependency(sched_, u.s, p);
    std::int64_t producer_finish = 0;
    if (dep.found) {
      const int k = slot(dep.pass);
      if (dep.crosses_stages) {
        if (u.arrived[k] == kUnknown) {
          begin_wait(u, Wait::kProducer);
          return true;
        }
        producer_finish = u.produced[k];
      } else if (u.finished[k] == kUnknown) {
        begin_wait(u, Wait::kProducer);
        return true;
      }
    }
    if (p.pass == Pass::kForward && !u.ag_done[p.chunk]) {
      begin_wait(u, Wait::kAllGather);
      return true;
    }
    end_wait(u, producer_finish);
    start_pass(i, p);
    return true;
  }

  // Blocking PP (Megatron-LM): the next step of the stage's program, a pass or an exchange.
  // False when the program is done.
  bool next_step(int i) {
    Unit& u = units_[i];
    const auto& program = program_[u.s];
    if (u.next_step == program.size()) return false;
    const ProgramStep& step = program[u.next_step];
    if (step.exchange) {
      if (!u.exchange_open) post_exchange(i, step);
      if (u.exchange_pending > 0) {
        begin_wait(u, Wait::kExchange);
        return true;
      }
      end_wait(u, 0);
      u.exchange_open = false;
      ++u.next_step;
      // The device synchronisation after the exchange: the next pass is launched afresh.
      const Time sync = cfg_.blocking_p2p_overhead;
      if (sync > Time::zero()) {
        u.stats.pp_exposed += sync;
        run_compute(i, sync, false, "pp exchange sync");
        return true;
      }
      return next_step(i);
    }
    const PassId& p = step.pass;
    // The program received every input from another stage in an earlier exchange; inputs
    // from this stage (the last virtual stage's forward, for its backward) are finished.
    assert([&] {
      const Dependency dep = dependency(sched_, u.s, p);
      if (!dep.found) return true;
      const int k = slot(dep.pass);
      return dep.crosses_stages ? u.arrived[k] != kUnknown : u.finished[k] != kUnknown;
    }());
    if (p.pass == Pass::kForward && !u.ag_done[p.chunk]) {
      begin_wait(u, Wait::kAllGather);
      return true;
    }
    end_wait(u, 0);
    start_pass(i, p);
    return true;
  }

  void start_pass(int i, const PassId& p) {
    Unit& u = units_[i];
    const StageCosts& c = costs_[u.s];
    const auto& t = p.pass == Pass::kForward    ? c.forward
                    : p.pass == Pass::kBackward ? c.backward
                                                : c.weight_grad;
    const auto& tp = p.pass == Pass::kForward    ? c.forward_tp
                     : p.pass == Pass::kBackward ? c.backward_tp
                                                 : c.weight_grad_tp;
    const bool slowed = p.pass == Pass::kForward || cfg_.slow_all_passes;
    const Time work = Time::from_seconds(t[p.chunk].to_seconds() * (slowed ? u.slowdown : 1.0));
    u.stats.tp_exposed += tp[p.chunk];
    u.stats.compute += work - tp[p.chunk];
    u.running_pass = true;
    u.current = p;
    // Names are built only for traced ranks: this is the executor's hottest path.
    run_compute(i, work, true,
                traced(u) ? fmt::format("{} mb{} c{}", to_string(p.pass), p.micro_batch, p.chunk)
                          : std::string());
  }

  double rate(const Unit& u) const {
    return u.interferable && u.active_comm > 0 ? 1.0 / (1.0 + cfg_.interference) : 1.0;
  }

  void run_compute(int i, Time work, bool interferable, std::string name) {
    Unit& u = units_[i];
    u.busy = true;
    u.interferable = interferable;
    u.remaining_ns = static_cast<double>(work.ns());
    u.rate_since = sim_.now();
    const Time start = sim_.now();
    schedule_completion(i);
    if (traced(u)) pending_names_[i] = {std::move(name), start};
  }

  void schedule_completion(int i) {
    Unit& u = units_[i];
    const Time left = Time::from_ns(std::llround(u.remaining_ns / rate(u)));
    u.done_event = sim_.after(left, [this, i] { compute_done(i); });
  }

  // The set of communication tasks beside unit i's compute changed: re-rate its running pass.
  void comm_changed(int i, int delta) {
    Unit& u = units_[i];
    const double old_rate = rate(u);
    u.active_comm += delta;
    if (!u.busy || !u.interferable || cfg_.interference == 0.0) return;
    const double new_rate = rate(u);
    if (new_rate == old_rate) return;
    const double elapsed = static_cast<double>((sim_.now() - u.rate_since).ns());
    u.remaining_ns = std::max(0.0, u.remaining_ns - elapsed * old_rate);
    u.rate_since = sim_.now();
    sim_.cancel(u.done_event);
    schedule_completion(i);
  }

  void compute_done(int i) {
    Unit& u = units_[i];
    u.busy = false;
    if (traced(u)) {
      auto& [name, start] = pending_names_[i];
      record(u, "compute", name, start, sim_.now());
    }
    if (u.running_pass) {
      u.running_pass = false;
      ++(cfg_.pp_overlap ? u.next_pass : u.next_step);
      const PassId p = u.current;  // a copy: `current` belongs to the unit's running pass
      pass_done(i, p);
    }
    try_compute(i);
  }

  void pass_done(int i, const PassId& p) {
    Unit& u = units_[i];
    u.finished[slot(p)] = sim_.now().ns();
    const bool last_grad_pass = sched_.split_backward() ? p.pass == Pass::kWeightGrad
                                                        : p.pass == Pass::kBackward;
    if (last_grad_pass && --u.backward_left[p.chunk] == 0 && cfg_.dp_overlap) {
      enqueue_dp(i, DpOp{false, p.chunk});
    }
    // Asynchronous PP: hand the output to the consumer pass on the next (forward) or
    // previous (backward) virtual stage, if that lives on another stage. Blocking PP sends it
    // in the program's next exchange.
    if (!cfg_.pp_overlap) return;
    const auto [to, key] = consumer(u, p);
    if (to < 0) return;
    const StageCosts& c = costs_[u.s];
    u.pp_queue.emplace_back(p.pass == Pass::kForward ? c.pp_activation : c.pp_gradient, to);
    u.pp_dest_pass.push_back(key);
    u.pp_producer_finish.push_back(sim_.now().ns());
    start_pp(i);
  }

  // The unit on another stage that consumes the output of pass p of unit u, and the index of
  // p there (`arrived` and the blocking messages are indexed by the producing pass);
  // {-1, -1} when the consumer is on the same stage or there is none.
  std::pair<int, int> consumer(const Unit& u, const PassId& p) const {
    if (p.pass == Pass::kWeightGrad) return {-1, -1};
    const int vs = sched_.virtual_stage(u.s, p.chunk);
    const int to_vs = p.pass == Pass::kForward ? vs + 1 : vs - 1;
    if (to_vs < 0 || to_vs >= sched_.pp * sched_.vpp) return {-1, -1};
    const int to_stage = sched_.stage_of(to_vs);
    if (to_stage == u.s) return {-1, -1};  // same rank: the consumer reads `finished`
    assert((dependency(sched_, to_stage, {p.pass, p.micro_batch, sched_.chunk_of(to_vs)}).pass ==
            p));
    return {index(u.d, to_stage), slot(p)};
  }

  // --- blocking exchanges (Megatron-LM) ---------------------------------------------------

  // Posts every send and receive of unit i's exchange. Under Megatron-LM's 1F1B schedules a
  // message starts once both of its sides are posted (NCCL's rendezvous); other schedules
  // were not written for blocking exchanges (zero-bubble deadlocks with them), so there a
  // send starts at once and waits in the receiver's buffer. Messages of one exchange share
  // the rank's link: each takes its transfer time times the number of messages on the
  // busier side.
  void post_exchange(int i, const ProgramStep& step) {
    Unit& u = units_[i];
    u.exchange_open = true;
    u.exchange_pending = 0;
    u.exchange_ready = sim_.now();
    const std::int64_t now = sim_.now().ns();
    const StageCosts& c = costs_[u.s];
    for (const PassId& p : step.sends) {
      const auto [to, k] = consumer(u, p);
      assert(to >= 0);
      Unit& r = units_[to];
      ++u.exchange_pending;
      r.send_posted[k] = now;
      r.send_from[k] = i;
      r.send_time[k] = p.pass == Pass::kForward ? c.pp_activation : c.pp_gradient;
      r.send_share[k] = static_cast<int>(step.sends.size());
      if (r.recv_posted[k] != kUnknown || !rendezvous_) start_message(to, k);
    }
    for (const PassId& p : step.recvs) {
      const int k = slot(dependency(sched_, u.s, p).pass);
      u.recv_posted[k] = now;
      u.recv_share[k] = static_cast<int>(step.recvs.size());
      if (u.arrived[k] != kUnknown) continue;  // an eager send already delivered it
      ++u.exchange_pending;
      if (u.send_posted[k] != kUnknown && rendezvous_) start_message(i, k);
    }
  }

  void start_message(int to, int k) {
    Unit& r = units_[to];
    const int from = r.send_from[k];
    const Time start = sim_.now();
    units_[from].exchange_ready = std::max(units_[from].exchange_ready, start);
    // An eager send may start before the receiver posts this receive: it does not move the
    // split of whatever exchange the receiver waits in now.
    if (r.recv_posted[k] != kUnknown) r.exchange_ready = std::max(r.exchange_ready, start);
    const Time duration = r.send_time[k] * std::max(r.send_share[k], r.recv_share[k]);
    sim_.after(duration, [this, from, to, k, start] {
      Unit& receiver = units_[to];
      receiver.arrived[k] = sim_.now().ns();
      receiver.produced[k] = receiver.send_posted[k];
      record(units_[from], "pp", "send (blocking)", start, sim_.now(), units_[to].s * cfg_.tp);
      --units_[from].exchange_pending;
      if (receiver.recv_posted[k] != kUnknown) --receiver.exchange_pending;
      try_compute(from);
      try_compute(to);
    });
  }

  void deliver(int to, int key, std::int64_t produced) {
    Unit& r = units_[to];
    r.arrived[key] = sim_.now().ns();
    r.produced[key] = produced;
    try_compute(to);
  }

  // --- PP stream ------------------------------------------------------------------------

  void start_pp(int i) {
    Unit& u = units_[i];
    if (u.pp_busy || u.pp_head == u.pp_queue.size()) return;
    const auto [duration, to] = u.pp_queue[u.pp_head];
    const int key = u.pp_dest_pass[u.pp_head];
    const std::int64_t produced = u.pp_producer_finish[u.pp_head];
    ++u.pp_head;
    u.pp_busy = true;
    comm_changed(i, +1);
    const Time start = sim_.now();
    sim_.after(duration, [this, i, to, key, produced, start] {
      Unit& sender = units_[i];
      sender.pp_busy = false;
      record(sender, "pp", "send", start, sim_.now(), units_[to].s * cfg_.tp);
      comm_changed(i, -1);
      deliver(to, key, produced);
      start_pp(i);
    });
  }

  // --- DP stream ------------------------------------------------------------------------

  void enqueue_dp(int i, DpOp op) {
    Unit& u = units_[i];
    (op.all_gather ? u.ag_outstanding : u.rs_outstanding) += 1;
    u.dp_queue.push_back(op);
    start_dp(i);
  }

  // Which DP collective of stage s this is (its position in every member's DP queue).
  std::size_t dp_key(int s, std::size_t position) const {
    return static_cast<std::size_t>(s) * (4 * sched_.vpp + 4) + position;
  }

  void start_dp(int i) {
    Unit& u = units_[i];
    if (u.dp_busy || u.dp_head == u.dp_queue.size()) return;
    u.dp_busy = true;  // reserved: waiting for the rest of the DP group
    const std::size_t key = dp_key(u.s, u.dp_head);
    if (++dp_members_ready_[key] < (cfg_.full ? cfg_.dp : 1)) return;
    // Every member is at this collective: run it on all of them.
    const DpOp op = u.dp_queue[u.dp_head];
    const StageCosts& c = costs_[u.s];
    const Time duration = op.all_gather ? c.dp_all_gather[op.chunk] : c.dp_reduce_scatter[op.chunk];
    const int members = cfg_.full ? cfg_.dp : 1;
    for (int d = 0; d < members; ++d) comm_changed(index(cfg_.full ? d : u.d, u.s), +1);
    const Time start = sim_.now();
    const int s = u.s, d0 = u.d;
    sim_.after(duration, [this, s, d0, members, op, start] {
      for (int d = 0; d < members; ++d) {
        const int m = index(cfg_.full ? d : d0, s);
        Unit& v = units_[m];
        record(v, "dp", fmt::format("{} c{}", op.all_gather ? "all-gather" : "reduce-scatter",
                                    op.chunk),
               start, sim_.now());
        ++v.dp_head;
        v.dp_busy = false;
        comm_changed(m, -1);
        if (op.all_gather) {
          --v.ag_outstanding;
          v.ag_done[op.chunk] = true;
        } else {
          --v.rs_outstanding;
        }
      }
      for (int d = 0; d < members; ++d) {
        const int m = index(cfg_.full ? d : d0, s);
        start_dp(m);
        try_compute(m);
      }
    });
  }

  const PipelineSchedule& sched_;
  const std::vector<StageCosts>& costs_;
  const ExecutorConfig& cfg_;
  Simulator sim_;
  int slots_ = 0;
  std::vector<Unit> units_;
  std::vector<int> dp_members_ready_;
  std::vector<std::vector<ProgramStep>> program_;  // per stage, blocking PP only
  bool rendezvous_ = false;  // blocking sends wait for the receiver to post
  std::vector<TraceRecord> trace_;
  std::vector<std::pair<std::string, Time>> pending_names_;

 public:
  void prepare_trace() { pending_names_.resize(units_.size()); }
};

}  // namespace

ExecutionResult execute_step(const PipelineSchedule& schedule,
                             const std::vector<StageCosts>& stages, const ExecutorConfig& config) {
  assert(static_cast<int>(stages.size()) == schedule.pp);
  Executor e(schedule, stages, config);
  e.prepare_trace();
  return e.run();
}

}  // namespace megasim::step
