#include "hw/device_profile.h"

#include "engine/error.h"

namespace megasim::hw {

const char* to_string(ProfileKind k) {
  switch (k) {
    case ProfileKind::kDatasheet: return "datasheet";
    case ProfileKind::kMeasured: return "measured";
    case ProfileKind::kImported: return "imported";
  }
  return "?";
}

const char* to_string(Activity a) {
  switch (a) {
    case Activity::kGemm: return "gemm";
    case Activity::kMemory: return "memory";
    case Activity::kCommunication: return "communication";
    case Activity::kIdle: return "idle";
  }
  return "?";
}

Watts PowerProfile::at(Activity a) const {
  switch (a) {
    case Activity::kGemm: return gemm;
    case Activity::kMemory: return memory;
    case Activity::kCommunication: return communication;
    case Activity::kIdle: return idle;
  }
  return idle;
}

double GemmModelParams::efficiency_for(Flops f) const {
  for (const auto& c : classes) {
    if (f <= c.max_flops) return c.efficiency;
  }
  return classes.empty() ? 1.0 : classes.back().efficiency;
}

const char* to_string(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kAllReduce: return "all_reduce";
    case CollectiveOp::kAllGather: return "all_gather";
    case CollectiveOp::kReduceScatter: return "reduce_scatter";
    case CollectiveOp::kAllToAll: return "alltoall";
    case CollectiveOp::kSendRecv: return "sendrecv";
    case CollectiveOp::kBroadcast: return "broadcast";
    case CollectiveOp::kReduce: return "reduce";
  }
  return "?";
}

std::optional<CollectiveOp> collective_op_from_string(const std::string& s) {
  for (CollectiveOp op : {CollectiveOp::kAllReduce, CollectiveOp::kAllGather,
                          CollectiveOp::kReduceScatter, CollectiveOp::kAllToAll,
                          CollectiveOp::kSendRecv, CollectiveOp::kBroadcast,
                          CollectiveOp::kReduce}) {
    if (s == to_string(op)) return op;
  }
  return std::nullopt;
}

const CollectiveFit* find_fit(const std::vector<CollectiveFit>& fits, CollectiveOp op, int ranks,
                              int nodes) {
  for (const auto& f : fits) {
    if (f.op == op && f.ranks == ranks && f.nodes == nodes && f.bus_bandwidth.value() > 0) return &f;
  }
  return nullptr;
}

Time fit_time(const CollectiveFit& fit, Bytes size) {
  return fit.alpha +
         Time::from_seconds(size.value() * bus_factor(fit.op, fit.ranks) / fit.bus_bandwidth.value());
}

double bus_factor(CollectiveOp op, int ranks) {
  // nccl-tests doc/PERFORMANCE.md: all-reduce moves 2(n-1)/n of the buffer over each rank's
  // bus; all-gather, reduce-scatter and all-to-all (n-1)/n; the rooted ops and send/recv 1.
  const double n = ranks > 0 ? static_cast<double>(ranks) : 1.0;
  switch (op) {
    case CollectiveOp::kAllReduce: return 2.0 * (n - 1.0) / n;
    case CollectiveOp::kAllGather:
    case CollectiveOp::kReduceScatter:
    case CollectiveOp::kAllToAll: return (n - 1.0) / n;
    case CollectiveOp::kSendRecv:
    case CollectiveOp::kBroadcast:
    case CollectiveOp::kReduce: return 1.0;
  }
  return 1.0;
}

FlopsPerSec DeviceProfile::peak_for(DType t) const {
  const auto it = peak.find(t);
  if (it == peak.end() || it->second.value() <= 0.0) {
    throw InputError("device profile '" + name + "' has no " + to_string(t) +
                     " peak (peak_tflops." + to_string(t) +
                     "): this GPU cannot run the kernel, or the profile must state it");
  }
  return it->second;
}

}  // namespace megasim::hw
