// The flows a collective lays on the topology (ring, double binary tree, NVLS and NVLSTree,
// direct) and how flows_of sizes them: alone on idle links they take NCCL's model's time, so
// that only other traffic and the fabric's collisions slow them.
#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "collective/collective_engine.h"
#include "engine/error.h"

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

}  // namespace

void CollectiveEngine::ring_flows(const CollectiveCall& call, const CommShape& shape,
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
  const double bytes = per_rank / channels;
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

void CollectiveEngine::tree_flows(const CollectiveCall& call, const CommShape& shape,
                                  std::vector<Flow>& out) const {
  const int channels = model_.channels(shape);
  const double bytes = call.bytes.value() / channels;
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

double CollectiveEngine::ports_time(const std::vector<Flow>& flows, std::size_t first) const {
  std::map<net::LinkId, double> load;
  std::vector<net::Hop> path;
  for (std::size_t i = first; i < flows.size(); ++i) {
    const Flow& f = flows[i];
    topology_.route(f.src, f.dst, -1, solver_.routing(), f.entropy, path);
    for (const net::Hop& h : path) {
      if (topology_.link(h.link).kind != net::LinkKind::kFabric) load[h.link] += f.bytes * h.weight;
    }
  }
  double longest = 0.0;
  for (const auto& [link, bytes] : load) {
    longest = std::max(longest, bytes / topology_.link(link).capacity.value());
  }
  return longest;
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
                                        std::vector<Flow>& out, bool simple_too) {
  const double wire = protocol_wire_ratio(protocol);
  const double seconds = bandwidth_time.to_seconds();
  if ((protocol == CollProtocol::kSimple && !simple_too) || !(wire < per_payload) ||
      !(seconds > 0.0)) {
    return;
  }
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
  // port (as ring and tree flows are, flows_of): NCCL's rate alone, slower beside other traffic.
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
      // The flows are laid at one payload byte each, then carry as many bytes as make them,
      // alone, take the model's bandwidth time (NCCL's mid-size correction and a tree's
      // pipeline fill included) at the busiest of their GPUs' and NICs' ports. Until 2026-12-06
      // they were sized from the link rate the model assumes (flow_scale): a tree on one to
      // four nodes, where no node is interior in both trees, ran up to 50 % faster than the
      // model and did not slow with a PCIe link below the NIC; a ring of 3, 5 or 7 GPUs a node
      // on shared NICs ran 12-25 % slower, its channels not a multiple of its ranks a node.
      const std::size_t first = out.size();
      const Time bandwidth_time = cost.time - cost.latency;
      if (algorithm == CollAlgorithm::kRing || algorithm == CollAlgorithm::kPat) {
        ring_flows(call, shape, out);
      } else {
        tree_flows(call, shape, out);
      }
      const double ports = ports_time(out, first);
      double per_payload = ports > 0.0 ? bandwidth_time.to_seconds() / ports : 1.0;
      // Where the model's bus bandwidth is past the links' (a fitted scale k > 1 stands for
      // links k times as fast as the profile's, no faster), the flows stay that much slower.
      const double k = constants_.scale.bandwidth(shape.nodes > 1, algorithm);
      const double past_links = model_.bus_bandwidth(shape, algorithm, protocol, call.op).value() /
                                (model_.uncapped_link_bandwidth(shape).value() * k);
      per_payload *= std::max(1.0, past_links);
      for (std::size_t i = first; i < out.size(); ++i) out[i].bytes *= per_payload;
      // A tree's flows carry their own bytes at the model's pace, Simple's too: where NCCL's
      // model is well below the links (a tree on few nodes, half the NICs' rate), the bytes
      // that slowed them to it loaded the fabric above the NICs as well, colliding on ECMP
      // uplinks the real traffic would not fill (a forced tree on the Llama-3-like cluster ran
      // 1.33-1.66 x the model, a review's find). A ring's stay as they were, within a few per
      // cent of their payload.
      pace_by_protocol(protocol, per_payload, bandwidth_time, first, out,
                       algorithm == CollAlgorithm::kTree);
    }
  }
  return cost.latency;
}

}  // namespace megasim::collective
