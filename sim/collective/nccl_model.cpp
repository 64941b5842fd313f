#include "collective/nccl_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <unordered_map>

#include "engine/error.h"

namespace megasim::collective {
namespace {

int log2i(int n) {
  int r = 0;
  while (n > 1) {
    n >>= 1;
    ++r;
  }
  return r;
}

// NCCL's Simple protocol posts three network operations per step where LL and LL128 post one
// (tuning.cc: "if (p == NCCL_PROTO_SIMPLE) netOverhead *= 3").
constexpr double kSimpleNetOverheadPosts = 3.0;
// The tree correction table starts at 64 B (tuning.cc: log2i(nBytes >> 6)).
constexpr double kTreeCorrectionFirstBytes = 64.0;

}  // namespace

int log2_floor(int n) { return log2i(n); }

CommShape comm_shape(const net::Topology& topology, const std::vector<int>& gpus) {
  CommShape s;
  s.ranks = static_cast<int>(gpus.size());
  std::unordered_map<int, std::size_t> index;
  for (int g : gpus) {
    if (g < 0 || g >= topology.gpus())
      throw InputError("communicator: GPU " + std::to_string(g) + " is outside the cluster's " +
                       std::to_string(topology.gpus()) + " GPUs");
    const int node = topology.node_of(g);
    auto [it, fresh] = index.emplace(node, s.by_node.size());
    if (fresh) s.by_node.emplace_back();
    s.by_node[it->second].push_back(g);
  }
  s.nodes = static_cast<int>(s.by_node.size());
  for (const auto& m : s.by_node) s.max_per_node = std::max(s.max_per_node, static_cast<int>(m.size()));
  s.min_per_node = s.max_per_node;
  for (const auto& m : s.by_node)
    s.min_per_node = std::min(s.min_per_node, static_cast<int>(m.size()));
  for (const auto& m : s.by_node) {
    std::map<int, int> on_rail;
    int most = 0;
    for (const int g : m) most = std::max(most, ++on_rail[topology.rail_of(g)]);
    const double share = static_cast<double>(m.size()) / most;
    s.min_nic_share = s.min_nic_share == 0.0 ? share : std::min(s.min_nic_share, share);
  }
  return s;
}

namespace {
// The NICs whose share of the node the emptiest node's ranks own (at least one).
int nics_used(const net::NodeSpec& n, const CommShape& shape) {
  return std::max(1, std::min(n.nics, shape.min_per_node * n.nics / n.gpus));
}
}  // namespace

// NCCL 2.7.5's LL128 bus bandwidth cap for `op` (ll128MaxBwPerCh times the search graph's
// channels), GB/s; 0: none.
double NcclModel::ll128_channel_cap_gbps(const CommShape& shape, CollectiveOp op) const {
  const hw::CollectiveConstants::Ll128ChannelCap& c = constants_.ll128_channel_cap;
  double per_channel = 0.0;
  switch (op) {
    case CollectiveOp::kAllReduce:
      per_channel = c.all_reduce;
      break;
    case CollectiveOp::kAllGather:
      per_channel = c.all_gather;
      break;
    case CollectiveOp::kReduceScatter:
      per_channel = c.reduce_scatter;
      break;
    case CollectiveOp::kBroadcast:
      per_channel = c.broadcast;
      break;
    case CollectiveOp::kReduce:
      per_channel = c.reduce;
      break;
    default:
      return 0.0;
  }
  const net::NodeSpec& n = topology_.spec().node;
  const int graph = shape.nodes <= 1 || n.nics <= 0 ? c.one_node_channels
                                                    : c.channels_a_nic * nics_used(n, shape);
  return per_channel * graph;
}

int NcclModel::channels(const CommShape& shape) const {
  const net::NodeSpec& n = topology_.spec().node;
  if (shape.nodes <= 1 || n.nics <= 0) return constants_.channels;
  const int per_nic = (constants_.channels + n.nics - 1) / n.nics;
  return std::min(constants_.channels, per_nic * nics_used(n, shape));
}

BytesPerSec NcclModel::uncapped_link_bandwidth(const CommShape& shape) const {
  const net::NodeSpec& n = topology_.spec().node;
  BytesPerSec bw = n.nvlink_per_gpu * n.nvlink_efficiency;
  if (shape.nodes > 1) {
    // The inter-node traffic of a node leaves through the NICs its ranks own; every channel
    // crosses every node, so the node with the fewest ranks (and NICs) sets the pace: NCCL
    // takes each graph's channels and speeds as the minimum over all ranks (init.cc, after the
    // all-gather of graph info).
    // The NICs' worth is the rails the ranks sit on, as the flows leave by them (their share
    // of the node's NICs rounded down until 2026-12-05: 3 GPUs of 8 on 4 NICs drive 1.5 NICs'
    // worth, where the model counted 1 and its time was a third over the flows').
    const double nics = shape.min_nic_share > 0.0 ? std::min<double>(n.nics, shape.min_nic_share)
                                                  : nics_used(n, shape);
    bw = std::min(bw, n.nic_path() * nics);
  }
  return bw;
}

BytesPerSec NcclModel::link_bus_bandwidth(const CommShape& shape) const {
  BytesPerSec bw = uncapped_link_bandwidth(shape);
  if (constants_.busbw_cap_gbps > 0.0) bw = std::min(bw, gbyte_per_s(constants_.busbw_cap_gbps));
  return bw;
}

BytesPerSec NcclModel::bus_bandwidth(const CommShape& shape, CollAlgorithm algorithm,
                                     CollProtocol protocol, CollectiveOp op) const {
  if (algorithm == CollAlgorithm::kPat) {
    return link_bus_bandwidth(shape) * constants_.pat.bandwidth_factor *
           constants_.scale.bandwidth(shape.nodes > 1, algorithm);
  }
  const hw::CollAlgorithm a = algorithm;
  const hw::CollProtocol p = protocol;
  double factor = constants_.bandwidth_factor(a, p, shape.nodes > 1);
  if (algorithm == CollAlgorithm::kRing && p == hw::CollProtocol::kLL && shape.nodes == 1 &&
      op != CollectiveOp::kAllReduce && op != CollectiveOp::kReduce &&
      constants_.ring_ll_factor_one_node_gather > 0.0)
    factor = constants_.ring_ll_factor_one_node_gather;
  // ppn = ranks / nodes < 2 (NCCL 2.7.5 tuning.cc), an uneven communicator's too.
  if (algorithm == CollAlgorithm::kRing && p == hw::CollProtocol::kLL128 &&
      shape.ranks < 2 * shape.nodes && constants_.ring_ll128_factor_under_two_per_node > 0.0)
    factor = constants_.ring_ll128_factor_under_two_per_node;
  BytesPerSec bus = link_bus_bandwidth(shape) * factor;
  if (algorithm == CollAlgorithm::kRing && p == hw::CollProtocol::kLL) {
    const double cap = constants_.ring_ll_cap_gbps[static_cast<std::size_t>(std::min(shape.nodes, 3) - 1)];
    if (cap > 0.0) bus = std::min(bus, gbyte_per_s(cap));
  }
  if (algorithm == CollAlgorithm::kRing && p == hw::CollProtocol::kLL128 && shape.nodes > 1) {
    const double cap = constants_.ring_ll128_cap_across_nodes_gbps;
    if (cap > 0.0) bus = std::min(bus, gbyte_per_s(cap));
  }
  // NCCL 2.7.5: min(busBw x factor, ll128MaxBwPerCh x nChannels), x 7/9 for the tree.
  const double ll128_cap = p == hw::CollProtocol::kLL128 ? ll128_channel_cap_gbps(shape, op) : 0.0;
  if (algorithm == CollAlgorithm::kRing && ll128_cap > 0.0)
    bus = std::min(bus, gbyte_per_s(ll128_cap));
  if (algorithm == CollAlgorithm::kTree) {
    const double cap = constants_.tree_busbw_cap(p, shape.nodes);
    if (cap > 0.0) bus = std::min(bus, gbyte_per_s(cap));
    constexpr double kTreeLl128Share = 7.0 / 9.0;  // tuning.cc's tree LL128 cap: x 7/9
    if (ll128_cap > 0.0) bus = std::min(bus, gbyte_per_s(ll128_cap * kTreeLl128Share));
    // After the cap, as tuning.cc applies it: a node holding one GPU of the communicator (a
    // DP group of a TP-8 job, or an uneven 8 + 1) searches the TREE pattern.
    if (shape.min_per_node == 1 && shape.nodes > 1 && constants_.tree_factor_one_gpu_node > 0.0)
      bus = bus * constants_.tree_factor_one_gpu_node;
  }
  return bus * constants_.scale.bandwidth(shape.nodes > 1, algorithm);
}

double protocol_wire_ratio(CollProtocol protocol) {
  switch (protocol) {
    case CollProtocol::kLL:
      return 2.0;
    case CollProtocol::kLL128:
      return 128.0 / 120.0;
    default:
      return 1.0;
  }
}

double NcclModel::p2p_nvlink_flow_scale() const {
  const double p2p = constants_.p2p_nvlink_efficiency;
  if (!(p2p > 0.0)) return 1.0;
  return std::max(1.0, topology_.spec().node.nvlink_efficiency / p2p);
}

ModelCost NcclModel::direct_cost(const CollectiveCall& call, const CommShape& shape) const {
  ModelCost c;
  const int n = shape.ranks;
  const bool multi = shape.nodes > 1;
  const double size = call.bytes.value();
  // Point-to-point (NCCL runs all-to-all and send/recv as grouped send/recv; its tuning model
  // does not cover them): one step at the Simple protocol's ring latency, and the busiest
  // rank's bytes over NVLink or the busiest NIC's, whichever takes longer. A message off the
  // node leaves by the NIC of its destination's rail and arrives by the same rail's NIC there
  // (the flows' routes, topology.h), each NIC's two directions apart. (Until 2026-12-05 each
  // sender had its share of the node's NICs, at most one: 4 GPUs of 8 on Jean Zay's 4 NICs,
  // whose rails are 2, got 4, and nodes of 8, 8 and 4 Selene GPUs were a third over the flows.)
  const net::NodeSpec& node = topology_.spec().node;
  const hw::CollLinkType link = multi ? hw::CollLinkType::kNet : hw::CollLinkType::kNvlink;
  const double lat_us = constants_.base_latency(hw::CollAlgorithm::kRing, hw::CollProtocol::kSimple) +
                        constants_.hw_latency(link, hw::CollAlgorithm::kRing, hw::CollProtocol::kSimple);
  const BytesPerSec nvlink = node.nvlink_per_gpu * node.nvlink_efficiency / p2p_nvlink_flow_scale();
  const std::size_t ranks = call.gpus.size();
  std::vector<double> on(ranks, 0.0);
  std::map<std::pair<int, int>, double> leaving, arriving;  // (node, rail): bytes
  const auto send = [&](std::size_t r, int to, double bytes) {
    const int from = topology_.node_of(call.gpus[r]);
    if (topology_.node_of(to) == from) {
      on[r] += bytes;
      return;
    }
    const int rail = topology_.rail_of(to);
    leaving[{from, rail}] += bytes;
    arriving[{topology_.node_of(to), rail}] += bytes;
  };
  for (std::size_t r = 0; r < ranks; ++r) {
    if (call.op == CollectiveOp::kSendRecv) {
      send(r, call.gpus[(r + 1) % ranks], size);
    } else {
      for (int g : call.gpus)
        if (g != call.gpus[r]) send(r, g, size / n);
    }
  }
  double worst = 0.0;
  for (std::size_t r = 0; r < ranks; ++r) worst = std::max(worst, on[r] / nvlink.value());
  const double nic = node.nic_path().value();
  for (const auto* side : {&leaving, &arriving}) {
    for (const auto& [where, bytes] : *side) worst = std::max(worst, bytes / nic);
  }
  c.applicable = true;
  c.latency = Time::from_us(lat_us);
  c.bus_bandwidth = BytesPerSec(worst > 0.0 ? size * hw::bus_factor(call.op, n) / worst : 0.0);
  c.time = c.latency + Time::from_seconds(worst);
  return c;
}

double NcclModel::tree_correction(CollProtocol protocol, double bytes) const {
  return constants_.tree_correction_choice_only ? 1.0 : choice_tree_correction(protocol, bytes);
}

double NcclModel::choice_tree_correction(CollProtocol protocol, double bytes) const {
  if (!constants_.has_tree_correction || bytes < kTreeCorrectionFirstBytes) return 1.0;
  const auto index = static_cast<std::size_t>(std::floor(std::log2(bytes / kTreeCorrectionFirstBytes)));
  if (index >= static_cast<std::size_t>(hw::kTreeCorrectionSizes)) return 1.0;
  return constants_.tree_correction[static_cast<std::size_t>(protocol)][index];
}

double NcclModel::broadcast_latency_us(const CommShape& shape, CollProtocol protocol) const {
  // NCCL (tuning.cc, 2.7.5 to 2.30): a ring broadcast pays one hop where every channel replays
  // the first one's GPU order (the search graph's sameChannels, which one NVSwitch node keeps),
  // and a hop per rank where channels differ, at the link's latency, the tree's for Simple
  // ("waiting for proper chunk modeling"). Across nodes with a NIC per channel the search gives
  // up replaying to reach the NICs' bandwidth (search.cc), so channels differ there.
  const hw::CollProtocol p = protocol;
  if (shape.nodes <= 1)
    return constants_.hw_latency(hw::CollLinkType::kNvlink, hw::CollAlgorithm::kRing, p);
  const hw::CollAlgorithm per_hop =
      p == hw::CollProtocol::kSimple ? hw::CollAlgorithm::kTree : hw::CollAlgorithm::kRing;
  return shape.ranks * constants_.hw_latency(hw::CollLinkType::kNet, per_hop, p);
}

ModelCost NcclModel::cost(const CollectiveCall& call, const CommShape& shape,
                          CollAlgorithm algorithm, CollProtocol protocol) const {
  ModelCost c;
  const int n = shape.ranks, nn = shape.nodes;
  if (n <= 1) {
    c.applicable = true;
    return c;
  }
  const bool multi = nn > 1;
  const hw::CollLinkType intra_hw = hw::CollLinkType::kNvlink;
  const double size = call.bytes.value();

  if (algorithm == CollAlgorithm::kDirect) return direct_cost(call, shape);
  if (algorithm == CollAlgorithm::kNvls || algorithm == CollAlgorithm::kNvlsTree)
    return nvls_cost(call, shape, algorithm);
  if (algorithm == CollAlgorithm::kPat) return pat_cost(call, shape);
  if (algorithm == CollAlgorithm::kTree && call.op != CollectiveOp::kAllReduce) return c;
  const hw::CollAlgorithm a = algorithm;
  const hw::CollProtocol p = protocol;
  const BytesPerSec bus = bus_bandwidth(shape, algorithm, protocol, call.op);

  int nsteps = n, inter_steps = nn;
  if (call.op == CollectiveOp::kAllReduce) {
    nsteps = 2 * (n - 1);
    inter_steps = 2 * (nn - 1);
  } else if (call.op == CollectiveOp::kAllGather || call.op == CollectiveOp::kReduceScatter) {
    nsteps = n - 1;
    inter_steps = nn - 1;
  }
  if (!multi) inter_steps = 0;
  double intra_lat = constants_.hw_latency(intra_hw, a, p);
  // NCCL 2.30: "With ppn=1 latencies are fully exposed, use the Tree network latency".
  const bool one_per_node = multi && n == nn && constants_.one_rank_per_node_tree_net_latency;
  const double inter_lat =
      constants_.hw_latency(hw::CollLinkType::kNet, one_per_node ? hw::CollAlgorithm::kTree : a, p);
  if (multi && p == hw::CollProtocol::kLL) intra_lat *= constants_.ll_intra_factor_multi_node;
  double lat_us = constants_.base_latency(a, p);
  double algbw = 0.0;
  if (algorithm == CollAlgorithm::kRing) {
    if (multi) {
      const double posts = p == hw::CollProtocol::kSimple ? kSimpleNetOverheadPosts : 1.0;
      intra_lat = std::max(intra_lat, constants_.ring_net_overhead_us * posts);
    }
    if (call.op == CollectiveOp::kBroadcast) {
      lat_us += broadcast_latency_us(shape, p);
    } else {
      lat_us += (nsteps - inter_steps) * intra_lat + inter_steps * inter_lat;
    }
    if (p == hw::CollProtocol::kSimple && multi && call.op == CollectiveOp::kAllReduce &&
        size >= n * constants_.ring_plateau.min_bytes_per_rank)
      lat_us *= constants_.ring_plateau.factor;
    algbw = bus.value() * static_cast<double>(n) / static_cast<double>(nsteps);
  } else {
    const int chain = n / nn - 1;
    lat_us += 2.0 * (chain * intra_lat + log2i(nn) * inter_lat);
    algbw = bus.value() * 0.5 * tree_correction(p, size);
  }
  c.applicable = true;
  c.latency = Time::from_us(constants_.scale.offset_latency_us(lat_us, multi, algorithm, protocol));
  c.bus_bandwidth = bus;
  c.pipeline_fill = pipeline_fill(call, shape, algorithm, protocol, algbw);
  c.time = c.latency + c.pipeline_fill + Time::from_seconds(size / algbw);
  return c;
}

}  // namespace megasim::collective
