#include "step/replica_sends.h"

#include <algorithm>
#include <cassert>

#include "engine/join.h"
#include "net/topology.h"

namespace megasim::step::detail {
ReplicaSends::ReplicaSends(collective::CollectiveEngine& engine, net::FlowSolver& solver,
                           const ExecutorNetwork& network, int pp, int tp, int dp)
    : engine_(engine), solver_(solver), net_(network), pp_(pp), tp_(tp), dp_(dp),
      routes_(static_cast<std::size_t>(pp * pp * network.rails)),
      image_(static_cast<std::size_t>(dp)), symmetric_(network.lump_replicas) {}

const ReplicaSends::Route& ReplicaSends::route(int from, int to, int t) {
  Route& r = routes_[static_cast<std::size_t>((from * pp_ + to) * net_.rails + t)];
  if (r.built) return r;
  r.built = true;
  r.bytes = net_.stages[static_cast<std::size_t>(from)].pp_bytes;
  r.paths.resize(static_cast<std::size_t>(dp_));
  bool same = true;
  for (int d = 0; d < dp_; ++d) {
    const int src = net_.gpu(from, d, t), dst = net_.gpu(to, d, t);
    auto& path = r.paths[static_cast<std::size_t>(d)];
    if (src != dst) {
      const auto tag = static_cast<std::uint64_t>(d * tp_ + t);
      net_.topology->route(src, dst, -1, solver_.routing(), tag, path);
    }
    const Time latency = engine_.send_latency(src, dst, r.bytes);
    if (d == 0) r.latency = latency;
    same = same && latency == r.latency && isomorphic(d, r.paths[0], path);
  }
  if (!same && symmetric_) {
    expand_all();
    symmetric_ = false;
  }
  return r;
}

bool ReplicaSends::isomorphic(int d, const std::vector<net::Hop>& p0,
                              const std::vector<net::Hop>& pd) {
  if (p0.size() != pd.size()) return false;
  auto& image = image_[static_cast<std::size_t>(d)];
  for (std::size_t i = 0; i < p0.size(); ++i) {
    const net::LinkId a = p0[i].link, b = pd[i].link;
    if (p0[i].weight != pd[i].weight) return false;
    if (solver_.capacity(a).value() != solver_.capacity(b).value()) return false;
    const auto [img, fresh] = image.emplace(a, b);
    if (!fresh && img->second != b) return false;
    const auto [pre, first] = preimage_.emplace(b, std::make_pair(d, a));
    if (!first && pre->second != std::make_pair(d, a)) return false;
  }
  return true;
}

void ReplicaSends::send_all(int from, int to, std::function<void()> done) {
  auto each = after_all(net_.rails, std::move(done));
  for (int t = 0; t < net_.rails; ++t) {
    const Route& r = route(from, to, t);
    if (may_lump()) {
      lump(r, each);
    } else {
      issue_expanded(r, 0, dp_, r.bytes, each);
    }
  }
}

void ReplicaSends::send_one(int d, int from, int to, std::function<void()> done) {
  auto each = after_all(net_.rails, std::move(done));
  for (int t = 0; t < net_.rails; ++t) {
    const Route& r = route(from, to, t);
    engine_.send_path(r.paths[static_cast<std::size_t>(d)], r.bytes, r.latency, each);
  }
}

void ReplicaSends::lump(const Route& r, std::function<void()> done) {
  ++lumped_sends_;
  auto l = std::make_shared<Lumped>();
  l->route = &r;
  l->done = std::move(done);
  // The callback holds the record, not the other way round: cancelling the flow drops it.
  l->id = engine_.send_path(r.paths[0], r.bytes, r.latency, [l] { l->done(); });
  if (!l->id.valid()) return;
  if (live_.size() >= prune_at_) {
    std::erase_if(live_, [this](const auto& x) { return !solver_.active(x->id); });
    prune_at_ = std::max<std::size_t>(64, 2 * live_.size());
  }
  live_.push_back(std::move(l));
}

void ReplicaSends::issue_expanded(const Route& r, int first, int last, Bytes bytes,
                                  std::function<void()> done) {
  ++expanded_sends_;
  ++expanded_in_flight_;
  auto join = after_all(last - first, [this, done = std::move(done)] {
    --expanded_in_flight_;
    done();
  });
  for (int d = first; d < last; ++d)
    engine_.send_path(r.paths[static_cast<std::size_t>(d)], bytes, r.latency, join);
}

void ReplicaSends::expand(Lumped& l) {
  if (!solver_.active(l.id)) return;  // arrived; only its latency is left to wait
  const Bytes left = solver_.remaining(l.id);
  solver_.cancel_flow(l.id);
  issue_expanded(*l.route, 0, dp_, left, std::move(l.done));
}

void ReplicaSends::expand_all() {
  // Moved out first: expanding starts flows, whose callbacks may not touch live_ meanwhile.
  auto live = std::move(live_);
  live_.clear();
  for (auto& l : live) expand(*l);
}

std::function<void()> ReplicaSends::asymmetric(std::function<void()> done) {
  expand_all();
  ++asymmetric_in_flight_;
  return [this, done = std::move(done)] {
    --asymmetric_in_flight_;
    done();
  };
}

}  // namespace megasim::step::detail
