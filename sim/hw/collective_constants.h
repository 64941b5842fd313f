// The constants of NCCL's tuning model for one device generation, as a table (NCCL keeps the
// same table in src/graph/tuning.cc and lets a tuner plugin override it): base latency per
// algorithm x protocol, per-hop latency per link type x algorithm x protocol, the fraction of
// bus bandwidth each protocol delivers, the bus-bandwidth cap, and channel counts. Values live
// in the device profile's "collective" section, each group with its source; the reader is
// io/collective_constants_reader.h. Plain value type.
#pragma once

#include <array>
#include <cassert>
#include <cstddef>
#include <string>

namespace megasim::hw {

// The one algorithm and protocol types: the constants tables index them, collective calls
// carry them. kAuto (NCCL chooses by size) is a member rather than an std::optional because a
// call states it the way NCCL_ALGO/NCCL_PROTO do, and every chosen value is concrete. kDirect
// (point-to-point, for all-to-all and send/recv) has no tuning-table row; only kTree and kRing
// index the tables, and kAuto never does.
enum class CollAlgorithm { kTree = 0, kRing = 1, kDirect = 2, kAuto = 3 };
enum class CollProtocol { kLL = 0, kLL128 = 1, kSimple = 2, kAuto = 3 };
enum class CollLinkType { kNvlink = 0, kPcie = 1, kNet = 2 };

constexpr int kCollAlgorithms = 2;
constexpr int kCollProtocols = 3;
constexpr int kCollLinkTypes = 3;

const char* to_string(CollAlgorithm a);
const char* to_string(CollProtocol p);

using ProtoTable = std::array<double, kCollProtocols>;
using AlgoProtoTable = std::array<ProtoTable, kCollAlgorithms>;

struct CollectiveConstants {
  std::string source;
  AlgoProtoTable base_latency_us{};                          // [algo][proto]
  std::array<AlgoProtoTable, kCollLinkTypes> hw_latency_us{};  // [link][algo][proto]
  // Fraction of the link (bus) bandwidth a protocol delivers: [algo][proto] for one node and
  // for several nodes (NCCL scales LL128 and tree bandwidth differently in the two cases).
  AlgoProtoTable bandwidth_factor_intra{};
  AlgoProtoTable bandwidth_factor_inter{};
  double busbw_cap_gbps = 0.0;  // NCCL's per-arch cap on modelled bus bandwidth (0: none)
  // Cap on a tree's bus bandwidth after protocol factors, [proto], for 2 nodes or fewer and
  // for more (NCCL's maxTreeBw); 0: none.
  ProtoTable tree_cap_two_nodes_gbps{};
  ProtoTable tree_cap_more_nodes_gbps{};
  int channels = 1;             // channels (rings / tree pairs) NCCL opens

  double base_latency(CollAlgorithm a, CollProtocol p) const {
    return base_latency_us[row(a)][column(p)];
  }
  double hw_latency(CollLinkType l, CollAlgorithm a, CollProtocol p) const {
    return hw_latency_us[static_cast<int>(l)][row(a)][column(p)];
  }
  double bandwidth_factor(CollAlgorithm a, CollProtocol p, bool multi_node) const {
    const auto& t = multi_node ? bandwidth_factor_inter : bandwidth_factor_intra;
    return t[row(a)][column(p)];
  }
  double tree_busbw_cap(CollProtocol p, int nodes) const {
    return (nodes > 2 ? tree_cap_more_nodes_gbps : tree_cap_two_nodes_gbps)[column(p)];
  }

 private:
  static std::size_t row(CollAlgorithm a) {
    assert(a == CollAlgorithm::kTree || a == CollAlgorithm::kRing);
    return static_cast<std::size_t>(a);
  }
  static std::size_t column(CollProtocol p) {
    assert(p != CollProtocol::kAuto);
    return static_cast<std::size_t>(p);
  }
};

}  // namespace megasim::hw
