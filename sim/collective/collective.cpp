#include "collective/collective.h"

#include "engine/error.h"

namespace megasim::collective {

const char* op_name(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kAllReduce: return "all_reduce";
    case CollectiveOp::kAllGather: return "all_gather";
    case CollectiveOp::kReduceScatter: return "reduce_scatter";
    case CollectiveOp::kBroadcast: return "broadcast";
    case CollectiveOp::kAllToAll: return "all_to_all";
    case CollectiveOp::kSendRecv: return "send_recv";
    case CollectiveOp::kReduce: return "reduce";
  }
  return "?";
}

CollectiveOp parse_op(const std::string& name) {
  for (CollectiveOp op : {CollectiveOp::kAllReduce, CollectiveOp::kAllGather,
                          CollectiveOp::kReduceScatter, CollectiveOp::kBroadcast,
                          CollectiveOp::kAllToAll, CollectiveOp::kSendRecv})
    if (name == op_name(op)) return op;
  // nccl-tests' names (alltoall_perf, sendrecv_perf), as calibration files and logs spell them.
  if (name == "alltoall") return CollectiveOp::kAllToAll;
  if (name == "sendrecv") return CollectiveOp::kSendRecv;
  throw InputError("--op: unknown collective '" + name +
                   "'; expected all_reduce, all_gather, reduce_scatter, broadcast, all_to_all "
                   "(alltoall) or send_recv (sendrecv)");
}

CollAlgorithm parse_algorithm(const std::string& name) {
  for (CollAlgorithm a : {CollAlgorithm::kAuto, CollAlgorithm::kRing, CollAlgorithm::kTree,
                          CollAlgorithm::kNvls, CollAlgorithm::kNvlsTree, CollAlgorithm::kPat})
    if (name == to_string(a)) return a;
  throw InputError("--algo: unknown algorithm '" + name +
                   "'; expected ring, tree, nvls, nvls_tree, pat or auto");
}

CollProtocol parse_protocol(const std::string& name) {
  for (CollProtocol p :
       {CollProtocol::kAuto, CollProtocol::kLL, CollProtocol::kLL128, CollProtocol::kSimple})
    if (name == to_string(p)) return p;
  throw InputError("--proto: unknown protocol '" + name + "'; expected ll, ll128, simple or auto");
}

}  // namespace megasim::collective
