#include "step/sharded_pass.h"

#include <algorithm>
#include <cstddef>

namespace megasim::step {
namespace {

using Kind = ShardedSegment::Kind;

// The DP communication of the GPU: one collective at a time, in the order they are issued.
struct DpLine {
  Time free;
  Time run(Time issued, Time duration) {
    free = std::max(issued, free) + duration;
    return free;
  }
};

}  // namespace

ShardedPassTime sharded_pass_time(const std::vector<ShardedSegment>& segments, int prefetch,
                                  bool blocking_reduce) {
  // The gathers feeding each compute segment (summed: they run one after another), by the
  // compute segment's index; gathers after the last compute segment feed nothing.
  std::vector<Time> gather_for;
  Time trailing_gathers, comm;
  for (const ShardedSegment& s : segments) {
    if (s.kind == Kind::kCompute) {
      gather_for.emplace_back();
    } else if (s.kind == Kind::kGather) {
      trailing_gathers += s.time;
    }
    if (s.kind == Kind::kCompute && trailing_gathers > Time::zero()) {
      gather_for.back() = trailing_gathers;
      trailing_gathers = Time::zero();
    }
    if (s.kind != Kind::kCompute) comm += s.time;
  }
  const std::size_t n = gather_for.size();
  std::vector<Time> gathered(n);  // when compute segment k's parameters are in
  DpLine line;
  const auto issue_gather = [&](std::size_t k, Time at) {
    if (k < n && gather_for[k] > Time::zero()) gathered[k] = line.run(at, gather_for[k]);
  };
  const std::size_t ahead = static_cast<std::size_t>(std::max(prefetch, 0));
  for (std::size_t k = 0; k < ahead; ++k) issue_gather(k, Time::zero());

  ShardedPassTime out;
  Time compute_free, host, last_scatter;
  std::size_t k = 0;
  for (const ShardedSegment& s : segments) {
    if (s.kind == Kind::kGather) continue;  // issued with the compute it feeds
    if (s.kind == Kind::kScatter) {
      // Issued once its layer's backward has ended; with a blocking reduce (or no overlap at
      // all) the host waits for it, and with it the compute it has not queued yet.
      Time issued = compute_free;
      if (blocking_reduce) issued = std::max(issued, last_scatter);
      last_scatter = line.run(issued, s.time);
      if (ahead == 0) host = last_scatter;
      else if (blocking_reduce) host = std::max(host, issued);
      continue;
    }
    // A compute segment: in line, its gather starts once the previous compute has ended.
    if (ahead == 0) issue_gather(k, std::max(compute_free, host));
    const Time start = std::max({compute_free, host, gathered[k]});
    if (ahead > 0) issue_gather(k + ahead, start);
    compute_free = start + s.time;
    out.compute += s.time;
    ++k;
  }
  if (trailing_gathers > Time::zero()) line.run(compute_free, trailing_gathers);
  out.total = std::max(compute_free, line.free);
  out.dp_exposed = out.total - out.compute;
  out.dp_hidden = std::max(Time::zero(), comm - out.dp_exposed);
  return out;
}

}  // namespace megasim::step
