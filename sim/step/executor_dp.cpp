// The step executor's DP stream: gradient buckets handed over as the last backward pass
// produces them, the queue of reduce-scatters and all-gathers, and each collective started once
// every member of its DP group is at it.
#include <algorithm>
#include <cassert>
#include <cmath>

#include <fmt/format.h>

#include "step/executor_internal.h"

namespace megasim::step::detail {

void Executor::schedule_bucket(int i) {
  Unit& u = units_[i];
  ComputeStream& c = u.compute;
  // Work left now, and what must be left when bucket_next's share is done (the pass's work
  // at full rate is `nominal`; until 2026-12-04 the buckets left at that share of `nominal`
  // after the start, early by however much DP or PP traffic had slowed the pass).
  const double left =
      c.remaining_ns - static_cast<double>((sim_.now() - c.rate_since).ns()) * rate(u);
  const double due_left = static_cast<double>(c.nominal.ns()) *
                          (1.0 - static_cast<double>(c.bucket_next) / c.bucket_count);
  const double wait_ns = std::max(0.0, (left - due_left) / rate(u));
  c.bucket_event = sim_.after(Time::from_ns_rounded(wait_ns), [this, i] { bucket_due(i); });
}

void Executor::bucket_due(int i) {
  ComputeStream& c = units_[i].compute;
  const int chunk = c.bucket_chunk, until = c.bucket_next;
  c.bucket_chunk = -1;  // none pending while these go out (their start re-rates the pass)
  send_rs_buckets(i, chunk, until);
  if (until + 1 < c.bucket_count) {
    c.bucket_chunk = chunk;
    c.bucket_next = until + 1;
    schedule_bucket(i);
  }
}

void Executor::send_rs_buckets(int i, int c, int until) {
  Unit& u = units_[i];
  const int n = reduce_buckets(u.s, c);
  for (int& b = u.dp.rs_buckets_sent[c]; b < until; ++b) enqueue_dp(i, DpOp{false, c, b, n});
}

void Executor::enqueue_dp(int i, DpOp op) {
  Unit& u = units_[i];
  (op.all_gather ? u.dp.ag_outstanding : u.dp.rs_outstanding) += 1;
  u.dp.queue.push_back(op);
  start_dp(i);
}

void Executor::start_dp(int i) {
  Unit& u = units_[i];
  if (u.dp.busy || u.dp.head == u.dp.queue.size()) return;
  u.dp.busy = true;  // reserved: waiting for the rest of the DP group
  u.dp.reserved_at = sim_.now();
  const std::size_t key = dp_key(u.s, u.dp.head);
  assert(u.dp.head < dp_stride_ && "more DP collectives on a stage than the stride holds");
  if (++dp_members_ready_[key] < (cfg_.full ? cfg_.dp : 1)) return;
  // Every member is at this collective: run it on all of them. A member whose compute already
  // waited for it waited this long for the slower ones (dp_exposed held it until 2026-12-06:
  // one host of 100 at half speed read as 1.86 s of DP communication).
  const DpOp op = u.dp.queue[u.dp.head];
  const int members = cfg_.full ? cfg_.dp : 1;
  const Time start = sim_.now();
  for (int d = 0; d < members; ++d) {
    Unit& v = units_[index(cfg_.full ? d : u.d, u.s)];
    if (v.compute.waiting != Wait::kNone && v.compute.waiting != Wait::kProducer &&
        v.compute.waiting != Wait::kExchange) {
      v.dp.peer_wait +=
          std::max(Time::zero(), start - std::max(v.dp.reserved_at, v.compute.wait_since));
    }
    comm_changed(index(cfg_.full ? d : u.d, u.s), +1);
  }
  const int s = u.s, d0 = u.d;
  run_dp(s, op, 0, [this, s, d0, members, op, start] { finish_dp(s, d0, members, op, start); });
}

// A bucket's share of its chunk's collective bytes, for the trace (zero where unknown).
Bytes Executor::dp_bucket_bytes(int s, const DpOp& op) const {
  const StageCosts& c = costs_[s];
  const auto& bytes = op.all_gather ? c.dp_all_gather_bytes : c.dp_reduce_scatter_bytes;
  const auto chunk = static_cast<std::size_t>(op.chunk);
  if (chunk >= bytes.size()) return Bytes(0);
  return Bytes(bytes[chunk].value() / static_cast<double>(std::max(op.buckets, 1)));
}

void Executor::finish_dp(int s, int d0, int members, DpOp op, Time start) {
  for (int d = 0; d < members; ++d) {
    const int m = index(cfg_.full ? d : d0, s);
    Unit& v = units_[m];
    // The gradients' reduction is a reduce-scatter with the distributed optimizer and an
    // all-reduce without. A call that takes no time is not drawn: DP 1, a plan without the
    // gather, or ZeRO-3/FSDP, whose collectives are priced inside the passes (sharded_pass.h).
    // With one replica the only reduction is the tied embedding's, between the pipeline's ends.
    if (sim_.now() > start) {
      const char* what = op.all_gather  ? "parameter all-gather"
                         : cfg_.dp == 1 ? "tied embedding gradient all-reduce"
                                        : "gradient reduction";
      record(v, "dp", fmt::format("{} c{}", what, op.chunk), start, sim_.now(),
             dp_bucket_bytes(s, op));
    }
    ++v.dp.head;
    v.dp.busy = false;
    comm_changed(m, -1);
    if (op.all_gather) {
      --v.dp.ag_outstanding;
      if (++v.dp.ag_buckets_done[op.chunk] == op.buckets) {
        v.dp.ag_done[op.chunk] = true;
        v.dp.ag_complete_at[op.chunk] = sim_.now();
        if (v.compute.held && v.compute.gate_chunk == op.chunk) {
          // Its pass's last bucket of layers runs now that their parameters are in.
          v.compute.gate_chunk = -1;
          release_pass_at(m, sim_.now() + v.compute.gate_tail);
        }
      }
    } else {
      --v.dp.rs_outstanding;
    }
  }
  for (int d = 0; d < members; ++d) {
    const int m = index(cfg_.full ? d : d0, s);
    start_dp(m);
    try_compute(m);
  }
}

}  // namespace megasim::step::detail
