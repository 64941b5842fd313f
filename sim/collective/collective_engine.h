// Runs collectives on the flow-level network. launch() turns a call into the flows its NCCL
// algorithm creates and, when the last byte has arrived, waits the NCCL latency term of that
// algorithm and protocol (nccl_model.h) before calling on_done; so concurrent collectives, and
// any other flows on the solver, contend for the same links.
//
//  ring (all-reduce, all-gather, reduce-scatter, broadcast): NcclModel::channels rings (the
//    constants' count a NIC times the NICs the communicator's ranks own on a node); ring c visits
//    the nodes in communicator order and, inside a node, its ranks rotated by c, so the inter-node
//    edges of different channels leave by different rails. Each edge is one flow carrying the bytes
//    a rank sends in that channel (all-reduce 2(n-1)/n x size / channels), divided by the
//    protocol's bandwidth factor.
//  tree (all-reduce): NCCL's double binary tree over nodes with a chain inside each node;
//    channels alternate between the two trees; every tree edge carries size / channels up
//    (reduce) and down (broadcast).
//  nvls (all-reduce, NVLink SHARP): inside each node, one flow per GPU's NVLink port (GPU to
//    the next GPU of its node); nvls_tree adds NCCL's double binary tree between the nodes'
//    channel heads (channel c's head is the node's GPU c, on its own rail), one flow up and
//    one down per tree edge and channel.
//  direct (all-to-all, send/recv): one flow per pair that exchanges data.
// Rings and trees are pipelined in NCCL, so their flows run concurrently here; a flow
// slowed by contention ends later and the call ends with its slowest flow.
//
// send() is one point-to-point message (a pipeline send): one flow, src to dst, and the latency
// of a two-rank send/recv; unlike a kSendRecv call it does not send back.
//
// Choice: NCCL's model ranks the algorithms (NcclModel::candidates). When the communicator spans
// several nodes and more than one algorithm can run, NCCL's pick is timed alone on a private
// solver over the same topology and routing; if the fabric makes it slower than its model
// promised (an ECMP collision on an uplink), every candidate is timed so and the fastest (flows
// plus latency) runs. So a collision that slows a ring cannot make it win over a tree the model
// ranked second. The outcome is kept per shape (operation, size, forced values, ranks, nodes,
// GPUs per node: the first communicator of a shape stands for the rest) for the engine's life.
//
// Not thread-safe: choose() and predict() fill that cache, though they are const.
//
// The simulator and solver are the caller's: a step executor hands its own, so that every call
// it launches meets every other flow in flight. predict() runs the call alone on a private
// simulator and solver over the same topology.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "collective/collective.h"
#include "collective/nccl_model.h"
#include "engine/simulator.h"
#include "engine/time.h"
#include "hw/collective_constants.h"
#include "net/flow_solver.h"
#include "net/topology.h"

namespace megasim::collective {

struct Prediction {
  CollAlgorithm algorithm = CollAlgorithm::kRing;  // what ran (see "Choice" below)
  CollProtocol protocol = CollProtocol::kSimple;
  CollAlgorithm nccl_algorithm = CollAlgorithm::kRing;  // NCCL's pick by its model alone
  CollProtocol nccl_protocol = CollProtocol::kSimple;
  Time model_time;  // NCCL's analytic estimate, with the pipeline's fill across nodes
  Time time;        // flow-level simulation of the call alone
  std::size_t flows = 0;
};

class CollectiveEngine {
 public:
  // Keeps references to all four arguments; they must outlive the engine.
  CollectiveEngine(Simulator& sim, const net::Topology& topology, net::FlowSolver& solver,
                   const hw::CollectiveConstants& constants);

  // Throws InputError for a bad call (empty communicator, GPU outside the cluster, an
  // algorithm the operation lacks); nothing is started then.
  void launch(const CollectiveCall& call, std::function<void()> on_done);
  // One message from src_gpu to dst_gpu; `tag` as a call's (ECMP entropy).
  void send(int src_gpu, int dst_gpu, Bytes bytes, std::uint64_t tag,
            std::function<void()> on_done);
  // The bytes a message of `payload` puts on its path: more than the payload over NVLink inside
  // a node where the profile prices point-to-point below the collectives' NVLink efficiency
  // (NcclModel::p2p_nvlink_flow_scale), the payload elsewhere. send() applies it; a caller of
  // send_path applies it itself.
  Bytes wire_bytes(int src_gpu, int dst_gpu, Bytes payload) const;
  // What send() waits after the last byte of such a message: NCCL's two-rank latency term.
  Time send_latency(int src_gpu, int dst_gpu, Bytes bytes) const;
  // send() along a path routed beforehand (Topology::route with the send's tag as entropy),
  // with its latency given; returns the flow, invalid when none was needed (empty path, no
  // bytes). A caller that repeats one message keeps its path and latency rather than
  // recomputing them, and may cancel the flow and reissue what remains on the solver.
  net::FlowId send_path(
      const std::vector<net::Hop>& path, Bytes bytes, Time latency, std::function<void()> on_done,
      BytesPerSec max_rate = BytesPerSec(std::numeric_limits<double>::infinity()));
  Prediction predict(const CollectiveCall& call) const;
  // With merging on, flows of one launch (or send) that take the same path with the same bytes
  // run as one flow whose every hop weighs their number: under max-min sharing that is the
  // same as running them apart (each gets the same rate), at a fraction of the solver's work.
  // NCCL's channels between two nodes under one ToR all take one path. Off by default, so the
  // figures priced with the engine stay as they were to the last rounding.
  void merge_identical_flows(bool on) { merge_ = on; }
  // With coflows on, the flows of one launch (or launch_all) run as one coflow (FlowSolver's
  // start_path_flow over their joined paths): they move in lockstep and end together, at the
  // pace their most loaded link allows. For a ring channel that is what NCCL's pipelining does
  // (a rank forwards what it received, through a few buffer slots); across channels and across
  // calls it is an approximation that costs time only where their links are loaded unevenly
  // (then the lighter ones end with the slowest, not before it). It is exact when every member
  // meets the same load (symmetric plans, one flow per link). One coflow in place of a call's
  // thousands of flows (16 channels x ranks) is what lets a step put every DP group on one
  // solver. Off by default.
  void use_coflows(bool on) { coflows_ = on; }
  // Several calls started at once, on_done after the last has ended (with coflows on: one
  // coflow for all of them).
  void launch_all(const std::vector<CollectiveCall>& calls, std::function<void()> on_done);
  // The coflow of several calls, to start with send_path: its links (each once, weighted by
  // the members that cross it, a member of fewer bytes by its share of the largest, so that
  // all end together), the largest member's bytes and the largest NCCL latency term.
  struct Coflow {
    std::vector<net::Hop> path;
    Bytes bytes;
    Time latency;
    // The most the coflow's rate may be: its members' protocol caps (pace_by_protocol), each
    // scaled to the largest member's bytes.
    BytesPerSec max_rate = BytesPerSec(std::numeric_limits<double>::infinity());
  };
  Coflow coflow(const std::vector<CollectiveCall>& calls) const;
  const NcclModel& model() const { return model_; }
  // The algorithm and protocol the call runs with (see "Choice" above); throws InputError as
  // NcclModel::choose does.
  std::pair<CollAlgorithm, CollProtocol> choose(const CollectiveCall& call, const CommShape& shape) const;
  // Off: NCCL's analytic choice alone (the flow-level check above is skipped). On by default.
  void check_choice_at_flow_level(bool on) { check_choice_ = on; }
  std::size_t last_flow_count() const { return last_flow_count_; }

 private:
  struct Flow {
    int src;
    int dst;
    double bytes;
    std::uint64_t entropy;
    double max_rate = std::numeric_limits<double>::infinity();  // bytes per second
  };
  // An LL or LL128 call's flows (from index `first` of `out`, carrying `per_payload` bytes per
  // byte of payload so that alone they run at NCCL's rate) carry the protocol's wire bytes
  // instead, capped at the rate that ends them when the model's bandwidth term does: the
  // protocol's pace is the GPUs', and beside other traffic the call takes only the link
  // capacity that pace uses. `simple_too`: a Simple call's flows too (a tree's: their own bytes
  // at the model's pace).
  static void pace_by_protocol(CollProtocol protocol, double per_payload, Time bandwidth_time,
                               std::size_t first, std::vector<Flow>& out, bool simple_too = false);
  // A ring's and a tree's flows at one byte each for a byte of payload (flows_of sizes them).
  void ring_flows(const CollectiveCall& call, const CommShape& shape, std::vector<Flow>& out) const;
  void tree_flows(const CollectiveCall& call, const CommShape& shape, std::vector<Flow>& out) const;
  void direct_flows(const CollectiveCall& call, std::vector<Flow>& out) const;
  // The time flows `first` on of `out` take alone at the busiest of the links a GPU or NIC
  // owns (NVLink, PCIe, the NIC's port), each at its capacity; the fabric above the NICs,
  // where ECMP collisions are the contention the flows are for, is left out.
  double ports_time(const std::vector<Flow>& flows, std::size_t first) const;
  void nvls_flows(const CollectiveCall& call, const CommShape& shape, CollAlgorithm algorithm,
                  std::vector<Flow>& out) const;
  // The call with its algorithm and protocol forced, run alone on a private simulator and
  // solver: when its last byte has arrived plus its latency term, and its flow count. The
  // last few results are kept, so predict() does not run again what choose() just timed.
  struct Alone {
    Time time;
    std::size_t flows = 0;
  };
  Alone time_alone(const CollectiveCall& forced) const;
  // Appends the flows of `call` to `out`; returns its NCCL latency term.
  Time flows_of(const CollectiveCall& call, std::vector<Flow>& out) const;
  // Starts the flows; on_done runs `latency` after the last one has arrived.
  void start(const std::vector<Flow>& flows, Time latency, std::function<void()> on_done);

  Simulator& sim_;
  const net::Topology& topology_;
  net::FlowSolver& solver_;
  const hw::CollectiveConstants& constants_;
  NcclModel model_;
  std::size_t last_flow_count_ = 0;
  bool merge_ = false;
  bool coflows_ = false;
  bool check_choice_ = true;
  using ChoiceKey = std::tuple<int, double, int, int, int, int, int, int>;
  mutable std::map<ChoiceKey, std::pair<CollAlgorithm, CollProtocol>> choices_;
  using AloneKey = std::tuple<int, double, int, int, int, std::uint64_t, std::vector<int>>;
  mutable std::map<AloneKey, Alone> alone_;
};

}  // namespace megasim::collective
