// NCCL's analytic cost model (ncclTopoTuneModel + ncclTopoGetAlgoTime), fed by the device
// profile's constants table and the cluster's link bandwidths: time = latency + size / algbw,
// where latency = base[algo][proto] + per-step hardware latencies (ring: one per step, split
// into intra- and inter-node steps; tree: 2 x (chain length x intra + log2(nodes) x inter)),
// and algbw = bus bandwidth x protocol factor x (ring: n / steps, tree: 1/2). It chooses the
// algorithm and protocol the way NCCL does (least predicted time) and gives the latency term
// the flow-level engine adds to its flows. Immutable but for one cache: a calibrated model's
// first choice keeps the constants without their fitted scales (not guarded for threads;
// megasim runs one thread a process).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "collective/collective.h"
#include "engine/time.h"
#include "engine/units.h"
#include "hw/collective_constants.h"
#include "net/topology.h"

namespace megasim::collective {

// How a communicator sits on the nodes: its ranks grouped by node, nodes in order of first
// appearance and ranks within a node in communicator order.
struct CommShape {
  int ranks = 0;
  int nodes = 0;
  int max_per_node = 0;
  int min_per_node = 0;  // the emptiest node's ranks: its NICs bound every channel (NCCL)
  // The NICs' worth a node's ranks drive, the least over the nodes: its ranks over the most of
  // them on one rail (each rail's NIC shared evenly by its ranks): 3 GPUs of 8 on 4 NICs sit on
  // rails 0, 0 and 1, 1.5 NICs' worth; 8 on 4 NICs, 4.
  double min_nic_share = 0.0;
  std::vector<std::vector<int>> by_node;  // GPU ids
};
CommShape comm_shape(const net::Topology& topology, const std::vector<int>& gpus);
// floor(log2(n)) for n >= 1 (NCCL's log2i), 0 for n < 1.
int log2_floor(int n);
// Bytes a protocol puts on the wire per byte of payload (NCCL's line formats): LL sends a
// 4-byte flag with every 4 bytes of data, LL128 8 bytes of flags in every 128-byte line, Simple
// the payload alone.
double protocol_wire_ratio(CollProtocol protocol);

struct ModelCost {
  bool applicable = false;
  Time latency;
  BytesPerSec bus_bandwidth;  // after the protocol factor
  // The fill of NCCL's chunked pipeline across nodes (nccl_pipeline.cpp): part of `time`, not
  // of `latency`; it scales with the bandwidth.
  Time pipeline_fill;
  Time time;
};

class NcclModel {
 public:
  NcclModel(const net::Topology& topology, const hw::CollectiveConstants& constants)
      : topology_(topology), constants_(constants) {}

  ModelCost cost(const CollectiveCall& call, const CommShape& shape, CollAlgorithm algorithm,
                 CollProtocol protocol) const;
  // Resolves kAuto in the call's algorithm and protocol by least predicted time; a forced
  // value is kept. Throws InputError for an algorithm the operation does not have.
  std::pair<CollAlgorithm, CollProtocol> choose(const CollectiveCall& call,
                                                const CommShape& shape) const;
  // The algorithms NCCL would consider for the call (a forced one alone), each with its best
  // protocol by the model (a forced protocol kept), fastest first; throws as choose() does.
  std::vector<std::pair<CollAlgorithm, CollProtocol>> candidates(const CollectiveCall& call,
                                                                 const CommShape& shape) const;
  // Whether NVLink SHARP can run the call: the profile has it, the operation is an all-reduce,
  // every node holds 2 GPUs or more of the communicator and NCCL's channel search fits a speed
  // into the GPU's NVLink. NVLS needs one node, NVLSTree several.
  bool nvls_usable(const CollectiveCall& call, const CommShape& shape,
                   CollAlgorithm algorithm) const {
    return nvls_unusable_reason(call, shape, algorithm).empty();
  }
  // Why not, in words ("" when it can).
  std::string nvls_unusable_reason(const CollectiveCall& call, const CommShape& shape,
                                   CollAlgorithm algorithm) const;
  // NVLS channels (heads) and per-channel speed of NCCL's NVLS graph (hw::NvlsConstants).
  struct NvlsGraph {
    int heads = 0;
    double speed_gbps = 0.0;  // 0: no speed fits
  };
  NvlsGraph nvls_graph(const CommShape& shape) const;
  // Whether NCCL 2.23+'s PAT can run the call (nccl_pat.cpp): the profile has it, the operation
  // is an all-gather or a reduce-scatter, and every node holds one GPU of the communicator.
  bool pat_usable(const CollectiveCall& call, const CommShape& shape) const {
    return pat_unusable_reason(call, shape).empty();
  }
  std::string pat_unusable_reason(const CollectiveCall& call, const CommShape& shape) const;
  // Bus bandwidth of the links before protocol factors: NVLink per GPU on one node; on
  // several, the lesser of NVLink and the NICs' share per GPU.
  BytesPerSec link_bus_bandwidth(const CommShape& shape) const;
  BytesPerSec uncapped_link_bandwidth(const CommShape& shape) const;
  // The channels (rings or tree pairs) a call opens: the profile's count on one node and on
  // full nodes; across nodes, the profile's channels a NIC (16 over DGX A100's 8 NICs: two)
  // times the NICs the emptiest node's ranks own, so a DP group of a TP-8 job (one GPU a node)
  // opens two, not sixteen through its one NIC. The ratio is DGX A100's under NCCL 2.7.5; NCCL
  // 2.30 on Hopper opens four for such a group (README, Known limitations).
  int channels(const CommShape& shape) const;
  // NCCL 2.7.5's LL128 cap for `op`, GB/s (0: none): the profile's per-channel figure times the
  // search graph's channels (hw::CollectiveConstants::Ll128ChannelCap), not channels()'s.
  double ll128_channel_cap_gbps(const CommShape& shape, CollectiveOp op) const;
  // The bus bandwidth NCCL's model gives an algorithm and protocol: the links' bandwidth under
  // the per-architecture cap, times the protocol factor, and for trees under the tree cap.
  // `op` matters where the profile's factors depend on it (NCCL 2.7.5's one-node LL ring and
  // its LL128 caps by collective).
  BytesPerSec bus_bandwidth(const CommShape& shape, CollAlgorithm algorithm, CollProtocol protocol,
                            CollectiveOp op = CollectiveOp::kAllReduce) const;
  // NCCL's treeCorrectionFactor for a tree of that size and protocol (1 where the profile has
  // none): the share of the tree's modelled bandwidth it reaches at mid sizes. The time's
  // factor is 1 where the profile applies the correction to the choice only (NCCL 2.7.5's, with
  // the pipeline's fill timing the tree); the choice's is the table's wherever it has one.
  double tree_correction(CollProtocol protocol, double bytes) const;
  double choice_tree_correction(CollProtocol protocol, double bytes) const;
  // NCCL's chunk at that size (payload bytes per pipeline and step; nccl_pipeline.cpp): a
  // tree's per channel, NVLSTree's per channel and head.
  double tree_chunk_bytes(double bytes, const CommShape& shape, CollProtocol protocol) const;
  double nvls_tree_chunk_bytes(double bytes, const CommShape& shape, int heads) const;
  // Wire bytes per payload byte of a point-to-point send over NVLink: the links run at the
  // collectives' NVLink efficiency, a send at the profile's p2p efficiency (>= 1; 1 without one).
  double p2p_nvlink_flow_scale() const;
  // The pipeline's fill for a call running at `algbw` bytes per second (zero where none).
  Time pipeline_fill(const CollectiveCall& call, const CommShape& shape, CollAlgorithm algorithm,
                     CollProtocol protocol, double algbw) const;

 private:
  // Point-to-point (all-to-all, send/recv): the busiest rank's bytes over NVLink and its share
  // of the node's NICs.
  ModelCost direct_cost(const CollectiveCall& call, const CommShape& shape) const;
  // NVLS and NVLSTree (nccl_nvls.cpp): bus bandwidth heads x min(intra, inter, cap) per channel,
  // algorithm bandwidth that x n / (2(n-1)), latency NVLink + 2 log2(nodes) x net.
  ModelCost nvls_cost(const CollectiveCall& call, const CommShape& shape,
                      CollAlgorithm algorithm) const;
  // A ring broadcast's per-hop latency term as NCCL's model has it (nccl_model.cpp).
  double broadcast_latency_us(const CommShape& shape, CollProtocol protocol) const;
  // PAT (nccl_pat.cpp): NCCL's latency and the links' bandwidth times PAT's share, used as the
  // algorithm bandwidth.
  ModelCost pat_cost(const CollectiveCall& call, const CommShape& shape) const;

  // The constants without the scales fitted to logs, which NCCL's own choice does not know;
  // made at the first choice of a calibrated model and kept (a model that never chooses, or
  // whose scales are neutral, never makes it).
  static std::shared_ptr<const hw::CollectiveConstants> unscaled_copy(
      const hw::CollectiveConstants& constants);

  const net::Topology& topology_;
  const hw::CollectiveConstants& constants_;
  mutable std::shared_ptr<const hw::CollectiveConstants> unscaled_;
};

}  // namespace megasim::collective
