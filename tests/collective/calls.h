// Collective calls and nccl-tests' bus bandwidth, shared by the collective tests.
#pragma once

#include <utility>
#include <vector>

#include "collective/collective.h"
#include "engine/time.h"
#include "hw/device_profile.h"

namespace megasim::testing {

inline collective::CollectiveCall call(hw::CollectiveOp op, std::vector<int> gpus, double bytes,
                                       hw::CollAlgorithm a = hw::CollAlgorithm::kAuto,
                                       hw::CollProtocol p = hw::CollProtocol::kAuto) {
  collective::CollectiveCall c;
  c.op = op;
  c.gpus = std::move(gpus);
  c.bytes = Bytes(bytes);
  c.algorithm = a;
  c.protocol = p;
  return c;
}

// nccl-tests' busbw of a call that took `t`, GB/s.
inline double busbw_gbps(const collective::CollectiveCall& c, Time t) {
  return c.bytes.value() / t.to_seconds() * 1e-9 *
         hw::bus_factor(c.op, static_cast<int>(c.gpus.size()));
}

}  // namespace megasim::testing
