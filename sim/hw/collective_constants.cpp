#include "hw/collective_constants.h"

namespace megasim::hw {

const char* to_string(CollAlgorithm a) { return a == CollAlgorithm::kTree ? "tree" : "ring"; }

const char* to_string(CollProtocol p) {
  switch (p) {
    case CollProtocol::kLL: return "ll";
    case CollProtocol::kLL128: return "ll128";
    case CollProtocol::kSimple: return "simple";
  }
  return "?";
}

}  // namespace megasim::hw
