#include "plan/collective_calibration.h"

#include <string>

#include "collective/nccl_model.h"
#include "engine/error.h"

namespace megasim::plan {

std::vector<int> measured_placement(const net::Topology& topology, int ranks, int nodes,
                                    const std::string& what) {
  const int per_node = nodes > 0 ? ranks / nodes : 0;
  if (nodes < 1 || per_node * nodes != ranks) {
    throw InputError(what + ": " + std::to_string(ranks) + " ranks do not spread evenly over " +
                     std::to_string(nodes) + " nodes");
  }
  const int cluster_nodes = topology.gpus() / topology.gpus_per_node();
  if (per_node > topology.gpus_per_node() || nodes > cluster_nodes) {
    throw InputError(what + ": " + std::to_string(nodes) + " node(s) of " +
                     std::to_string(per_node) + " GPUs do not fit it (" +
                     std::to_string(cluster_nodes) + " node(s) of " +
                     std::to_string(topology.gpus_per_node()) + " GPUs)");
  }
  std::vector<int> gpus;
  for (int n = 0; n < nodes; ++n)
    for (int g = 0; g < per_node; ++g) gpus.push_back(n * topology.gpus_per_node() + g);
  return gpus;
}

std::function<hw::ModelledTime(double, const hw::CollectiveScale&)> scaled_nccl_model(
    std::shared_ptr<const net::Topology> topology, const hw::CollectiveConstants& constants,
    hw::CollectiveOp op, int ranks, int nodes, const std::string& what, hw::CollAlgorithm algorithm,
    hw::CollProtocol protocol) {
  collective::CollectiveCall call;
  call.op = op;
  call.algorithm = algorithm;
  call.protocol = protocol;
  call.gpus = measured_placement(*topology, ranks, nodes, what);
  const collective::CommShape shape = collective::comm_shape(*topology, call.gpus);
  auto table = std::make_shared<hw::CollectiveConstants>(constants);
  return [topology, table, call, shape](double bytes, const hw::CollectiveScale& scale) mutable {
    table->scale = scale;
    const collective::NcclModel model(*topology, *table);
    call.bytes = Bytes(bytes);
    const auto [a, p] = model.choose(call, shape);
    const collective::ModelCost c = model.cost(call, shape, a, p);
    return hw::ModelledTime{c.latency.to_seconds(), c.time.to_seconds(), a, p};
  };
}

}  // namespace megasim::plan
