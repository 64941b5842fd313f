#include "collective/collective_engine.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <tuple>
#include <utility>

#include "engine/error.h"
#include "engine/join.h"

namespace megasim::collective {
namespace {

// NCCL's pick is kept when it runs, alone on the fabric, within this factor of the time its
// model promised: the flows' rounding and patterns differ from NCCL's formulas by a few per
// cent; an ECMP uplink collision costs 2x or more, and that is what the check is for.
constexpr double kChoiceSlack = 1.05;
// Calls whose time alone is kept (time_alone): a choice times up to four, predict() one again.
constexpr std::size_t kAloneKept = 8;

}  // namespace

CollectiveEngine::CollectiveEngine(Simulator& sim, const net::Topology& topology,
                                   net::FlowSolver& solver, const hw::CollectiveConstants& constants)
    : sim_(sim), topology_(topology), solver_(solver), constants_(constants),
      model_(topology, constants) {}

std::pair<CollAlgorithm, CollProtocol> CollectiveEngine::choose(const CollectiveCall& call,
                                                                const CommShape& shape) const {
  const auto options = model_.candidates(call, shape);
  if (!check_choice_ || options.size() < 2 || shape.nodes < 2) return options.front();
  const ChoiceKey key{static_cast<int>(call.op),
                      call.bytes.value(),
                      static_cast<int>(call.algorithm),
                      static_cast<int>(call.protocol),
                      shape.ranks,
                      shape.nodes,
                      shape.max_per_node,
                      shape.min_per_node};
  if (auto it = choices_.find(key); it != choices_.end()) return it->second;
  auto timed = [&](CollAlgorithm a, CollProtocol p) {
    CollectiveCall forced = call;
    forced.algorithm = a;
    forced.protocol = p;
    return time_alone(forced).time;
  };
  auto best = options.front();
  Time best_time = timed(best.first, best.second);
  const Time promised = model_.cost(call, shape, best.first, best.second).time;
  if (best_time.to_seconds() <= promised.to_seconds() * kChoiceSlack) return choices_[key] = best;
  for (std::size_t i = 1; i < options.size(); ++i) {
    const Time t = timed(options[i].first, options[i].second);
    if (t < best_time) {
      best_time = t;
      best = options[i];
    }
  }
  return choices_[key] = best;
}

void CollectiveEngine::launch(const CollectiveCall& call, std::function<void()> on_done) {
  if (coflows_) return launch_all({call}, std::move(on_done));
  std::vector<Flow> flows;
  const Time latency = flows_of(call, flows);
  last_flow_count_ = flows.size();
  start(flows, latency, std::move(on_done));
}

void CollectiveEngine::launch_all(const std::vector<CollectiveCall>& calls,
                                  std::function<void()> on_done) {
  if (calls.empty()) {
    sim_.after(Time::zero(), std::move(on_done));
    return;
  }
  if (!coflows_) {
    auto each = after_all(static_cast<int>(calls.size()), std::move(on_done));
    for (const CollectiveCall& call : calls) launch(call, each);
    return;
  }
  const Coflow c = coflow(calls);
  last_flow_count_ = c.path.empty() ? 0 : 1;
  send_path(c.path, c.bytes, c.latency, std::move(on_done), c.max_rate);
}

void CollectiveEngine::send(int src_gpu, int dst_gpu, Bytes bytes, std::uint64_t tag,
                            std::function<void()> on_done) {
  std::vector<net::Hop> path;
  if (src_gpu != dst_gpu) topology_.route(src_gpu, dst_gpu, -1, solver_.routing(), tag, path);
  last_flow_count_ = path.empty() ? 0 : 1;
  send_path(path, wire_bytes(src_gpu, dst_gpu, bytes), send_latency(src_gpu, dst_gpu, bytes),
            std::move(on_done));
}

Time CollectiveEngine::send_latency(int src_gpu, int dst_gpu, Bytes bytes) const {
  CollectiveCall call;
  call.op = hw::CollectiveOp::kSendRecv;
  call.gpus = {src_gpu, dst_gpu};
  call.bytes = bytes;
  const CommShape shape = comm_shape(topology_, call.gpus);
  const auto [algorithm, protocol] = model_.choose(call, shape);  // point-to-point: no choice
  return model_.cost(call, shape, algorithm, protocol).latency;
}

net::FlowId CollectiveEngine::send_path(const std::vector<net::Hop>& path, Bytes bytes,
                                        Time latency, std::function<void()> on_done,
                                        BytesPerSec max_rate) {
  if (path.empty()) {
    sim_.after(latency, std::move(on_done));
    return net::FlowId{};
  }
  // The NCCL latency term covers per-hop latency, so the flow carries none of its own.
  return solver_.start_path_flow(
      path, bytes, Time::zero(),
      [this, latency, on_done = std::move(on_done)]() mutable {
        sim_.after(latency, std::move(on_done));
      },
      max_rate);
}

void CollectiveEngine::start(const std::vector<Flow>& flows, Time latency,
                             std::function<void()> on_done) {
  struct Pending {
    std::size_t left;
    Time latency;
    std::function<void()> on_done;
  };
  // The flows' paths, and each distinct (bytes, path) with how many flows take it.
  std::vector<std::vector<net::Hop>> paths(flows.size());
  for (std::size_t i = 0; i < flows.size(); ++i) {
    const Flow& f = flows[i];
    topology_.route(f.src, f.dst, -1, solver_.routing(), f.entropy, paths[i]);
  }
  std::vector<std::pair<std::size_t, int>> runs;  // (representative flow, multiplicity)
  if (!merge_) {
    for (std::size_t i = 0; i < flows.size(); ++i) runs.emplace_back(i, 1);
  } else {
    auto same = [&](std::size_t a, std::size_t b) {
      return flows[a].bytes == flows[b].bytes && flows[a].max_rate == flows[b].max_rate &&
             std::equal(paths[a].begin(), paths[a].end(), paths[b].begin(), paths[b].end(),
                        [](const net::Hop& x, const net::Hop& y) {
                          return x.link == y.link && x.weight == y.weight;
                        });
    };
    // Equal flows are found by sorting on a hash of (bytes, path); a collision only splits a
    // group, it never merges unequal flows. Of the values' bits: std::hash's (until 2026-12-05)
    // is implementation-defined, and the order might differ between standard libraries.
    std::vector<std::pair<std::uint64_t, std::size_t>> keyed(flows.size());
    for (std::size_t i = 0; i < flows.size(); ++i) {
      std::uint64_t h = std::bit_cast<std::uint64_t>(flows[i].bytes);
      for (const net::Hop& hop : paths[i]) {
        h = (h ^ (static_cast<std::uint64_t>(hop.link) * 0x9e3779b97f4a7c15ull +
                  std::bit_cast<std::uint32_t>(hop.weight))) *
            0x100000001b3ull;
      }
      keyed[i] = {h, i};
    }
    std::sort(keyed.begin(), keyed.end());
    std::vector<std::size_t> order;
    order.reserve(flows.size());
    for (const auto& k : keyed) order.push_back(k.second);
    for (std::size_t i : order) {
      if (!runs.empty() && same(runs.back().first, i)) {
        ++runs.back().second;
      } else {
        runs.emplace_back(i, 1);
      }
    }
  }
  auto pending = std::make_shared<Pending>(Pending{runs.size(), latency, std::move(on_done)});
  if (runs.empty()) {
    sim_.after(latency, std::move(pending->on_done));
    return;
  }
  for (const auto& [i, count] : runs) {
    std::vector<net::Hop>& path = paths[i];
    for (net::Hop& h : path) h.weight *= static_cast<float>(count);
    // The NCCL latency term covers per-hop latency, so flows carry none of their own.
    solver_.start_path_flow(
        std::move(path), Bytes(flows[i].bytes), Time::zero(),
        [this, pending] {
          if (--pending->left == 0) sim_.after(pending->latency, std::move(pending->on_done));
        },
        BytesPerSec(flows[i].max_rate));
  }
}

CollectiveEngine::Coflow CollectiveEngine::coflow(const std::vector<CollectiveCall>& calls) const {
  std::vector<Flow> flows;
  Coflow c;
  for (const CollectiveCall& call : calls) c.latency = std::max(c.latency, flows_of(call, flows));
  double largest = 0.0;
  for (const Flow& f : flows) largest = std::max(largest, f.bytes);
  c.bytes = Bytes(largest);
  std::vector<net::Hop> path;
  double cap = std::numeric_limits<double>::infinity();
  for (const Flow& f : flows) {
    if (!(f.bytes > 0.0)) continue;
    // The coflow moves the largest member's bytes while this one moves its own.
    cap = std::min(cap, f.max_rate * largest / f.bytes);
    topology_.route(f.src, f.dst, -1, solver_.routing(), f.entropy, path);
    const auto share = static_cast<float>(f.bytes / largest);
    for (net::Hop h : path) {
      h.weight *= share;
      c.path.push_back(h);
    }
  }
  net::Topology::merge_repeated_links(c.path);
  c.max_rate = BytesPerSec(cap);
  return c;
}

CollectiveEngine::Alone CollectiveEngine::time_alone(const CollectiveCall& forced) const {
  AloneKey key{static_cast<int>(forced.op), forced.bytes.value(), static_cast<int>(forced.algorithm),
               static_cast<int>(forced.protocol), forced.root, forced.tag, forced.gpus};
  if (auto it = alone_.find(key); it != alone_.end()) return it->second;
  // Only the latest few calls are asked for again (choose, then predict, of one call).
  if (alone_.size() >= kAloneKept) alone_.clear();
  Simulator sim;
  net::FlowSolver solver(sim, topology_, solver_.routing());
  solver.set_finish_window(solver_.finish_window());
  CollectiveEngine alone(sim, topology_, solver, constants_);
  alone.check_choice_at_flow_level(false);
  Alone out;
  alone.launch(forced, [&sim, &out] { out.time = sim.now(); });
  sim.run();
  out.flows = alone.last_flow_count();
  return alone_[key] = out;
}

Prediction CollectiveEngine::predict(const CollectiveCall& call) const {
  const CommShape shape = comm_shape(topology_, call.gpus);
  const auto [algorithm, protocol] = choose(call, shape);
  Prediction p;
  p.algorithm = algorithm;
  p.protocol = protocol;
  std::tie(p.nccl_algorithm, p.nccl_protocol) = model_.choose(call, shape);
  p.model_time = model_.cost(call, shape, algorithm, protocol).time;
  CollectiveCall forced = call;
  forced.algorithm = algorithm;
  forced.protocol = protocol;
  const Alone a = time_alone(forced);
  p.time = a.time;
  p.flows = a.flows;
  return p;
}

}  // namespace megasim::collective
