#include "collective/collective.h"

#include "engine/error.h"

namespace megasim::collective {

const char* to_string(Op op) {
  switch (op) {
    case Op::kAllReduce: return "all_reduce";
    case Op::kAllGather: return "all_gather";
    case Op::kReduceScatter: return "reduce_scatter";
    case Op::kBroadcast: return "broadcast";
    case Op::kAllToAll: return "all_to_all";
    case Op::kSendRecv: return "send_recv";
  }
  return "?";
}

const char* to_string(Algorithm a) {
  switch (a) {
    case Algorithm::kAuto: return "auto";
    case Algorithm::kRing: return "ring";
    case Algorithm::kTree: return "tree";
    case Algorithm::kDirect: return "direct";
  }
  return "?";
}

const char* to_string(Protocol p) {
  switch (p) {
    case Protocol::kAuto: return "auto";
    case Protocol::kLL: return "ll";
    case Protocol::kLL128: return "ll128";
    case Protocol::kSimple: return "simple";
  }
  return "?";
}

Op parse_op(const std::string& name) {
  for (Op op : {Op::kAllReduce, Op::kAllGather, Op::kReduceScatter, Op::kBroadcast, Op::kAllToAll,
                Op::kSendRecv})
    if (name == to_string(op)) return op;
  throw InputError("--op: unknown collective '" + name +
                   "'; expected all_reduce, all_gather, reduce_scatter, broadcast, all_to_all or send_recv");
}

Algorithm parse_algorithm(const std::string& name) {
  for (Algorithm a : {Algorithm::kAuto, Algorithm::kRing, Algorithm::kTree})
    if (name == to_string(a)) return a;
  if (name == "nvls")
    throw InputError("--algo nvls: NVLink SHARP needs NVSwitch 3 (H100 and later) and is not "
                     "modelled; use ring, tree or auto");
  throw InputError("--algo: unknown algorithm '" + name + "'; expected ring, tree or auto");
}

Protocol parse_protocol(const std::string& name) {
  for (Protocol p : {Protocol::kAuto, Protocol::kLL, Protocol::kLL128, Protocol::kSimple})
    if (name == to_string(p)) return p;
  throw InputError("--proto: unknown protocol '" + name + "'; expected ll, ll128, simple or auto");
}

double bus_bandwidth_factor(Op op, int ranks) {
  const double n = ranks;
  switch (op) {
    case Op::kAllReduce: return 2.0 * (n - 1.0) / n;
    case Op::kAllGather:
    case Op::kReduceScatter:
    case Op::kAllToAll: return (n - 1.0) / n;
    case Op::kBroadcast:
    case Op::kSendRecv: return 1.0;
  }
  return 1.0;
}

}  // namespace megasim::collective
