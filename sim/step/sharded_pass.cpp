#include "step/sharded_pass.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace megasim::step {
namespace {

using Kind = ShardedSegment::Kind;

// What a span of the line is, for the trace (ShardedTimeline::DpSpan).
struct Work {
  DpWork what = DpWork::kAllGather;
  int layer = -1;
  Bytes bytes;
};

// A span from `from` to `to` added to `spans`, in order: joined to the last where they touch.
void keep_span(std::vector<std::pair<Time, Time>>& spans, Time from, Time to) {
  if (to <= from) return;
  if (!spans.empty() && spans.back().second == from)
    spans.back().second = to;
  else
    spans.emplace_back(from, to);
}

// The DP communication of the GPU: one collective at a time, in the order they are issued.
// Its busy spans are kept (each starts where the one before ended or later, so they are in
// order) for the compute that runs beside them; with a timeline, its spans and the host's
// issuing work for the trace too.
struct DpLine {
  Time free;
  std::vector<std::pair<Time, Time>> busy;
  std::size_t passed = 0;  // spans that end before every compute still to come starts
  ShardedTimeline* timeline = nullptr;
  Time run(Time issued, Time duration, const Work& work) {
    const Time start = std::max(issued, free);
    free = start + duration;
    if (duration > Time::zero()) {
      busy.emplace_back(start, free);
      if (timeline != nullptr) keep(start, work);
    }
    return free;
  }
  void keep(Time start, const Work& work) {
    auto& spans = timeline->dp;
    if (!spans.empty() && spans.back().end == start && spans.back().work == work.what &&
        spans.back().layer == work.layer) {
      spans.back().end = free;
      spans.back().bytes += work.bytes;
      ++spans.back().calls;
      return;
    }
    spans.push_back({work.what, start, free, work.layer, work.bytes, 1});
  }
  // The host busy issuing collectives from `from` to `to`.
  void host_work(Time from, Time to) {
    if (timeline != nullptr) keep_span(timeline->host, from, to);
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
  std::vector<Work> work;  // for the trace: the first gather's layer, and their bytes
  Time trailing_time, trailing_host, trailing_tail;
  Work trailing_work;
  bool trailing_any = false;
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
      if (!f.trailing_any) f.trailing_work = {s.work, s.layer, Bytes(0)};
      f.trailing_any = true;
      f.trailing_work.bytes += s.bytes;
    }
    if (s.kind != Kind::kCompute) continue;
    f.time.push_back(f.trailing_time);
    f.host.push_back(f.trailing_host);
    f.tail.push_back(f.trailing_tail);
    f.work.push_back(f.trailing_work);
    f.trailing_time = f.trailing_host = f.trailing_tail = Time::zero();
    f.trailing_work = Work{};
    f.trailing_any = false;
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
  Bytes bytes;
};

std::vector<Issue> issues_of(const ShardedSegment& s, std::int64_t bucket_elements) {
  // The whole segment: its copies are in s.time already, net of what its loop hid.
  if (bucket_elements <= 0 || s.tensors.empty()) {
    return {Issue{s.time, s.host, Time::zero(), Time::zero(), Time::zero(), true, s.bytes}};
  }
  std::vector<Issue> out;
  std::int64_t filled = 0;
  for (const ShardedSegment::Tensor& t : s.tensors) {
    const bool opens = out.empty() || (filled > 0 && filled + t.elements > bucket_elements);
    if (opens) filled = 0;
    filled += t.elements;
    out.push_back(
        {t.time, t.host, t.loop, t.copies, opens ? t.divide : Time::zero(), opens, t.bytes});
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
      if (t.divide > Time::zero())
        st.line.run(issued, t.divide, {DpWork::kBufferDivide, s.layer, Bytes(0)});
      st.buffer_work += t.divide;
    }
    if (t.host > Time::zero()) {
      const Time from = std::max(st.host, issued);
      st.host = from + t.host;
      st.line.host_work(from, st.host);
      issued = st.host;
    }
    // The copies the loop issues: on the DP line from the loop's start, after whatever
    // collective of the bucket is still on it; the collective after them.
    if (t.copies > Time::zero())
      st.line.run(issued - t.loop, t.copies, {DpWork::kBufferCopies, s.layer, Bytes(0)});
    st.last_scatter = st.line.run(issued, t.time, {DpWork::kReduceScatter, s.layer, t.bytes});
  }
  if (rules.in_line)
    st.host = std::max(st.host, st.last_scatter);
  else if (rules.blocking_reduce)
    st.host = std::max(st.host, waited);
}

}  // namespace

ShardedPassTime sharded_pass_time(const std::vector<ShardedSegment>& segments, int prefetch,
                                  bool blocking_reduce, std::int64_t reduce_bucket_elements,
                                  double interference, bool fetch_waits_device,
                                  ShardedTimeline* timeline) {
  const Feeds feeds = gathers_by_compute(segments);
  const std::vector<Time>& gather_for = feeds.time;
  const std::vector<Time>& host_for = feeds.host;
  const std::size_t n = gather_for.size();
  std::vector<Time> gathered(n);  // when compute segment k's parameters are in
  PassState state;
  DpLine& line = state.line;
  line.timeline = timeline;
  Time& host = state.host;
  const auto issue_gather = [&](std::size_t k, Time at) {
    if (k >= n || gather_for[k] + host_for[k] + feeds.tail[k] == Time::zero()) return;
    const Time from = std::max(at, host);
    host = from + host_for[k];
    const Time done = line.run(host, gather_for[k], feeds.work[k]);
    host += feeds.tail[k];  // the library's loop, beside the collective
    line.host_work(from, host);
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
    if (timeline != nullptr) keep_span(timeline->compute, start, compute_free);
    ++k;
  }
  Time trailing_end;
  if (feeds.trailing_time + feeds.trailing_host + feeds.trailing_tail > Time::zero()) {
    const Time from = std::max(compute_free, host);
    const Time issued = from + feeds.trailing_host;
    line.run(issued, feeds.trailing_time, feeds.trailing_work);
    trailing_end = issued + feeds.trailing_tail;
    line.host_work(from, trailing_end);
  }
  out.total = std::max({compute_free, line.free, trailing_end});
  if (timeline != nullptr) timeline->total = out.total;
  out.dp_exposed = out.total - out.compute;
  out.dp_hidden = std::max(Time::zero(), feeds.comm + state.buffer_work - out.dp_exposed);
  return out;
}

}  // namespace megasim::step
