// Pricing a stage's op program into the per-pass times the executor runs.
//
// Compute ops are priced by the device's KernelCostModel. Communication is priced on the
// cluster topology by the collective engine, with every group of the same kind running at
// once (a stage's TP groups, one for all where each sits inside a node; all PP pairs between two
// stages, all DP groups of all stages), so fabric contention and ECMP collisions between groups are
// in the figure; results are cached by (kind, bytes, stage). A TP collective that the system
// overlaps with its adjacent GEMM (Op::tp_overlappable: in the backward always, as Megatron-LM
// does; in the forward only with MegaScale's tp_overlap) costs, with the GEMM, max(g', c) + min(g',
// c)/tp — the GEMM slowed by interference (g'), the collective pipelined in tp chunks — instead of
// g + c; where the preset cuts pairs as Transformer Engine does (tp_decomposition), g' is the
// GEMM's pieces or the GEMM on the SMs the collective leaves (overlapped_pair). DP gradient
// collectives of a stage are priced at the stage's whole gradient volume and split over its model
// chunks by their share of parameters.
//
// Approximation: on nodes with a NIC per GPU wired rail by rail (each rail its own ToRs), the
// DP and PP calls of TP rank t all leave by rail t, so the calls of one rail (t = 0) are
// simulated together as a representative: the contention among them, ECMP collisions
// included, is in the price; the load that the other rails add on the aggregation switches'
// uplinks (3 tiers) is not. Where the rails share links (a rack's NICs on one ToR, or GPUs
// sharing NICs) every rail's calls are simulated.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "collective/collective_engine.h"
#include "hw/collective_constants.h"
#include "hw/kernel_cost_model.h"
#include "net/flow_solver.h"
#include "net/topology.h"
#include "step/executor.h"
#include "step/sharded_pass.h"
#include "step/system_options.h"
#include "workload/program.h"
#include "workload/rank_index.h"

namespace megasim::step {

// ZeRO-3 / FSDP's collectives inside a pass: on all of DP, or on a hybrid shard's group.
bool is_sharded_dp(workload::Group g);

// What a stage's compute time is made of, for the breakdown, power and the measured share.
struct PricingTally {
  Time gemm, attention, memory_bound, tp_exposed, tp_hidden;
  Time measured;  // compute time priced from measured tables
  Time priced;    // all compute time priced
  Time comm_measured, comm_priced;  // the same for collectives (measured tables)
  Time dp_hidden;  // per micro-batch: ZeRO-3 / FSDP time overlapped (ShardedPassTime)
  // Per micro-batch: the pipeline engine's own work in the passes (workload::Op::pipe_engine),
  // its kernels and its exposed collectives, standalone prices.
  Time pipe_engine;
};

class Pricer {
 public:
  // `placement[r]` is the GPU of job rank r, in the workload::RankIndex order.
  Pricer(const net::Topology& topology, std::vector<int> placement,
         const hw::CollectiveConstants& constants, const hw::KernelCostModel& kernels,
         const workload::ParallelPlan& plan, const SystemOptions& system);

  StageCosts price(const workload::StageProgram& stage, PricingTally& tally);
  // What the stage's PP and DP streams send when the executor runs them on the network
  // (ExecutorNetwork): the PP message size, and each chunk's DP collectives split by its share
  // of the stage's layers as price() splits their times. Communication with a measured table,
  // and the tied-embedding all-reduce between the pipeline's ends, keep their price.
  StageTraffic traffic(const workload::StageProgram& stage);

  // PP sends and DP collectives will run as flows on the step's shared network: price them by
  // NCCL's analytic model (for the tally of cost sources; the executor does not wait for
  // those prices) rather than by simulating each alone. Set before price().
  void set_traffic_on_network(bool on) { traffic_on_network_ = on; }
  // Calls priced together on the network run as one coflow (CollectiveEngine::use_coflows),
  // as the step's shared network runs a stage's DP collectives; off by default (every flow by
  // itself). Search's estimate sets it for its DP prices: one flow where every group's ring
  // hops were each a flow (a TP-1 plan at 12,288 GPUs: about 0.3 s a price).
  void set_coflows(bool on) { coflows_ = on; }
  // Keep each ZeRO-3 / FSDP pass's timeline in StageCosts (for the trace). Set before price().
  void set_keep_timelines(bool on) { keep_timelines_ = on; }

  // One PP message from every DP replica (and issued rail) of `from_stage` to `to_stage` at
  // once, ECMP-routed, ending with the slowest copy, as the executor sends it on the network
  // (step/pp_sends.h); or its measured time where the device has one. For search's estimate.
  Time pp_message_time(Bytes bytes, int from_stage, int to_stage);
  // A DP collective of `bytes` a rank in every DP group of every stage at once, ECMP-routed
  // (one rail's groups where rails are wired, rails()), as the end of Megatron-LM's backward
  // runs them; or its measured time where the device has one. For search's estimate.
  Time dp_collective_time(hw::CollectiveOp op, Bytes bytes);

  int gpu(int stage, int d, int t) const;
  // How many TP ranks' calls are simulated together: 1 (a representative rail) on rail-wired
  // nodes with a NIC per GPU, else all of them.
  int rails() const;

 private:
  friend struct PricerProbe;  // tests/step/pricer_fixture.h: one DP collective's price
  // `timeline`, where not null: a sharded pass's spans (none for any other pass).
  Time pass_time(const std::vector<workload::Op>& ops, bool backward, PricingTally& tally,
                 Time& tp_exposed, Time& dp_exposed, ShardedTimeline* timeline = nullptr);
  // A pass with ZeRO-3 / FSDP collectives on the DP communicator (sharded_pass.h): each op's
  // share of the pass (`share`, paired GEMMs `taken` into their collective's) as segments.
  Time sharded_time(const std::vector<workload::Op>& ops, const std::vector<Time>& share,
                    const std::vector<bool>& taken, PricingTally& tally, Time& dp_exposed,
                    ShardedTimeline* timeline);
  // With SystemOptions::cp_overlap: each attention op and the context-parallel exchanges
  // beside it (`cost` per op) priced together in `share`, the exposed part in `tp_exposed`.
  void overlap_context_exchange(const std::vector<workload::Op>& ops, const std::vector<Time>& cost,
                                std::vector<Time>& share, Time& tp_exposed) const;
  Time tp_time(const workload::CommOp& c);
  Time pp_time(Bytes bytes, int from_stage, int to_stage);
  // Per stage, the most nodes one of its TP groups spans (1 when every group sits inside a
  // node; a TP size that does not divide the node splits some, on some stages).
  std::vector<int> tp_group_nodes() const;
  // The nodes a PP hand-off between two stages spans (TP rank 0 of replica 0 stands for all).
  int pp_nodes(int from_stage, int to_stage) const;
  // The nodes the GPUs gpu_of(0), …, gpu_of(n − 1) sit on.
  template <typename GpuOf>
  int nodes_spanned(int n, GpuOf gpu_of) const;
  // A DP-group collective run `per_step` times a step (once for the gradient and parameter
  // collectives at the step's edges; once per micro-batch inside a ZeRO-3 / FSDP pass).
  // `timed_on_network`: the step's network times the call (traffic_on_network_, a kDp call at
  // the step's edges), so its price only feeds the cost-source tally and NCCL's analytic time
  // of one call stands in; every other call is simulated with its group's peers.
  Time dp_time(const workload::CommOp& c, std::int64_t per_step = 1, bool timed_on_network = false);
  // The nodes one DP communicator (kDp) spans under the placement.
  int dp_group_nodes() const;
  Time tp_time_simulated(const workload::CommOp& c);
  Time pp_time_simulated(Bytes bytes, int from_stage, int to_stage);
  // The send of every DP replica and issued rail from one stage to the other, or `op` between
  // the two (the tied embedding's all-reduce).
  std::vector<collective::CollectiveCall> pp_calls(
      Bytes bytes, int from_stage, int to_stage,
      hw::CollectiveOp op = hw::CollectiveOp::kSendRecv) const;
  Time dp_time_simulated(const workload::CommOp& c, bool timed_on_network);
  // The DP indices of each communicator of group `g` (kDp, kDpShard or kDpReplica).
  std::vector<std::vector<int>> dp_groups(workload::Group g) const;
  // SystemOptions::Sharding's host time of one collective, added to its segment; `copies` is
  // the device time of its per-rank copies, already in the segment.
  void add_host(const workload::CommOp& c, Time copies, ShardedSegment& s) const;
  // The ranks of the communicator a ZeRO-3 / FSDP collective runs on (kDp or kDpShard).
  int sharded_ranks(const workload::CommOp& c) const;
  // The host time of a reduce-scatter's per-rank copy loop (HostPerRank's library part).
  Time scatter_loop(const workload::CommOp& c) const;
  // SystemOptions::Sharding::per_rank_copies: the copies between the flat buffer and the
  // per-rank tensors of one list-form collective.
  Time per_rank_copies(const workload::CommOp& c) const;
  // SystemOptions::Sharding::zeroed_gather_buffer: the fill of an all-gather's output buffer.
  Time zero_fill(const workload::CommOp& c) const;
  // One memory-bound copy kernel reading and writing these bytes (the framework's buffer work
  // around the sharded collectives: fills, per-rank copies, the reduce buffer's passes).
  Time copy_time(Bytes read, Bytes written) const;
  // SystemOptions::Sharding::contiguous_gradients: a gradient's copy into the reduce buffer
  // and the division of the bucket it would open (sharded_pass.h).
  void reduce_buffer_work(const workload::CommOp& c, ShardedSegment::Tensor& t) const;
  std::vector<int> pair_tp_collectives(const std::vector<workload::Op>& ops, bool backward,
                                       std::vector<bool>& taken) const;
  // A TP collective and the GEMM it overlaps, together (SystemOptions::tp_decomposition).
  Time overlapped_pair(const workload::Op& comm, const workload::Op& gemm, Time g, Time c) const;
  // Each chunk's share of the stage's DP traffic: its share of the stage's parameters.
  static std::vector<double> chunk_shares(const workload::StageProgram& stage);
  // NCCL's analytic time of one call alone.
  Time analytic(const collective::CollectiveCall& call) const;
  // A price that a call of the same kind within a factor 2 of its size scales: the bandwidth
  // part only, where NCCL's model picks the same algorithm and protocol for both, each size
  // keeping its own latency term (at 192 ranks a 64 MiB reduce-scatter is 40 % latency).
  struct ScalablePrice {
    double bytes = 0.0;
    Time time;
    Time latency;
    std::pair<collective::CollAlgorithm, hw::CollProtocol> choice;
  };
  // NCCL's choice for one call alone, its time and its latency term.
  ScalablePrice nccl_price(const collective::CollectiveCall& call) const;
  // Runs the calls together on a private simulator and returns when the last one ends.
  Time concurrent(const std::vector<collective::CollectiveCall>& calls);
  // A collective priced from the profile's measured table of the same operation on a
  // communicator of the same ranks and nodes (nccl-tests imported or measured), interpolated
  // log-log within its measured sizes (hw::measured_collective_time); nullopt elsewhere, where
  // NCCL's model answers (with the scales the profile fitted to its logs, if any).
  std::optional<Time> measured(const workload::CommOp& c, int ranks, int nodes) const;
  // Records a collective's price, run `per_step` times a step, in the current stage's tally.
  Time tally_comm(Time t, bool from_measurement, std::int64_t per_step);

  const net::Topology& topology_;
  std::vector<int> placement_;
  const hw::CollectiveConstants& constants_;
  const hw::KernelCostModel& kernels_;
  const workload::ParallelPlan& plan_;
  SystemOptions system_;
  double interference_;
  int dp_nodes_;  // dp_group_nodes(), once
  std::vector<int> tp_nodes_;  // tp_group_nodes(), once
  int stage_ = 0;              // the stage being priced
  std::map<std::tuple<int, int, int, double>, Time> cache_;
  PricingTally* tally_ = nullptr;  // of the stage being priced
  std::map<int, std::vector<ScalablePrice>> scaled_;  // by op kind
  std::unique_ptr<net::FlowSolver> solver_;  // concurrent()'s, reset for each call
  bool traffic_on_network_ = false;
  bool coflows_ = false;
  bool keep_timelines_ = false;
};

}  // namespace megasim::step
