// The constants of NCCL's tuning model for one device generation, as a table (NCCL keeps the
// same table in src/graph/tuning.cc and lets a tuner plugin override it): base latency per
// algorithm x protocol, per-hop latency per link type x algorithm x protocol, the fraction of
// bus bandwidth each protocol delivers, the bus-bandwidth cap, and channel counts. Values live
// in the device profile's "collective" section, each group with its source; the reader is
// io/collective_constants_reader.h. Plain value type.
#pragma once

#include <algorithm>
#include <array>
#include <cassert>
#include <cstddef>
#include <string>
#include <vector>

namespace megasim::hw {

// The one algorithm and protocol types: the constants tables index them, collective calls
// carry them. kAuto (NCCL chooses by size) is a member rather than an std::optional because a
// call states it the way NCCL_ALGO/NCCL_PROTO do, and every chosen value is concrete. kDirect
// (point-to-point, for all-to-all and send/recv) has no tuning-table row; only kTree and kRing
// index the tables, and kAuto never does. kNvls (NVLink SHARP inside one node) and kNvlsTree
// (NVLink SHARP inside each node, a tree over nodes) run only with the Simple protocol and take
// their constants from NvlsConstants; they exist only where the profile has an "nvls" group.
// kPat (NCCL 2.23+'s all-gather and reduce-scatter with one GPU per node) likewise runs only
// Simple, from PatConstants, where the profile has a "pat" group.
enum class CollAlgorithm {
  kTree = 0,
  kRing = 1,
  kDirect = 2,
  kAuto = 3,
  kNvls = 4,
  kNvlsTree = 5,
  kPat = 6
};
enum class CollProtocol { kLL = 0, kLL128 = 1, kSimple = 2, kAuto = 3 };
enum class CollLinkType { kNvlink = 0, kPcie = 1, kNet = 2 };

constexpr int kCollAlgorithms = 2;
constexpr int kCollProtocols = 3;
constexpr int kCollLinkTypes = 3;

const char* to_string(CollAlgorithm a);
const char* to_string(CollProtocol p);

using ProtoTable = std::array<double, kCollProtocols>;
using AlgoProtoTable = std::array<ProtoTable, kCollAlgorithms>;

// NCCL's NVLink SHARP (NVLS, NCCL 2.17+; NVLSTree across nodes, 2.18+) on NVSwitch 3 (H100,
// H200): every GPU of a node heads one channel and pulls its slice reduced by the switch. Its
// per-channel speed is the fastest of `channel_speeds_gbps` (NCCL's search list, fastest
// first) at which the heads' load fits the GPU's NVLink: the head of a channel pulls twice, the
// others once, so a GPU carries (heads + 1) x speed. Present only on a profile with an "nvls"
// group.
struct NvlsConstants {
  bool available = false;
  std::vector<double> channel_speeds_gbps;  // fastest first
  // The speeds the search tries when the communicator spans nodes (sm90SpeedArrayInter); empty:
  // channel_speeds_gbps there too.
  std::vector<double> channel_speeds_inter_gbps;
  double efficiency = 0.0;                  // nvlsEfficiency: share of the pulled bandwidth
  double tree_channel_cap_two_nodes_gbps = 0.0;   // perChMaxNVLSTreeBws, 2 nodes
  double tree_channel_cap_more_nodes_gbps = 0.0;  // 4 or more nodes
  double nvlink_latency_us = 0.0;  // hwLat[NVLINK][NVLS] (= NVLSTree's)
  double net_latency_us = 0.0;     // hwLat[NET][NVLS_TREE] per tree level and direction
};

// NCCL's PAT ("parallel aggregated trees", NCCL 2.23+): all-gather and reduce-scatter over a
// communicator of one GPU per node, Simple protocol, on the tree's graph (tuning.cc). Latency
// base + log2(nodes) x (the tree's network latency / log_latency_divisor) + ranks x
// per_rank_latency_us; bus bandwidth the links' x bandwidth_factor, used as the algorithm
// bandwidth (no ring's n / (n - 1)). Present only on a profile with a "pat" group.
struct PatConstants {
  bool available = false;
  double base_latency_us = 0.0;      // baseLatencies[PAT]
  double log_latency_divisor = 1.0;  // "Log latency": log2i(nNodes) x (interLat / 3.5)
  double per_rank_latency_us = 0.0;  // "Still a linear part": nRanks x 2.8
  double bandwidth_factor = 1.0;     // busBw *= .75
};

// NCCL's "plateau effect of ring": a Simple ring all-reduce on several nodes, once each rank's
// share passes min_bytes_per_rank, has its latency multiplied by factor.
struct RingPlateau {
  double factor = 1.0;
  double min_bytes_per_rank = 0.0;
};

// NCCL's corrections to its tree model at mid sizes (treeCorrectionFactor): the tree's bandwidth
// times factor[proto][log2(size / 64 B)], sizes 64 B to 256 MiB (1 outside). Absent: none.
constexpr int kTreeCorrectionSizes = 23;
using TreeCorrection = std::array<std::array<double, kTreeCorrectionSizes>, kCollProtocols>;

// NCCL's chunked pipeline (enqueue.cc), for the fill of tree-shaped algorithms across nodes.
// A channel moves its share chunk by chunk, and a chunk crosses the network store-and-forward:
// the sending proxy posts a step only once the GPU has written all of it, and the receiving GPU
// sees it only once the whole step has arrived (transport/net.cc sendProxyProgress,
// recvProxyProgress). So every network hop on a chunk's way up and down the tree holds it once,
// and the pipeline fills and drains over that many chunks beyond the bandwidth term. The chunk
// is what NCCL's version picks for the size (collective/nccl_pipeline.cpp). Absent: no fill.
struct PipelineConstants {
  bool available = false;
  ProtoTable step_bytes{};           // buffSizes[p] / NCCL_STEPS: the largest chunk per protocol
  bool tree_chunk_by_depth = false;  // NCCL 2.8: the Simple tree's chunk shrinks by tree depth
  // NVLSTree (NCCL 2.18+): channels, the default chunk and its cap on 4 nodes or more; 0: none.
  int nvls_channels = 0;
  double nvls_chunk_bytes = 0.0;
  double nvls_tree_chunk_bytes_4_nodes = 0.0;
};

// Scale factors fitted to imported nccl-tests logs (calibrate/collective_scale_fit.h), laid
// over NCCL's model: the modelled bus bandwidth of every ring, tree and NVLS call is multiplied
// by the bandwidth scale of the links it crosses (NVLink on one node, the NICs on several) and
// the latency offset is added to its latency. A fit knows which algorithm (and protocol) NCCL
// ran in the rows that pinned it; its scale then holds for that algorithm (and protocol) only,
// and replaces the link's own there. A fit that could not tell (rows of several algorithms, or
// an older calibration) sets the link's, for every algorithm. Neutral for a datasheet profile.
constexpr int kScaledAlgorithms = 5;  // tree, ring, nvls, nvls_tree, pat
// The most of a call's modelled latency a (negative) latency offset may take away: a fit bounds
// its offset so on the rows it is fitted on, and every call keeps the rest, so an offset pooled
// over rank counts never leaves a call of fewer ranks (a smaller modelled latency) free.
constexpr double kLatencyOffsetMostRemoved = 0.9;
// tree 0, ring 1, nvls 2, nvls_tree 3, pat 4; -1 for direct and auto (never scaled per
// algorithm).
int scaled_algorithm_index(CollAlgorithm a);

struct CollectiveScale {
  double nvlink_bandwidth = 1.0;
  double net_bandwidth = 1.0;
  double nvlink_latency_offset_us = 0.0;
  double net_latency_offset_us = 0.0;
  struct Scoped {
    bool set = false;
    double value = 0.0;
  };
  // [multi-node][algorithm]; latency also [protocol].
  std::array<std::array<Scoped, kScaledAlgorithms>, 2> bandwidth_by_algorithm{};
  std::array<std::array<std::array<Scoped, kCollProtocols>, kScaledAlgorithms>, 2>
      latency_by_algorithm{};

  bool neutral() const;
  double bandwidth(bool multi_node, CollAlgorithm a) const {
    const int i = scaled_algorithm_index(a);
    const Scoped& s =
        i < 0 ? Scoped{} : bandwidth_by_algorithm[multi_node][static_cast<std::size_t>(i)];
    return s.set ? s.value : (multi_node ? net_bandwidth : nvlink_bandwidth);
  }
  double latency_offset_us(bool multi_node, CollAlgorithm a, CollProtocol p) const {
    const int i = scaled_algorithm_index(a);
    const Scoped& s = i < 0 || p == CollProtocol::kAuto
                          ? Scoped{}
                          : latency_by_algorithm[multi_node][static_cast<std::size_t>(i)]
                                                [static_cast<std::size_t>(p)];
    return s.set ? s.value : (multi_node ? net_latency_offset_us : nvlink_latency_offset_us);
  }
  // A call's latency with the offset laid over the modelled `modelled_us`, floored at
  // (1 - kLatencyOffsetMostRemoved) of it: an 8-GPU all-reduce fit's -10 µs took a 2-GPU
  // all-reduce to 0 µs before 2026-12-07.
  double offset_latency_us(double modelled_us, bool multi_node, CollAlgorithm a,
                           CollProtocol p) const {
    return std::max((1.0 - kLatencyOffsetMostRemoved) * modelled_us,
                    modelled_us + latency_offset_us(multi_node, a, p));
  }
  // Whether a fit moves a call that ran this algorithm and protocol.
  bool moves(bool multi_node, CollAlgorithm a, CollProtocol p) const {
    return bandwidth(multi_node, a) != 1.0 || latency_offset_us(multi_node, a, p) != 0.0;
  }
};

// NCCL's modelled time of one call and the latency term within it, seconds.
struct ModelledTime {
  double latency_s = 0.0;
  double time_s = 0.0;
  CollAlgorithm algorithm = CollAlgorithm::kAuto;  // what NCCL's choice ran
  CollProtocol protocol = CollProtocol::kAuto;
};

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
  ProtoTable tree_cap_one_node_gbps{};  // one node, where the profile sets it apart (else two)
  bool has_tree_cap_one_node = false;
  // Cap on the LL128 ring's bus bandwidth across nodes (NCCL 2.19+ perChMaxRingLL128Bws times
  // the search graph's channels), GB/s; 0: none.
  double ring_ll128_cap_across_nodes_gbps = 0.0;
  // NCCL 2.7.5's cap on LL128 per channel of the search graph, by collective (tuning.cc's
  // ll128MaxBwPerCh): a ring's LL128 bus bandwidth is at most per_channel x the graph's
  // channels, a tree's x 7/9 of that. The graph's channels are not the channels NCCL opens
  // (`channels`, which spread flows): on one node one_node_channels, across nodes
  // channels_a_nic times the NICs the emptiest node's ranks own. All 0: none.
  struct Ll128ChannelCap {
    double all_reduce = 0.0, all_gather = 0.0, reduce_scatter = 0.0, broadcast = 0.0, reduce = 0.0;
    int one_node_channels = 0;
    int channels_a_nic = 0;
  } ll128_channel_cap;
  // A tree's bus bandwidth when a node holds one GPU of the communicator (NCCL 2.18+: the
  // search takes the TREE pattern there, every NIC's traffic through that GPU, and tuning.cc
  // multiplies the tree by 0.85 when any rank's pattern is TREE); 0: no such factor.
  double tree_factor_one_gpu_node = 0.0;
  int channels = 1;             // channels (rings / tree pairs) NCCL opens
  // Cap on the LL ring's bus bandwidth after its factor (NCCL 2.19+ llMaxBws: by GPU on one
  // node, by host CPU on 2 and on more nodes), GB/s; 0: none (NCCL 2.7.5's table, the A100 profile's, has no such cap).
  std::array<double, 3> ring_ll_cap_gbps{};  // one node, two nodes, more
  // Latency on several nodes: the LL intra-node hop latency is multiplied by ll_intra_factor
  // (NCCL 2.7.5), a ring's intra-node step costs at least ring_net_overhead_us (x 3 for Simple;
  // NCCL 2.19+ "net overhead"), and:
  double ll_intra_factor_multi_node = 1.0;
  double ring_net_overhead_us = 0.0;
  // With one rank per node every step is a network step whose latency nothing hides: NCCL
  // 2.30 charges the tree's network latency for every algorithm then.
  bool one_rank_per_node_tree_net_latency = false;
  RingPlateau ring_plateau;
  bool has_tree_correction = false;
  TreeCorrection tree_correction{};
  // NCCL 2.7.5 ranks algorithms by an estimate with the correction, while megasim times the
  // tree with the pipeline's fill in its place (nccl_pipeline.cpp): the correction then serves
  // the choice only.
  bool tree_correction_choice_only = false;
  // NCCL 2.7.5's ring factors where they differ from bandwidth_factor's (0: none): LL128 with
  // fewer than 2 ranks a node ("sending/receiving at the same GPU through the NIC", 0.7), and LL
  // on one node for every operation but all-reduce and reduce (1/3 against 1/4).
  double ring_ll128_factor_under_two_per_node = 0.0;
  double ring_ll_factor_one_node_gather = 0.0;
  NvlsConstants nvls;
  PatConstants pat;
  PipelineConstants pipeline;
  // Point-to-point sends over NVLink (send/recv, all-to-all, pipeline sends inside a node) reach
  // this share of the raw NVLink bandwidth rather than the collectives' (the cluster's
  // nvlink_efficiency); 0: the collectives' share.
  double p2p_nvlink_efficiency = 0.0;
  CollectiveScale scale;  // from the profile's "collective_scales", not from this table

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
    if (nodes <= 1 && has_tree_cap_one_node) return tree_cap_one_node_gbps[column(p)];
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
