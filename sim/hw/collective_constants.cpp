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

}  // namespace megasim::hw
