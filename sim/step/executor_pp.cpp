// Pipeline communication of the step executor: the asynchronous PP stream (MegaScale) and
// Megatron-LM's blocking exchanges, which run the stage's blocking p2p program.
#include <algorithm>
#include <cassert>
#include <utility>

#include <fmt/format.h>

#include "step/executor_internal.h"

namespace megasim::step::detail {

bool Executor::next_pass(int i) {
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
  // A forward pass needs its chunk's parameters: all of them, or with bucketed overlap the
  // first bucket (the pass then waits for the rest as it goes, start_pass).
  if (p.pass == Pass::kForward && !u.dp.ag_done[p.chunk] && u.dp.ag_buckets_done[p.chunk] == 0) {
    // The input is here: what the stage waited for it ends now (bubble, then PP), and the
    // wait for the parameters starts (DP); it was all counted as PP when they came.
    if (u.compute.waiting == Wait::kProducer) end_wait(u, producer_finish);
    begin_wait(u, Wait::kAllGather);
    return true;
  }
  end_wait(u, producer_finish);
  start_pass(i, p);
  return true;
}

bool Executor::next_step(int i) {
  Unit& u = units_[i];
  const auto& program = program_[u.s];
  if (u.next_step == program.size()) return false;
  const ProgramStep& step = program[u.next_step];
  if (step.exchange) {
    if (!u.exchange.open) post_exchange(i, step);
    if (u.exchange.pending > 0) {
      begin_wait(u, Wait::kExchange);
      return true;
    }
    end_wait(u, 0);
    u.exchange.open = false;
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
  if (p.pass == Pass::kForward && !u.dp.ag_done[p.chunk] && u.dp.ag_buckets_done[p.chunk] == 0) {
    begin_wait(u, Wait::kAllGather);
    return true;
  }
  end_wait(u, 0);
  start_pass(i, p);
  return true;
}

std::pair<int, int> Executor::consumer(const Unit& u, const PassId& p) const {
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

void Executor::record_send(int from, int to, int key, const char* name, Time start) {
  const Unit& u = units_[from];
  if (!traced(u)) return;
  // The key is slot(p) of the producing pass p; its consumer is the same kind of pass, of the
  // same micro-batch, on the next virtual stage (forward) or the previous one (backward).
  const PassId p{static_cast<Pass>(key / slots_), (key % slots_) % sched_.micro_batches,
                 (key % slots_) / sched_.micro_batches};
  const int vs = sched_.virtual_stage(u.s, p.chunk);
  const int to_vs = p.pass == Pass::kForward ? vs + 1 : vs - 1;
  trace_.push_back(
      {trace_rank(u.s), u.s, "pp", name, start, sim_.now(), trace_rank(units_[to].s),
       fmt::format("{} mb{} c{}", to_string(p.pass), p.micro_batch, sched_.chunk_of(to_vs)),
       costs_[u.s].pp_message});
}

void Executor::post_exchange(int i, const ProgramStep& step) {
  Unit& u = units_[i];
  u.exchange.open = true;
  u.exchange.pending = 0;
  u.exchange.ready = sim_.now();
  const std::int64_t now = sim_.now().ns();
  const StageCosts& c = costs_[u.s];
  for (const PassId& p : step.sends) {
    const auto [to, k] = consumer(u, p);
    assert(to >= 0);
    Unit& r = units_[to];
    ++u.exchange.pending;
    BlockingMessage& msg = r.exchange.inbox[k];
    msg.send_posted = now;
    msg.from = i;
    msg.transfer = p.pass == Pass::kForward ? c.pp_activation : c.pp_gradient;
    msg.send_share = static_cast<int>(step.sends.size());
    if (msg.recv_posted != kUnknown || !rendezvous_) start_message(to, k);
  }
  for (const PassId& p : step.recvs) {
    const int k = slot(dependency(sched_, u.s, p).pass);
    BlockingMessage& msg = u.exchange.inbox[k];
    msg.recv_posted = now;
    msg.recv_share = static_cast<int>(step.recvs.size());
    if (u.arrived[k] != kUnknown) continue;  // an eager send already delivered it
    ++u.exchange.pending;
    if (msg.send_posted != kUnknown && rendezvous_) start_message(i, k);
  }
}

void Executor::start_message(int to, int k) {
  Unit& r = units_[to];
  const BlockingMessage& msg = r.exchange.inbox[k];
  const int from = msg.from;
  const Time start = sim_.now();
  units_[from].exchange.ready = std::max(units_[from].exchange.ready, start);
  // An eager send may start before the receiver posts this receive: it does not move the
  // split of whatever exchange the receiver waits in now.
  if (msg.recv_posted != kUnknown) r.exchange.ready = std::max(r.exchange.ready, start);
  auto done = [this, from, to, k, start] {
    Unit& receiver = units_[to];
    receiver.arrived[k] = sim_.now().ns();
    receiver.produced[k] = receiver.exchange.inbox[k].send_posted;
    record_send(from, to, k, "send (blocking)", start);
    --units_[from].exchange.pending;
    if (receiver.exchange.inbox[k].recv_posted != kUnknown) --receiver.exchange.pending;
    try_compute(from);
    try_compute(to);
  };
  // On the network the messages of one exchange share the rank's links as flows; priced,
  // each takes its transfer time times the number of messages on the busier side.
  if (pp_on_network(units_[from].s)) return send_pp(from, to, std::move(done));
  sim_.after(msg.transfer * std::max(msg.send_share, msg.recv_share), std::move(done));
}

void Executor::deliver(int to, int key, std::int64_t produced) {
  Unit& r = units_[to];
  r.arrived[key] = sim_.now().ns();
  r.produced[key] = produced;
  try_compute(to);
}

void Executor::start_pp(int i) {
  Unit& u = units_[i];
  if (u.pp.busy || u.pp.head == u.pp.queue.size()) return;
  // Not a structured binding: clang before 16 cannot capture one in the lambda below.
  const Time duration = u.pp.queue[u.pp.head].first;
  const int to = u.pp.queue[u.pp.head].second;
  const int key = u.pp.dest_pass[u.pp.head];
  const std::int64_t produced = u.pp.producer_finish[u.pp.head];
  ++u.pp.head;
  u.pp.busy = true;
  comm_changed(i, +1);
  const Time start = sim_.now();
  auto done = [this, i, to, key, produced, start] {
    Unit& sender = units_[i];
    sender.pp.busy = false;
    record_send(i, to, key, "send", start);
    comm_changed(i, -1);
    deliver(to, key, produced);
    start_pp(i);
  };
  if (pp_on_network(u.s)) return send_pp(i, to, std::move(done));
  sim_.after(duration, std::move(done));
}

}  // namespace megasim::step::detail
