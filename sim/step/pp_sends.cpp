#include "step/pp_sends.h"

#include <algorithm>
#include <cstdint>

#include "engine/join.h"

namespace megasim::step::detail {
PpSends::PpSends(Simulator& sim, collective::CollectiveEngine& engine,
                 const ExecutorNetwork& network, int pp, int tp, int dp, const net::LinkFold* fold)
    : sim_(sim), engine_(engine), net_(network), fold_(fold), pp_(pp), tp_(tp), dp_(dp) {}

std::size_t PpSends::key(int from, int to) const {
  return static_cast<std::size_t>(from) * static_cast<std::size_t>(pp_) +
         static_cast<std::size_t>(to);
}

const PpSends::Route& PpSends::route(int from, int to) {
  Route& r = routes_[key(from, to)];
  if (r.built) return r;
  r.built = true;
  const Bytes payload = net_.stages[static_cast<std::size_t>(from)].pp_bytes;
  r.bytes = payload;
  const int rails = net_.rails;
  r.apart.resize(static_cast<std::size_t>(dp_ * rails));
  r.replica.resize(static_cast<std::size_t>(dp_));
  for (int d = 0; d < dp_; ++d) {
    auto& joined = r.replica[static_cast<std::size_t>(d)];
    for (int t = 0; t < rails; ++t) {
      const int src = net_.gpu(from, d, t), dst = net_.gpu(to, d, t);
      auto& path = r.apart[static_cast<std::size_t>(d * rails + t)];
      if (src != dst) {
        const auto tag = static_cast<std::uint64_t>(d * tp_ + t);
        net_.topology->route(src, dst, -1, net::Routing::kEcmp, tag, path);
      }
      r.latency = std::max(r.latency, engine_.send_latency(src, dst, payload));
      // Inside a node a send may put more bytes on NVLink than its payload (p2p efficiency).
      // That copy's hops carry the factor as weight, so in a coflow of copies inside and
      // across nodes only the copies inside a node pay it.
      const double wire = payload > Bytes(0.0) ? engine_.wire_bytes(src, dst, payload) / payload : 1.0;
      if (wire != 1.0) {
        for (net::Hop& h : path) h.weight = static_cast<float>(h.weight * wire);
      }
      joined.insert(joined.end(), path.begin(), path.end());
    }
    r.all.insert(r.all.end(), joined.begin(), joined.end());
    net::Topology::merge_repeated_links(joined);
  }
  if (fold_) {
    fold_->apply(r.all);
  } else {
    net::Topology::merge_repeated_links(r.all);
  }
  return r;
}

void PpSends::send(const std::vector<net::Hop>* paths, std::size_t n, const Route& r,
                   std::function<void()> done) {
  auto each = after_all(static_cast<int>(n), std::move(done));
  for (std::size_t i = 0; i < n; ++i) engine_.send_path(paths[i], r.bytes, r.latency, each);
}

void PpSends::send_all(int from, int to, std::function<void()> done) {
  const Route& r = route(from, to);
  if (net_.coflows) return send(&r.all, 1, r, std::move(done));
  send(r.apart.data(), r.apart.size(), r, std::move(done));
}

void PpSends::send_one(int d, int from, int to, std::function<void()> done) {
  const Route& r = route(from, to);
  const auto rails = static_cast<std::size_t>(net_.rails);
  if (!net_.coflows) return send(&r.apart[static_cast<std::size_t>(d) * rails], rails, r, std::move(done));
  const std::size_t k = key(from, to);
  Batch& b = batches_[k];
  b.replicas.push_back(d);
  b.done.push_back(std::move(done));
  // After every event already due now: the replicas in step with this one ask at this instant.
  if (b.replicas.size() == 1) sim_.at(sim_.now(), [this, k] { flush(k); });
}

void PpSends::flush(std::size_t k) {
  Batch b = std::move(batches_[k]);
  batches_[k] = Batch{};
  const Route& r = routes_[k];
  auto done = [dones = std::move(b.done)] {
    for (const auto& f : dones) f();
  };
  if (b.replicas.size() == 1) {
    return send(&r.replica[static_cast<std::size_t>(b.replicas.front())], 1, r, std::move(done));
  }
  std::vector<net::Hop> joined;
  for (int d : b.replicas) {
    const auto& p = r.replica[static_cast<std::size_t>(d)];
    joined.insert(joined.end(), p.begin(), p.end());
  }
  net::Topology::merge_repeated_links(joined);
  send(&joined, 1, r, std::move(done));
}

}  // namespace megasim::step::detail
