// The step executor: one training step of every rank (or of one representative rank per
// pipeline stage), event by event on the engine.
//
// Each rank has a compute stream and PP and DP communication streams. The compute stream runs
// the passes of its pipeline stage in the schedule's order; a pass starts when the stream is
// free, its producer pass has finished and, if on another stage, the activation or gradient
// has arrived over the PP stream, and its TP peers are ready too (every TP collective inside a
// pass synchronises them). Pass durations are given already priced (StageCosts: compute with
// the system's exposed TP communication inside). The placement of PP and DP communication is
// the system's:
//   Megatron-LM  the stage runs its blocking p2p program (blocking_p2p_program): between
//                passes, exchanges that send and receive together and end when every message
//                is delivered, a send waiting for the receiving stage to post its exchange
//                (1F1B and interleaved; GPipe and ZB-H1, not written for blocking exchanges,
//                send eagerly into the receiver's buffer); then a host synchronisation. Gradients
//                are reduce-scattered after the last backward pass and parameters all-gathered
//                after the optimizer step, both blocking.
//   MegaScale    PP sends run on their own stream beside compute; each model chunk's gradients
//                are reduce-scattered as soon as its last backward pass ends, and each chunk's
//                parameter all-gather is prefetched at the start of the step so that only the
//                first forward of that chunk waits for it.
//   ZeRO-2       (reduce_every_backward) each backward pass's gradients are reduce-scattered
//                when it ends: the last pass's as above, every earlier pass's whole chunk at
//                its end.
// While PP or DP communication runs beside a compute pass, its kernels slow by the interference
// factor, not its waits (the rate is 1 / (1 + factor x the kernels' share of the pass); it
// changes mid-pass and the completion event is rescheduled).
//
// A DP collective starts when every member of its group has launched it, so a slow rank
// delays its whole DP group, and through the pipeline every stage. Folded mode (full = false)
// simulates one rank per stage, exact when ranks are symmetric.
//
// The network (ExecutorConfig::network). Without one, PP and DP communication takes the times
// priced beforehand (StageCosts). With one, the PP and DP streams issue their messages and
// collectives as flows on one flow solver in the step's own simulator, through the collective
// engine, so every group's traffic in flight at the same simulated time competes for the
// fabric: the DP groups of all stages, every PP pair, the all-gathers. Folded mode still issues
// every group's traffic: a representative stage's PP send carries the sends of all DP replicas
// (one coflow, step/pp_sends.h, on replica 0's own links: net/link_fold.h) and its DP
// collective the calls of every group of the stage (one coflow).
// TP collectives stay priced inside the passes: they run inside a node, on NVLink, and do not
// meet the fabric (a TP group wider than a node keeps its priced contention). On nodes with a
// NIC per GPU wired rail by rail, the calls of one rail (TP rank 0) stand for all rails, as
// pricing does: the load other rails add on the aggregation switches' uplinks is left out.
// Communication with a measured alpha-beta fit, and the tied-embedding all-reduce between the
// pipeline's ends, keep their priced time.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "collective/collective.h"
#include "engine/time.h"
#include "engine/units.h"
#include "step/pipeline_schedule.h"
#include "step/sharded_pass.h"
#include "workload/rank_index.h"

namespace megasim::hw {
struct CollectiveConstants;
}
namespace megasim::net {
class Topology;
}

namespace megasim::step {

// The priced work of one pipeline stage (all of its ranks alike, before slowdowns).
struct StageCosts {
  // Per model chunk: compute-stream time of one pass of one micro-batch, and the part of it
  // that is exposed TP communication (for the breakdown).
  std::vector<Time> forward, backward, weight_grad;
  std::vector<Time> forward_tp, backward_tp, weight_grad_tp;
  // The part that is waiting for ZeRO-3 / FSDP collectives inside the pass (sharded_pass.h).
  std::vector<Time> forward_dp, backward_dp, weight_grad_dp;
  // Per chunk, kept for the trace only (Pricer::set_keep_timelines; empty otherwise): where a
  // sharded pass's compute and DP collectives lay, as it was priced.
  std::vector<ShardedTimeline> forward_timeline, backward_timeline, weight_grad_timeline;
  Time pp_activation;  // forward send of one micro-batch's activations to the next stage
  Time pp_gradient;    // backward send of the gradient to the previous stage
  Bytes pp_message;    // either send's bytes (the trace's args)
  std::vector<Time> dp_reduce_scatter;  // per chunk: gradient reduce-scatter (or all-reduce)
  std::vector<Time> dp_all_gather;      // per chunk: parameter all-gather (distributed optimizer)
  // Per chunk: the bytes each rank puts in those collectives (the trace's args).
  std::vector<Bytes> dp_reduce_scatter_bytes, dp_all_gather_bytes;
  // Per chunk: the DP buckets its collectives go out in (empty or 1: the whole chunk at once).
  std::vector<int> dp_buckets;
  // Per chunk: the buckets its gradient reduce-scatters go out in as a backward pass produces
  // them (empty: dp_buckets). Under ZeRO-2 with dp_overlap the workload's buckets whatever the
  // preset: every ZeRO-2 reduces during the backward (DeepSpeed's reduce bucket, FSDP's unit).
  std::vector<int> dp_reduce_buckets;
  Time optimizer;                       // the optimizer step on this rank
  Time data_loading;                    // before the first pass: reading the step's batch
};

// One part of a DP collective of a model chunk: issued on the network (each DP group of the
// stage runs `op` on `bytes`), or, off the network, waited for `priced`.
struct DpPart {
  bool on_network = false;
  hw::CollectiveOp op = hw::CollectiveOp::kReduceScatter;
  Bytes bytes;
  Time priced;
};

// What one stage sends on the network. The parts of a chunk's collective run one after the
// other, as pricing sums them.
struct StageTraffic {
  bool pp_on_network = false;
  Bytes pp_bytes;  // one micro-batch's activation (or gradient) message
  std::vector<std::vector<DpPart>> reduce_scatter, all_gather;  // per chunk
};

struct ExecutorNetwork {
  const net::Topology* topology = nullptr;          // must outlive the execution
  const hw::CollectiveConstants* constants = nullptr;
  std::function<int(int stage, int d, int t)> gpu;  // the GPU of a job rank
  int rails = 1;  // TP ranks whose calls are issued: 1 (a representative rail) or tp
  std::vector<StageTraffic> stages;
  // A PP message's copies (every replica's in folded mode, every rail's) and a DP collective's
  // flows (every channel's, every rail's) run as one coflow each (step/pp_sends.h,
  // CollectiveEngine::use_coflows); off, every flow by itself (for tests that compare).
  bool coflows = true;
  // Arrivals and departures that change no other flow's rate skip the solve
  // (FlowSolver::set_local_updates); off, every change is solved (for tests that compare).
  bool local_updates = true;
};

struct ExecutorConfig {
  bool pp_overlap = false;
  bool dp_overlap = false;
  // ZeRO-2 (plan.zero2): a rank keeps its shard of the gradients (and what is not yet reduced:
  // workload/memory.cpp), so every backward pass of a chunk, not only the last, has its
  // gradients reduce-scattered (DeepSpeed's stage 2 and FSDP's SHARD_GRAD_OP outside no_sync
  // alike). With dp_overlap beside compute, bucket by bucket as the pass produces them
  // (StageCosts::dp_reduce_buckets); without it all at the pass's end, the next pass waiting.
  bool reduce_every_backward = false;
  // Without pp_overlap: host-side cost of each blocking exchange (Megatron-LM's device
  // synchronisation), paid on the compute stream once the exchange has completed.
  Time blocking_p2p_overhead;
  double interference = 0.0;  // fractional compute slowdown beside PP/DP communication
  // Every pass's compute (not its exposed TP communication) takes this fraction longer: the
  // step is paced by the job's slowest GPU (hw::FleetVariation::slowest_of).
  double slowest_gpu = 0.0;
  // Every pass's compute takes this fraction longer as well: its GEMMs at the clock the
  // board's power limit leaves them (hw::SustainedGemm), weighted by their share of the
  // kernels (step_model.cpp).
  double power_cap = 0.0;
  bool full = false;          // every rank, rather than one per stage
  int tp = 1, dp = 1;
  // Full mode only, optional: per job rank (workload::RankIndex order over tp, the schedule's
  // pp and dp) compute slowdown factor ≥ 1, applied to forward passes, and to all passes when
  // `slow_all_passes`.
  std::vector<double> rank_slowdown;
  bool slow_all_passes = false;
  bool record_trace = false;  // keep per-task records of the ranks with d = 0 and t = 0
  // Optional, per stage: the global rank the trace labels its traced rank with (the
  // framework's, under the plan's rank order: workload::placement_slot); empty, the job rank.
  std::vector<int> trace_ranks;
  // PP and DP traffic as flows on one shared solver; null: the priced times of StageCosts.
  const ExecutorNetwork* network = nullptr;
};

struct StageBreakdown {
  Time compute;      // compute-stream busy time net of exposed TP communication
  // What the passes took longer because the slowest GPU paces them, and the waits at DP
  // collectives for the group's slower (straggling) members to reach them.
  Time slowest_gpu;
  Time power_cap;    // what the passes took longer at the power-limited clock
  Time tp_exposed;   // exposed TP communication inside passes
  Time pp_exposed;   // waiting for activations/gradients in flight, or blocked sending them
  Time dp_exposed;   // waiting for DP collectives to run, once every member is at them
  Time bubble;       // waiting for a producer pass on another stage
  Time optimizer;
  Time data_loading;
  // DP waits before its first pass began: the step's opening parameter all-gather, a window
  // in which the step needs no data yet (as the end below is).
  Time dp_before_passes;
  Time passes_end;   // when its last pass finished: the step's end (gradient sync, optimizer,
                     // parameter sync) runs from here
  Time end;          // when this stage's rank finished the step
};

struct TraceRecord {
  int rank = 0, stage = 0;
  // "compute", "pp", "dp", "dp in pass" (a sharded pass's collectives: ZeRO-3, FSDP, FP8's
  // amax all-reduces), or "dp wait": a pass held for its parameters, or a sharded pass's waits
  // for its collectives (where its timeline was not kept, summed and drawn after its compute).
  std::string stream;
  std::string name;
  Time start, end;
  int flow_to_rank = -1;  // for PP sends: the receiving rank
  // For PP sends: the receiver's pass that takes the data, as its compute slice is named
  // ("F mb3 c1"), so that the trace's arrow ends on it.
  std::string flow_to_pass;
  // For PP sends and DP collectives: the bytes a rank sends (zero where not known, as in
  // StageCosts built by hand).
  Bytes bytes;
};

struct ExecutionResult {
  Time step_time;
  std::vector<StageBreakdown> stages;  // of the slowest rank of each stage
  int critical_stage = 0;
  std::uint64_t events = 0;
  std::int64_t ranks_simulated = 0;
  // On the shared network: the solver's solves, and the flows they re-rated (its work).
  std::uint64_t network_solves = 0, network_flows_solved = 0;
  std::vector<TraceRecord> trace;
};

ExecutionResult execute_step(const PipelineSchedule& schedule,
                             const std::vector<StageCosts>& stages, const ExecutorConfig& config);

}  // namespace megasim::step
