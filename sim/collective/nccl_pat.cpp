// NCCL's PAT algorithm in its tuning model (tuning.cc and enqueue.cc, NCCL 2.24 to 2.30; 2.23
// had x 0.85 where later versions have x 0.75): all-gather and reduce-scatter when every node
// holds one GPU of the communicator (ncclPatEnable: nNodes == nRanks), Simple protocol only.
// Its bus bandwidth is the tree graph's, x 0.75, and is not converted to an algorithm
// bandwidth (for all-gather and reduce-scatter tuning.cc converts only the ring's); its latency
// is the base plus a logarithmic part over the nodes and a linear part over the ranks, with the
// tree's network latency, which NCCL charges every algorithm with one rank per node.
#include <algorithm>
#include <string>

#include "collective/nccl_model.h"

namespace megasim::collective {

std::string NcclModel::pat_unusable_reason(const CollectiveCall& call, const CommShape& shape) const {
  if (!constants_.pat.available)
    return "the device profile has no PAT (no \"pat\" group in its collective section; NCCL 2.23+)";
  if (call.op != CollectiveOp::kAllGather && call.op != CollectiveOp::kReduceScatter)
    return std::string("PAT runs all_gather and reduce_scatter only, not ") + op_name(call.op);
  if (shape.ranks < 2) return "PAT needs 2 GPUs or more in the communicator";
  if (shape.nodes != shape.ranks)
    return "PAT needs one GPU of the communicator on each node (NCCL's ncclPatEnable: nNodes == "
           "nRanks); this one has " + std::to_string(shape.max_per_node) + " on a node";
  return "";
}

ModelCost NcclModel::pat_cost(const CollectiveCall& call, const CommShape& shape) const {
  ModelCost c;
  if (!pat_usable(call, shape)) return c;
  const hw::PatConstants& k = constants_.pat;
  const int n = shape.ranks, nn = shape.nodes;
  const double inter_lat_us =
      constants_.hw_latency(hw::CollLinkType::kNet, hw::CollAlgorithm::kTree, hw::CollProtocol::kSimple);
  const double lat_us = k.base_latency_us + log2_floor(nn) * (inter_lat_us / k.log_latency_divisor) +
                        n * k.per_rank_latency_us;
  const double latency_us =
      constants_.scale.offset_latency_us(lat_us, true, CollAlgorithm::kPat, CollProtocol::kSimple);
  const BytesPerSec bus = bus_bandwidth(shape, CollAlgorithm::kPat, CollProtocol::kSimple);
  c.applicable = true;
  c.latency = Time::from_us(latency_us);
  c.bus_bandwidth = bus;
  c.time = c.latency + Time::from_seconds(call.bytes.value() / bus.value());
  return c;
}

}  // namespace megasim::collective
