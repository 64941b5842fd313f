// NCCL's NVLink SHARP algorithms in its tuning model (tuning.cc, NCCL 2.30): NVLS inside one
// node and NVLSTree (NVLS inside each node, a tree between nodes), all-reduce, Simple protocol.
//
// Per channel (one per head GPU), NCCL gives NVLS the intra-node bandwidth
//   speed x efficiency x (heads - 1) / heads x 2   (all-reduce pipelines reduce and multicast),
// across nodes also the head's NIC (x 2 on 2 nodes, where the tree's one edge runs both ways at
// once) and NVLSTree's per-channel cap, the least of them; bus bandwidth = heads x that.
#include <algorithm>
#include <limits>
#include <string>

#include "collective/nccl_model.h"

namespace megasim::collective {
namespace {

// All-reduce pipelines the switch's reduction with its multicast (tuning.cc: "intraBw *= 2").
constexpr double kAllReducePipelining = 2.0;
// NVLSTree's inter-node bandwidth on 2 nodes (tuning.cc: "Handle 2 node case of NVLSTree").
constexpr double kTwoNodeTreeFactor = 2.0;

int fewest_per_node(const CommShape& shape) {
  int fewest = shape.ranks;
  for (const auto& members : shape.by_node)
    fewest = std::min(fewest, static_cast<int>(members.size()));
  return fewest;
}

}  // namespace

namespace {
constexpr int kMaxNvlsArity = 32;
}  // namespace

NcclModel::NvlsGraph NcclModel::nvls_graph(const CommShape& shape) const {
  const net::NodeSpec& node = topology_.spec().node;
  // Each node searches its own graph, and init.cc takes the fewest channels and the slowest
  // speed over the nodes. Across nodes each channel's head needs a NIC of its own (search.cc:
  // NVLS heads are the GPUs with a local NIC), and the search tries the inter-node speeds
  // (system->inter, paths.cc).
  const std::vector<double>& speeds =
      shape.nodes > 1 && !constants_.nvls.channel_speeds_inter_gbps.empty()
          ? constants_.nvls.channel_speeds_inter_gbps
          : constants_.nvls.channel_speeds_gbps;
  const double nvlink_gbps = node.nvlink_per_gpu.value() * node.nvlink_efficiency / 1e9;
  NvlsGraph g;
  g.heads = shape.ranks;
  g.speed_gbps = std::numeric_limits<double>::infinity();
  for (const auto& members : shape.by_node) {
    int heads = static_cast<int>(members.size());
    if (shape.nodes > 1)
      heads = std::min(heads, std::max(1, std::min(node.nics, heads * node.nics / node.gpus)));
    // At most NCCL_MAX_NVLS_ARITY heads (32 from NCCL 2.20, 8 before; search.cc sets
    // graph->maxChannels to the smaller of it and the node's GPUs), after the NICs' share of
    // the node's own members: only a node of more than 32 GPUs, an NVLink domain such as an
    // NVL72 rack, meets it.
    heads = std::min(heads, kMaxNvlsArity);
    // search.cc ncclTopoSearchTryNvls: a channel's head pulls twice its speed through its
    // NVLink, every other GPU once, so each GPU carries (heads + 1) x speed.
    double speed = 0.0;
    for (double s : speeds) {
      if ((heads + 1) * s <= nvlink_gbps) {
        speed = s;
        break;
      }
    }
    g.heads = std::min(g.heads, heads);
    g.speed_gbps = std::min(g.speed_gbps, speed);
  }
  if (shape.by_node.empty()) g.speed_gbps = 0.0;
  return g;
}

std::string NcclModel::nvls_unusable_reason(const CollectiveCall& call, const CommShape& shape,
                                            CollAlgorithm algorithm) const {
  if (!constants_.nvls.available)
    return "the device profile has no NVLink SHARP (no \"nvls\" group in its collective section; "
           "NVLS needs NVSwitch 3, H100/H200 HGX boards)";
  if (call.op != CollectiveOp::kAllReduce)
    return std::string("modelled for all_reduce only, not ") + op_name(call.op) +
           " (NCCL's model puts NVLS all-gather and reduce-scatter below the ring on one node)";
  if (algorithm == CollAlgorithm::kNvls && shape.nodes > 1)
    return "NVLS runs inside one node; across nodes NCCL runs nvls_tree (NVLS with CollNet is not "
           "modelled)";
  if (algorithm == CollAlgorithm::kNvlsTree && shape.nodes < 2)
    return "nvls_tree needs 2 nodes or more; inside one node NCCL runs nvls";
  if (fewest_per_node(shape) < 2)
    return "NVLink SHARP needs 2 GPUs or more of the communicator on every node";
  const NvlsGraph g = nvls_graph(shape);
  if (g.speed_gbps <= 0.0) return "no NVLS channel speed of the profile fits the node's NVLink";
  // tuning.cc's (heads - 1) / heads leaves one head no bandwidth: NCCL never picks it.
  if (g.heads < 2)
    return "one NVLS head a node (across nodes a head needs a NIC of its own, and the "
           "communicator's GPUs on a node share fewer than two): tuning.cc's bandwidth, x (heads - "
           "1) / heads, is zero";
  return "";
}

ModelCost NcclModel::nvls_cost(const CollectiveCall& call, const CommShape& shape,
                               CollAlgorithm algorithm) const {
  ModelCost c;
  if (!nvls_usable(call, shape, algorithm)) return c;
  const hw::NvlsConstants& k = constants_.nvls;
  const NvlsGraph g = nvls_graph(shape);
  const int n = shape.ranks, nn = shape.nodes;
  double per_channel_gbps =
      g.speed_gbps * k.efficiency * (g.heads - 1) / g.heads * kAllReducePipelining;
  double lat_us = k.nvlink_latency_us;
  double node_nics_bytes_per_s = 0.0;  // across nodes: the NICs a node's heads use
  if (algorithm == CollAlgorithm::kNvlsTree) {
    const net::NodeSpec& node = topology_.spec().node;
    const int nics_used =
        std::max(1, std::min(node.nics, shape.min_per_node * node.nics / node.gpus));  // as ring
    node_nics_bytes_per_s = node.nic_path().value() * nics_used;
    const double nic_per_head_gbps =
        node.nic_path().value() * nics_used / g.heads / 1e9 * (nn <= 2 ? kTwoNodeTreeFactor : 1.0);
    const double cap =
        nn <= 2 ? k.tree_channel_cap_two_nodes_gbps : k.tree_channel_cap_more_nodes_gbps;
    per_channel_gbps = std::min({per_channel_gbps, nic_per_head_gbps, cap});
    lat_us += 2.0 * log2_floor(nn) * k.net_latency_us;
  }
  const bool multi = nn > 1;
  const double scale = constants_.scale.bandwidth(multi, algorithm);
  BytesPerSec bus = gbyte_per_s(per_channel_gbps * g.heads) * scale;
  double algbw = bus.value() * n / (2.0 * (n - 1));
  // Every node takes in the other nodes' sums, the whole buffer, over its NICs: no tree runs
  // faster than size / the node's NIC bandwidth. On two nodes the doubled NIC term above, with
  // the bus factor's n / 2(n - 1), put it 1/(n - 1) over that (209.7 GB/s on two H100 nodes of
  // 8 x 200 Gb/s, 198.7 GB/s of NICs; a reviewer's sweep, 2026-12-06).
  if (algorithm == CollAlgorithm::kNvlsTree && algbw > node_nics_bytes_per_s * scale) {
    algbw = node_nics_bytes_per_s * scale;
    bus = BytesPerSec(algbw * 2.0 * (n - 1) / n);
  }
  c.applicable = true;
  c.latency = Time::from_us(
      constants_.scale.offset_latency_us(lat_us, multi, algorithm, CollProtocol::kSimple));
  c.bus_bandwidth = bus;
  c.pipeline_fill = pipeline_fill(call, shape, algorithm, CollProtocol::kSimple, algbw);
  c.time = c.latency + c.pipeline_fill + Time::from_seconds(call.bytes.value() / algbw);
  return c;
}

}  // namespace megasim::collective
