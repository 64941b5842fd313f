#include "io/link_bound.h"

#include <algorithm>
#include <cstdint>

#include <fmt/format.h>

#include "engine/error.h"

namespace megasim::io {
namespace {

// The least bytes one GPU must move (`gpu`) and one node must move over its NICs (`node`).
struct LeastBytes {
  double gpu = 0.0;
  double node = 0.0;
};

LeastBytes least_bytes(hw::CollectiveOp op, int ranks, int nodes, double s) {
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
      return {of_ranks * s, of_nodes * s};
    case hw::CollectiveOp::kAllToAll:
      return {of_ranks * s, g * (n - g) / n * s};
  }
  return {s, s};
}

}  // namespace

LinkBound least_collective_time(const net::NodeSpec& node, hw::CollectiveOp op, int ranks,
                                int nodes, double bytes) {
  if (ranks < 2 || nodes < 1) return {};
  const LeastBytes least = least_bytes(op, ranks, nodes, bytes);
  const double gpu_rate = std::max(node.nvlink_per_gpu.value(), node.pcie.value());
  LinkBound bound;
  if (gpu_rate > 0.0) {
    bound = {
        least.gpu / gpu_rate, least.gpu, gpu_rate,
        node.nvlink_per_gpu.value() >= node.pcie.value() ? "a GPU's NVLink" : "a GPU's PCIe link"};
  }
  const double nic_rate = node.nics * node.nic.value();
  if (nodes > 1 && nic_rate > 0.0 && least.node / nic_rate > bound.seconds) {
    bound = {least.node / nic_rate, least.node, nic_rate,
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
    const LinkBound b = least_collective_time(cluster.node, m.op, m.ranks, m.nodes, m.size.value());
    const double seconds = m.time.to_seconds();
    if (b.seconds <= 0.0 || seconds >= kLinkBoundTolerance * b.seconds) continue;
    throw InputError(fmt::format(
        "{}: {} of {:.0f} bytes on {} ranks / {} node(s) took {:.6g} us, but on cluster '{}' it "
        "takes at least {:.6g} us: {:.0f} bytes over {} at {:.1f} GB/s raw. It did not run on "
        "these links (or its time is wrong): measure on this cluster, or give the cluster it "
        "ran on",
        where(k), hw::to_string(m.op), m.size.value(), m.ranks, m.nodes, seconds * 1e6,
        cluster.name, b.seconds * 1e6, b.bytes, b.link, b.rate / 1e9));
  }
}

}  // namespace megasim::io
