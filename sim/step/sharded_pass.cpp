#include "step/sharded_pass.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace megasim::step {
namespace {

using Kind = ShardedSegment::Kind;

// The DP communication of the GPU: one collective at a time, in the order they are issued.
// Its busy spans are kept (each starts where the one before ended or later, so they are in
// order) for the compute that runs beside them.
struct DpLine {
  Time free;
  std::vector<std::pair<Time, Time>> busy;
  std::size_t passed = 0;  // spans that end before every compute still to come starts
  Time run(Time issued, Time duration) {
    const Time start = std::max(issued, free);
    free = start + duration;
    if (duration > Time::zero()) busy.emplace_back(start, free);
    return free;
  }
  // When compute of `work` nominal time started at `start` ends, slowed `slowdown` times
  // while the line is busy. Every span that can overlap it is on the line already: later
  // issues come at or after its end.
  Time compute_end(Time start, Time work, double slowdown) {
    while (passed < busy.size() && busy[passed].second <= start) ++passed;
    Time t = start, left = work;
    for (std::size_t i = passed; i < busy.size() && left > Time::zero(); ++i) {
      const auto [from, to] = busy[i];
      if (from > t) {  // free of the line until this span
        const Time alone = std::min(left, from - t);
        t += alone;
        left -= alone;
        if (left == Time::zero()) break;
      }
      const Time span = to - std::max(from, t);
      const Time slowed = left * slowdown;
      if (slowed <= span) return t + slowed;
      t += span;
      left -= span / slowdown;
    }
    return t + left;
  }
};

// The gathers feeding each compute segment (summed: they run one after another) and their
// host time before and after launch, by the compute segment's index; gathers after the last
// compute feed nothing.
struct Feeds {
  std::vector<Time> time, host, tail;
  Time trailing_time, trailing_host, trailing_tail;
  Time comm;  // every collective's time and host time
};

Feeds gathers_by_compute(const std::vector<ShardedSegment>& segments) {
  Feeds f;
  for (const ShardedSegment& s : segments) {
    if (s.kind != Kind::kCompute) f.comm += s.time + s.host + s.host_tail;
    if (s.kind == Kind::kGather) {
      f.trailing_time += s.time;
      f.trailing_host += s.host;
      f.trailing_tail += s.host_tail;
    }
    if (s.kind != Kind::kCompute) continue;
    f.time.push_back(f.trailing_time);
    f.host.push_back(f.trailing_host);
    f.tail.push_back(f.trailing_tail);
    f.trailing_time = f.trailing_host = f.trailing_tail = Time::zero();
  }
  return f;
}

// A scatter segment's collectives as issued: one per tensor, split into buckets by
// DeepSpeed's rule (a tensor that would take a non-empty bucket past `bucket_elements` closes
// it first); with no bucket size, the whole segment as one issue (its host time, then its
// collectives), as a framework without per-tensor host work is timed.
struct Issue {
  Time time, host, loop, copies, divide;
  bool opens_bucket = false;
};

std::vector<Issue> issues_of(const ShardedSegment& s, std::int64_t bucket_elements) {
  // The whole segment: its copies are in s.time already, net of what its loop hid.
  if (bucket_elements <= 0 || s.tensors.empty()) {
    return {Issue{s.time, s.host, Time::zero(), Time::zero(), Time::zero(), true}};
  }
  std::vector<Issue> out;
  std::int64_t filled = 0;
  for (const ShardedSegment::Tensor& t : s.tensors) {
    const bool opens = out.empty() || (filled > 0 && filled + t.elements > bucket_elements);
    if (opens) filled = 0;
    filled += t.elements;
    out.push_back({t.time, t.host, t.loop, t.copies, opens ? t.divide : Time::zero(), opens});
  }
  return out;
}

// Where the pass stands: the DP line, the host, the compute stream, the last reduction.
struct PassState {
  DpLine line;
  Time host;  // when the host is free to queue more work
  Time compute_free, last_scatter;
  Time buffer_work;  // the reduce buffer's copies and divisions (contiguous_gradients)
};

struct ScatterRules {
  std::int64_t bucket_elements = 0;
  bool blocking_reduce = false;
  bool in_line = false;  // no prefetch: the host waits for every reduction
};

// A scatter segment, issued once its layer's backward has ended, bucket by bucket. At a
// bucket's start, with a blocking reduce, the host waits for the previous bucket's
// collectives, and with it the compute it has not queued yet. Then each tensor: the host
// builds its inputs (queuing nothing else) and its collective starts, beside the next one's
// loop. The gradients' copies into the reduce buffer run on the compute stream before it.
void issue_scatter(const ShardedSegment& s, const ScatterRules& rules, PassState& st) {
  for (const ShardedSegment::Tensor& t : s.tensors) {
    st.compute_free += t.stream_copy;
    st.buffer_work += t.stream_copy;
  }
  Time issued = st.compute_free;
  Time waited = st.compute_free;  // when the last bucket could start
  for (const Issue& t : issues_of(s, rules.bucket_elements)) {
    if (t.opens_bucket) {
      issued = rules.blocking_reduce ? std::max(st.compute_free, st.last_scatter)
                                     : st.compute_free;
      waited = issued;
      if (t.divide > Time::zero()) st.line.run(issued, t.divide);
      st.buffer_work += t.divide;
    }
    if (t.host > Time::zero()) {
      st.host = std::max(st.host, issued) + t.host;
      issued = st.host;
    }
    // The copies the loop issues: on the DP line from the loop's start, after whatever
    // collective of the bucket is still on it; the collective after them.
    if (t.copies > Time::zero()) st.line.run(issued - t.loop, t.copies);
    st.last_scatter = st.line.run(issued, t.time);
  }
  if (rules.in_line)
    st.host = std::max(st.host, st.last_scatter);
  else if (rules.blocking_reduce)
    st.host = std::max(st.host, waited);
}

}  // namespace

ShardedPassTime sharded_pass_time(const std::vector<ShardedSegment>& segments, int prefetch,
                                  bool blocking_reduce, std::int64_t reduce_bucket_elements,
                                  double interference, bool fetch_waits_device) {
  const Feeds feeds = gathers_by_compute(segments);
  const std::vector<Time>& gather_for = feeds.time;
  const std::vector<Time>& host_for = feeds.host;
  const std::size_t n = gather_for.size();
  std::vector<Time> gathered(n);  // when compute segment k's parameters are in
  PassState state;
  DpLine& line = state.line;
  Time& host = state.host;
  const auto issue_gather = [&](std::size_t k, Time at) {
    if (k >= n || gather_for[k] + host_for[k] + feeds.tail[k] == Time::zero()) return;
    host = std::max(at, host) + host_for[k];
    const Time done = line.run(host, gather_for[k]);
    host += feeds.tail[k];  // the library's loop, beside the collective
    gathered[k] = std::max(done, host);
  };
  const std::size_t ahead = static_cast<std::size_t>(std::max(prefetch, 0));
  for (std::size_t k = 0; k < ahead; ++k) issue_gather(k, Time::zero());

  ShardedPassTime out;
  Time& compute_free = state.compute_free;
  std::size_t k = 0;
  for (const ShardedSegment& s : segments) {
    if (s.kind == Kind::kGather) continue;  // issued with the compute it feeds
    if (s.kind == Kind::kScatter) {
      issue_scatter(s, {reduce_bucket_elements, blocking_reduce, ahead == 0}, state);
      continue;
    }
    // A compute segment: in line, its gather starts once the previous compute has ended.
    if (fetch_waits_device && k < n && gather_for[k] + host_for[k] + feeds.tail[k] > Time::zero())
      host = std::max(host, state.last_scatter);  // the fetch's device synchronisation
    if (ahead == 0) issue_gather(k, std::max(compute_free, host));
    Time start = std::max({compute_free, host, gathered[k]});
    if (ahead > 0) {
      issue_gather(k + ahead, start);
      start = std::max(start, host);  // queued once the host has issued the prefetch
    }
    // The kernels' share of the segment is slowed; the shielded rest is not.
    const double kernels = s.time > Time::zero()
                               ? (s.time - std::min(s.shielded, s.time)).to_seconds() /
                                     s.time.to_seconds()
                               : 0.0;
    compute_free = line.compute_end(start, s.time, 1.0 + (interference - 1.0) * kernels);
    out.compute += compute_free - start;
    ++k;
  }
  Time trailing_end;
  if (feeds.trailing_time + feeds.trailing_host + feeds.trailing_tail > Time::zero()) {
    const Time issued = std::max(compute_free, host) + feeds.trailing_host;
    line.run(issued, feeds.trailing_time);
    trailing_end = issued + feeds.trailing_tail;
  }
  out.total = std::max({compute_free, line.free, trailing_end});
  out.dp_exposed = out.total - out.compute;
  out.dp_hidden = std::max(Time::zero(), feeds.comm + state.buffer_work - out.dp_exposed);
  return out;
}

}  // namespace megasim::step
