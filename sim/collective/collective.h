// What a collective call is: the operation, the communicator (the ordered GPU ids taking part,
// rank r = gpus[r]), the nccl-tests "size" in bytes, and an optional forced algorithm and
// protocol. Also nccl-tests' bus-bandwidth factors, so results read like an nccl-tests log.
// Plain value types.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/units.h"
#include "hw/collective_constants.h"
#include "hw/device_profile.h"

namespace megasim::collective {

// The operation is hw::CollectiveOp, the one collective-op type (profiles, workload ops and
// calls share it); kReduce is measured in profiles but not simulated here.
using hw::CollectiveOp;
// Algorithm and protocol are hw's (kDirect: point-to-point flows between every pair that
// exchanges data, for all-to-all and send/recv; kAuto: NCCL's choice by size).
using hw::CollAlgorithm;
using hw::CollProtocol;

// The CLI's spelling ("all_to_all", "send_recv"); hw::to_string gives nccl-tests' names.
const char* op_name(CollectiveOp op);
// Names as the CLI takes them ("all_reduce", "ring", "ll128"); throws InputError otherwise.
CollectiveOp parse_op(const std::string& name);
CollAlgorithm parse_algorithm(const std::string& name);
CollProtocol parse_protocol(const std::string& name);

struct CollectiveCall {
  CollectiveOp op = CollectiveOp::kAllReduce;
  std::vector<int> gpus;      // the communicator, in rank order
  Bytes bytes;                // nccl-tests "size": the per-rank buffer (output for all-gather)
  CollAlgorithm algorithm = CollAlgorithm::kAuto;
  CollProtocol protocol = CollProtocol::kAuto;
  int root = 0;               // broadcast root rank
  std::uint64_t tag = 0;      // mixed into ECMP hashes, so separate calls pick separate paths
};

}  // namespace megasim::collective
