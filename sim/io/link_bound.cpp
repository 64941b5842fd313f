#include "io/link_bound.h"

#include <algorithm>
#include <cstdint>

#include <fmt/format.h>

#include "engine/error.h"

namespace megasim::io {
namespace {

// The least bytes one GPU must move (`gpu`) and one node must move over its NICs (`node`).
struct LeastBytes {
  Bytes gpu{0.0}, node{0.0};
};

LeastBytes least_bytes(hw::CollectiveOp op, int ranks, int nodes, int node_gpus, Bytes s) {
  const double n = ranks, big_n = nodes, g = n / big_n;
  const double of_ranks = (n - 1.0) / n, of_nodes = (big_n - 1.0) / big_n;
  switch (op) {
    case hw::CollectiveOp::kAllReduce:
    case hw::CollectiveOp::kBroadcast:
    case hw::CollectiveOp::kReduce:
    case hw::CollectiveOp::kSendRecv:
      return {s, s};
    case hw::CollectiveOp::kAllGather:
    case hw::CollectiveOp::kReduceScatter:
      return {s * of_ranks, s * of_nodes};
    case hw::CollectiveOp::kAllToAll:
      // A node's g (n - g) / n holds where every node is full (an even count over the nodes
      // may still be uneven, 8 + 4 for 6 + 6); otherwise the GPU's alone.
      return {s * of_ranks, std::int64_t{ranks} == std::int64_t{nodes} * node_gpus
                                ? s * (g * (n - g) / n)
                                : Bytes(0.0)};
  }
  return {s, s};
}

}  // namespace

LinkBound least_collective_time(const net::NodeSpec& node, hw::CollectiveOp op, int ranks,
                                int nodes, Bytes size) {
  if (ranks < 2 || nodes < 1) return {};
  const LeastBytes least = least_bytes(op, ranks, nodes, node.gpus, size);
  const bool nvlink = node.nvlink_per_gpu.value() >= node.pcie.value();
  const BytesPerSec gpu_rate = nvlink ? node.nvlink_per_gpu : node.pcie;
  LinkBound bound;
  if (gpu_rate.value() > 0.0) {
    bound = {transfer_time(least.gpu, gpu_rate), least.gpu, gpu_rate,
             nvlink ? "a GPU's NVLink" : "a GPU's PCIe link"};
  }
  const BytesPerSec nic_rate = node.nic * static_cast<double>(node.nics);
  if (nodes > 1 && nic_rate.value() > 0.0 && transfer_time(least.node, nic_rate) > bound.least) {
    bound = {transfer_time(least.node, nic_rate), least.node, nic_rate,
             fmt::format("a node's {} NIC{}", node.nics, node.nics == 1 ? "" : "s")};
  }
  return bound;
}

void check_rows_against_links(const std::vector<hw::CollectiveMeasurement>& rows, std::size_t first,
                              const net::ClusterSpec& cluster,
                              const std::function<std::string(std::size_t)>& where) {
  for (std::size_t k = first; k < rows.size(); ++k) {
    const hw::CollectiveMeasurement& m = rows[k];
    const std::int64_t node_gpus = std::max(1, cluster.node.gpus);
    if (m.nodes < 1 || m.ranks < 2 || m.ranks > std::int64_t{m.nodes} * node_gpus ||
        m.nodes > cluster.gpus / node_gpus)
      continue;
    const LinkBound b = least_collective_time(cluster.node, m.op, m.ranks, m.nodes, m.size);
    if (b.least <= Time::zero() || m.time >= b.least * kLinkBoundTolerance) continue;
    throw InputError(fmt::format(
        "{}: {} of {:.0f} bytes on {} ranks / {} node(s) took {:.6g} us, but on cluster '{}' it "
        "takes at least {:.6g} us: {:.0f} bytes over {} at {:.1f} GB/s raw. It did not run on "
        "these links (or its time is wrong): measure on this cluster, or give the cluster it "
        "ran on",
        where(k), hw::to_string(m.op), m.size.value(), m.ranks, m.nodes, m.time.to_us(),
        cluster.name, b.least.to_us(), b.bytes.value(), b.link, b.rate.value() / 1e9));
  }
}

void check_profile_against_links(const hw::DeviceProfile& profile, const std::string& file,
                                 const net::ClusterSpec& cluster) {
  check_rows_against_links(profile.collective_table, 0, cluster, [&](std::size_t k) {
    return fmt::format("{}: device profile '{}': collective_table[{}] (from {})", file,
                       profile.name, k, profile.collective_table[k].origin);
  });
}

}  // namespace megasim::io
