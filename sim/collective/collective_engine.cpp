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

// Ranks of one node in channel c's order: the node's ranks rotated by c.
int rotated(const std::vector<int>& members, int c, std::size_t i) {
  const std::size_t k = members.size();
  return members[(i + static_cast<std::size_t>(c)) % k];
}

// Parent of node position i in NCCL-like double binary tree t over m nodes (-1: root). Tree 0
// is a heap on positions; tree 1 the same on mirrored positions, so a node interior in one
// tree is (mostly) a leaf in the other and the load on each node evens out.
int tree_parent(int i, int m, int t) {
  const int j = t == 0 ? i : m - 1 - i;
  if (j == 0) return -1;
  const int pj = (j - 1) / 2;
  return t == 0 ? pj : m - 1 - pj;
}

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

void CollectiveEngine::ring_flows(const CollectiveCall& call, const CommShape& shape, double factor,
                                  std::vector<Flow>& out) const {
  const int n = shape.ranks;
  double per_rank = call.bytes.value();
  switch (call.op) {
    case CollectiveOp::kAllReduce: per_rank *= 2.0 * (n - 1) / n; break;
    case CollectiveOp::kAllGather:
    case CollectiveOp::kReduceScatter: per_rank *= static_cast<double>(n - 1) / n; break;
    default: break;
  }
  const int channels = model_.channels(shape);
  const double bytes = per_rank / channels / factor;
  const int root_gpu = call.gpus[static_cast<std::size_t>(call.root)];
  std::vector<int> ring;
  ring.reserve(static_cast<std::size_t>(n));
  for (int c = 0; c < channels; ++c) {
    ring.clear();
    for (const auto& members : shape.by_node)
      for (std::size_t i = 0; i < members.size(); ++i) ring.push_back(rotated(members, c, i));
    for (std::size_t i = 0; i < ring.size(); ++i) {
      const int dst = ring[(i + 1) % ring.size()];
      // A broadcast is a chain from the root: no edge leads back into it.
      if (call.op == CollectiveOp::kBroadcast && dst == root_gpu) continue;
      out.push_back(Flow{ring[i], dst, bytes, call.tag * 4099u + static_cast<std::uint64_t>(c)});
    }
  }
}

void CollectiveEngine::tree_flows(const CollectiveCall& call, const CommShape& shape, double factor,
                                  std::vector<Flow>& out) const {
  const int channels = model_.channels(shape);
  const double bytes = call.bytes.value() / channels / factor;
  const int m = shape.nodes;
  // Channels are spread over the rails first (rotation by c) and then alternate between the two
  // trees, so every rail carries both trees and no NIC takes an interior node's load twice.
  // Over the emptiest node's ranks, as the channel count is (NcclModel::channels): every rail
  // of an uneven communicator's smallest node then carries both trees.
  const int k = shape.min_per_node;
  for (int c = 0; c < channels; ++c) {
    const int t = channels >= 2 * k ? (c / k) % 2 : c % 2;
    const std::uint64_t entropy = call.tag * 4099u + static_cast<std::uint64_t>(c);
    for (int node = 0; node < m; ++node) {
      const auto& members = shape.by_node[static_cast<std::size_t>(node)];
      for (std::size_t i = 0; i + 1 < members.size(); ++i) {
        const int a = rotated(members, c, i), b = rotated(members, c, i + 1);
        out.push_back(Flow{b, a, bytes, entropy});  // reduce towards the chain head
        out.push_back(Flow{a, b, bytes, entropy});  // broadcast back down
      }
      const int parent = tree_parent(node, m, t);
      if (parent < 0) continue;
      const int head = rotated(members, c, 0);
      const int parent_head = rotated(shape.by_node[static_cast<std::size_t>(parent)], c, 0);
      out.push_back(Flow{head, parent_head, bytes, entropy});
      out.push_back(Flow{parent_head, head, bytes, entropy});
    }
  }
}

void CollectiveEngine::direct_flows(const CollectiveCall& call, std::vector<Flow>& out) const {
  const auto n = call.gpus.size();
  auto add = [&](int src, int dst, double bytes) {
    out.push_back(Flow{src, dst, wire_bytes(src, dst, Bytes(bytes)).value(), call.tag});
  };
  if (call.op == CollectiveOp::kSendRecv) {
    // nccl-tests sendrecv: rank r sends the whole buffer to rank r+1 and receives from r-1.
    for (std::size_t r = 0; r < n; ++r) add(call.gpus[r], call.gpus[(r + 1) % n], call.bytes.value());
    return;
  }
  const double chunk = call.bytes.value() / static_cast<double>(n);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j)
      if (i != j) add(call.gpus[i], call.gpus[j], chunk);
}

void CollectiveEngine::pace_by_protocol(CollProtocol protocol, double per_payload,
                                        Time bandwidth_time, std::size_t first,
                                        std::vector<Flow>& out) {
  const double wire = protocol_wire_ratio(protocol);
  const double seconds = bandwidth_time.to_seconds();
  if (protocol == CollProtocol::kSimple || !(wire < per_payload) || !(seconds > 0.0)) return;
  for (std::size_t i = first; i < out.size(); ++i) {
    out[i].bytes *= wire / per_payload;
    out[i].max_rate = out[i].bytes / seconds;
  }
}

Bytes CollectiveEngine::wire_bytes(int src_gpu, int dst_gpu, Bytes payload) const {
  if (src_gpu == dst_gpu || topology_.node_of(src_gpu) != topology_.node_of(dst_gpu)) return payload;
  return payload * model_.p2p_nvlink_flow_scale();
}

void CollectiveEngine::nvls_flows(const CollectiveCall& call, const CommShape& shape,
                                  CollAlgorithm algorithm, std::vector<Flow>& out) const {
  // Every flow is sized to take the model's bandwidth time on idle links at its share of its
  // port (as ring and tree flows, flow_scale): NCCL's rate alone, slower beside other traffic.
  const ModelCost cost = model_.cost(call, shape, algorithm, CollProtocol::kSimple);
  const int n = shape.ranks;
  // The pipeline's fill runs at the call's pace too, so it stretches with contention.
  const double seconds = call.bytes.value() / (cost.bus_bandwidth.value() * n / (2.0 * (n - 1))) +
                         cost.pipeline_fill.to_seconds();
  const net::NodeSpec& node = topology_.spec().node;
  const double nvlink = node.nvlink_per_gpu.value() * node.nvlink_efficiency;
  for (const auto& members : shape.by_node) {
    const std::size_t k = members.size();
    for (std::size_t i = 0; i < k; ++i)
      out.push_back(Flow{members[i], members[(i + 1) % k], seconds * nvlink, call.tag});
  }
  if (algorithm != CollAlgorithm::kNvlsTree) return;
  // Head c of a node: its first GPU on the c-th rail, a NIC each as the model's (nccl_nvls.cpp;
  // GPU c until 2026-12-05: two heads a NIC where a node has half as many NICs as GPUs).
  const auto head_of = [this](const std::vector<int>& members, int c) {
    std::vector<int> rails, firsts;
    for (const int g : members) {
      const int rail = topology_.rail_of(g);
      if (std::find(rails.begin(), rails.end(), rail) != rails.end()) continue;
      rails.push_back(rail);
      firsts.push_back(g);
    }
    return firsts[static_cast<std::size_t>(c) % firsts.size()];
  };
  const std::size_t first = out.size();
  const int heads = model_.nvls_graph(shape).heads, m = shape.nodes;
  for (int c = 0; c < heads; ++c) {
    const std::uint64_t entropy = call.tag * 4099u + static_cast<std::uint64_t>(c);
    for (int i = 0; i < m; ++i) {
      const int parent = tree_parent(i, m, c % 2);
      if (parent < 0) continue;
      const int head = head_of(shape.by_node[static_cast<std::size_t>(i)], c);
      const int parent_head = head_of(shape.by_node[static_cast<std::size_t>(parent)], c);
      out.push_back(Flow{head, parent_head, 0.0, entropy});
      out.push_back(Flow{parent_head, head, 0.0, entropy});
    }
  }
  // The most tree flows one head sends or receives share its NIC.
  std::map<std::pair<int, bool>, int> load;
  int most = 1;
  for (std::size_t i = first; i < out.size(); ++i)
    most = std::max({most, ++load[{out[i].src, true}], ++load[{out[i].dst, false}]});
  // A head's flows cross PCIe and NIC in series, as the model's heads (at the NIC's rate, an
  // 800G NIC on PCIe Gen5 stretched NVLSTree 1.53x past the model until 2026-12-06).
  const double path = node.nic_path().value();
  for (std::size_t i = first; i < out.size(); ++i) out[i].bytes = seconds * path / most;
}

Time CollectiveEngine::flows_of(const CollectiveCall& call, std::vector<Flow>& out) const {
  if (call.gpus.empty()) throw InputError("collective: empty communicator");
  if (call.root < 0 || call.root >= static_cast<int>(call.gpus.size()))
    throw InputError("collective: root rank " + std::to_string(call.root) + " outside a communicator of " +
                     std::to_string(call.gpus.size()));
  const CommShape shape = comm_shape(topology_, call.gpus);
  const auto [algorithm, protocol] = choose(call, shape);
  const ModelCost cost = model_.cost(call, shape, algorithm, protocol);
  if (shape.ranks > 1) {
    if (algorithm == CollAlgorithm::kDirect) {
      direct_flows(call, out);
    } else if (algorithm == CollAlgorithm::kNvls || algorithm == CollAlgorithm::kNvlsTree) {
      nvls_flows(call, shape, algorithm, out);
    } else {
      const std::size_t first = out.size();
      double factor = 1.0 / model_.flow_scale(shape, algorithm, protocol, call.op);
      if (algorithm == CollAlgorithm::kRing) {
        ring_flows(call, shape, factor, out);
        pace_by_protocol(protocol, 1.0 / factor, cost.time - cost.latency, first, out);
      } else if (algorithm == CollAlgorithm::kPat) {
        // PAT's exchanges (peers at growing distances) are laid on the ring's flows; each rank
        // moves (n - 1) / n of the buffer, the model's bandwidth term has the whole of it.
        const int n = shape.ranks;
        ring_flows(call, shape, factor * (n - 1) / n, out);
      } else {
        // NCCL's mid-size correction slows the tree's bandwidth, and the pipeline's fill adds to
        // its bandwidth term (nccl_pipeline.cpp); its flows carry that much more.
        factor *= model_.tree_correction(protocol, call.bytes.value());
        const double streamed = (cost.time - cost.latency - cost.pipeline_fill).to_seconds();
        if (streamed > 0.0) factor /= 1.0 + cost.pipeline_fill.to_seconds() / streamed;
        tree_flows(call, shape, factor, out);
        pace_by_protocol(protocol, 1.0 / factor, cost.time - cost.latency, first, out);
      }
    }
  }
  return cost.latency;
}

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
