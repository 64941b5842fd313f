// What a collective call is: the operation, the communicator (the ordered GPU ids taking part,
// rank r = gpus[r]), the nccl-tests "size" in bytes, and an optional forced algorithm and
// protocol. Also nccl-tests' bus-bandwidth factors, so results read like an nccl-tests log.
// Plain value types.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/units.h"

namespace megasim::collective {

enum class Op { kAllReduce, kAllGather, kReduceScatter, kBroadcast, kAllToAll, kSendRecv };
// kDirect: point-to-point flows between every pair that exchanges data (all-to-all, send/recv).
enum class Algorithm { kAuto, kRing, kTree, kDirect };
enum class Protocol { kAuto, kLL, kLL128, kSimple };

const char* to_string(Op op);
const char* to_string(Algorithm a);
const char* to_string(Protocol p);
// Names as the CLI takes them ("all_reduce", "ring", "ll128"); throws InputError otherwise.
Op parse_op(const std::string& name);
Algorithm parse_algorithm(const std::string& name);
Protocol parse_protocol(const std::string& name);

struct CollectiveCall {
  Op op = Op::kAllReduce;
  std::vector<int> gpus;      // the communicator, in rank order
  Bytes bytes;                // nccl-tests "size": the per-rank buffer (output for all-gather)
  Algorithm algorithm = Algorithm::kAuto;
  Protocol protocol = Protocol::kAuto;
  int root = 0;               // broadcast root rank
  std::uint64_t tag = 0;      // mixed into ECMP hashes, so separate calls pick separate paths
};

// nccl-tests' busbw = algbw x factor (doc/PERFORMANCE.md): all-reduce 2(n-1)/n, all-gather,
// reduce-scatter and all-to-all (n-1)/n, broadcast and send/recv 1.
double bus_bandwidth_factor(Op op, int ranks);

}  // namespace megasim::collective
