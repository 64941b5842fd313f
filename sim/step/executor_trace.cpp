// The trace of a sharded pass (ZeRO-3, FSDP; FP8's amax all-reduces alike): its compute where
// it ran, the waits between on "dp wait", and the DP line's collectives on "dp in pass", as
// sharded_pass_time placed them. The priced timeline is laid onto the pass as it ran here: its
// compute stretched by what slowed it in the executor (a straggling host, the slowest GPU, the
// power cap, collectives of other streams beside it), its waits as priced. A collective beside
// compute stretches with it, so its slice may be longer than its price. Each chunk's first
// micro-batch is drawn so (executor.cpp).
#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "step/executor_internal.h"

namespace megasim::step::detail {
namespace {

const char* work_name(DpWork w) {
  switch (w) {
    case DpWork::kAllGather:
      return "parameter all-gather";
    case DpWork::kAllReduce:
      return "DP all-reduce";
    case DpWork::kReduceScatter:
      return "gradient reduce-scatter";
    case DpWork::kBufferCopies:
      return "reduce buffer copies";
    case DpWork::kBufferDivide:
      return "reduce buffer division";
  }
  return "DP work";
}

// A span's name: what, whose layer, how many merged, and the pass it serves.
std::string span_name(const ShardedTimeline::DpSpan& s, const std::string& pass) {
  const std::string layer = s.layer >= 0 ? fmt::format(", layer {}", s.layer) : "";
  const std::string calls = s.calls > 1 ? fmt::format(" ×{}", s.calls) : "";
  return fmt::format("{}{}{} ({})", work_name(s.work), layer, calls, pass);
}

// The priced timeline's time `x` on the step's clock: the pass's start, plus `x`, plus the
// stretch of the compute before `x` (`prefix[k]`: the compute of the spans before span k).
class Clock {
 public:
  Clock(const ShardedTimeline& t, Time start, double stretch)
      : t_(t), start_(start), stretch_(stretch) {
    Time sum;
    for (const auto& [from, to] : t.compute) {
      prefix_.push_back(sum);
      sum += to - from;
    }
    prefix_.push_back(sum);
  }
  Time operator()(Time x) const {
    // The compute spans that start before x: all of those before the last one, and its part.
    const auto after =
        std::upper_bound(t_.compute.begin(), t_.compute.end(), x,
                         [](Time v, const std::pair<Time, Time>& span) { return v < span.first; });
    const auto k = static_cast<std::size_t>(after - t_.compute.begin());
    Time computed = prefix_[k];
    if (k > 0) {
      const auto& [from, to] = t_.compute[k - 1];
      computed = prefix_[k - 1] + (std::min(x, to) - from);
    }
    return start_ + x +
           Time::from_ns_rounded((stretch_ - 1.0) * static_cast<double>(computed.ns()));
  }

 private:
  const ShardedTimeline& t_;
  Time start_;
  double stretch_;
  std::vector<Time> prefix_;
};

// What each wait of a pass waited for: of the DP work and the host's issuing work that ended
// in it, the one that ended last (the host's where they end together: the collective waited
// for it too). The waits come in order and do not overlap, and the DP line's spans and the
// host's are each one stream's, kept in order (sharded_pass.cpp: each starts where the one
// before ended or later), so each span is looked at once (a scan from the pass's start for
// each wait was quadratic in the pass's collectives).
class WaitNamer {
 public:
  explicit WaitNamer(const ShardedTimeline& t) : t_(t) {}
  // The name of the wait from `from` to `to` (priced), after every earlier wait's.
  std::string operator()(Time from, Time to, const std::string& pass) {
    const ShardedTimeline::DpSpan* last = nullptr;
    for (; next_dp_ < t_.dp.size() && t_.dp[next_dp_].end <= to; ++next_dp_) {
      const auto& s = t_.dp[next_dp_];
      if (s.end > from) last = &s;
    }
    const std::pair<Time, Time>* host = nullptr;
    for (; next_host_ < t_.host.size() && t_.host[next_host_].second <= to; ++next_host_) {
      const auto& h = t_.host[next_host_];
      if (h.second > from) host = &h;
    }
    // "in pass: ", apart from the hold for a chunk's parameters after a pass's work, which is
    // named by what it waits for too.
    if (host != nullptr && (last == nullptr || host->second >= last->end))
      return "in pass: host issuing DP collectives (" + pass + ")";
    if (last == nullptr) return "in pass: DP collectives (" + pass + ")";
    return fmt::format("in pass: {} ({})", work_name(last->work), pass);
  }

 private:
  const ShardedTimeline& t_;
  std::size_t next_dp_ = 0, next_host_ = 0;
};

}  // namespace

void Executor::record_sharded_pass(const Unit& u, const PendingSlice& slice, Time work_end) {
  const ShardedTimeline& t = *slice.timeline;
  Time priced_compute;
  for (const auto& [from, to] : t.compute) priced_compute += to - from;
  // The pass's compute as it ran here: the pass less its waits (breakdown_s's compute).
  const Time ran = std::max(Time::zero(), work_end - slice.start - slice.dp_wait);
  const double stretch =
      priced_compute > Time::zero()
          ? static_cast<double>(ran.ns()) / static_cast<double>(priced_compute.ns())
          : 1.0;
  const Clock clock(t, slice.start, stretch);
  // The priced pass's end is the work's end here (rounding aside).
  const auto at = [&](Time x) { return x >= t.total ? work_end : std::min(clock(x), work_end); };
  const std::string& pass = slice.name;
  Time priced = Time::zero();  // where the drawing stands, priced
  WaitNamer wait_name(t);
  for (const auto& [from, to] : t.compute) {
    if (from > priced) record(u, "dp wait", wait_name(priced, from, pass), at(priced), at(from));
    record(u, "compute", pass, at(from), at(to));
    priced = to;
  }
  if (at(priced) < work_end)
    record(u, "dp wait", wait_name(priced, t.total, pass), at(priced), work_end);
  for (const auto& s : t.dp)
    record(u, "dp in pass", span_name(s, pass), at(s.start), at(s.end), s.bytes);
}

}  // namespace megasim::step::detail
