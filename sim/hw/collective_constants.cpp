#include "hw/collective_constants.h"

namespace megasim::hw {

const char* to_string(CollAlgorithm a) {
  switch (a) {
    case CollAlgorithm::kTree: return "tree";
    case CollAlgorithm::kRing: return "ring";
    case CollAlgorithm::kDirect: return "direct";
    case CollAlgorithm::kAuto: return "auto";
    case CollAlgorithm::kNvls: return "nvls";
    case CollAlgorithm::kNvlsTree: return "nvls_tree";
    case CollAlgorithm::kPat: return "pat";
  }
  return "?";
}

const char* to_string(CollProtocol p) {
  switch (p) {
    case CollProtocol::kLL: return "ll";
    case CollProtocol::kLL128: return "ll128";
    case CollProtocol::kSimple: return "simple";
    case CollProtocol::kAuto: return "auto";
  }
  return "?";
}

bool CollectiveScale::neutral() const {
  if (nvlink_bandwidth != 1.0 || net_bandwidth != 1.0 || nvlink_latency_offset_us != 0.0 ||
      net_latency_offset_us != 0.0)
    return false;
  for (const auto& link : bandwidth_by_algorithm)
    for (const Scoped& s : link)
      if (s.set) return false;
  for (const auto& link : latency_by_algorithm)
    for (const auto& algorithm : link)
      for (const Scoped& s : algorithm)
        if (s.set) return false;
  return true;
}

int scaled_algorithm_index(CollAlgorithm a) {
  switch (a) {
    case CollAlgorithm::kTree:
      return 0;
    case CollAlgorithm::kRing:
      return 1;
    case CollAlgorithm::kNvls:
      return 2;
    case CollAlgorithm::kNvlsTree:
      return 3;
    case CollAlgorithm::kPat:
      return 4;
    default:
      return -1;
  }
}

}  // namespace megasim::hw
