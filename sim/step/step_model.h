// One training step of a plan on a cluster, predicted: the op programs of every pipeline
// stage (workload), priced on the device and the network (pricing.h), executed event by event
// (executor.h), summed up as a user reads it: step time, tokens/s, MFU and HFU, the time
// breakdown, memory per stage, where the costs came from, and how a GPU spends the step.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hw/collective_constants.h"
#include "hw/kernel_cost_model.h"
#include "net/topology.h"
#include "step/executor.h"
#include "step/system_options.h"
#include "step/workload_assembly.h"
#include "workload/memory.h"

namespace megasim::step {

// A share of hosts running slower, drawn by seed (MegaScale §5.1: about 0.5 % of hosts; §6.3: about
// 10 % slower, seen in their forward computation's timing; a slow host runs every pass slow).
struct StragglerSpec {
  double host_fraction = 0.0;
  double slowdown = 1.0;  // time factor, ≥ 1
  bool all_passes = true;  // false: forward passes only
  std::uint64_t seed = 1;
};

// How many of a job's `hosts` a straggler setting slows: round(host_fraction × hosts), none
// where slowdown is 1. The step draws that many; the run level turns its own straggler draw
// off only where it is at least one (a share that rounds to no host slowed nothing, yet took
// the run's stragglers away until 2026-12-06).
std::int64_t slowed_hosts(double host_fraction, double slowdown, std::int64_t hosts);
// The hosts a job of `gpus` occupies on servers of `gpus_per_node`, packed or spread (spread
// takes whole servers).
std::int64_t job_hosts(std::int64_t gpus, int gpus_per_node);

struct StepRequest {
  AssembledWorkload workload;  // assemble_workload(model, plan, system)
  SystemOptions system;
  std::vector<int> placement;  // GPU of each job rank (workload::RankIndex)
  bool full = false;           // every rank rather than one per stage
  bool trace = false;
  StragglerSpec stragglers;
  // Host time to read and preprocess one sample. Without `misc` the step's samples are
  // prepared at its start, before the first pass, on the first and last pipeline stages
  // (the ones that read the batch), as MegaScale (NSDI'24, data pipeline) describes its baseline;
  // Megatron-LM's per-micro-batch fetch of prepared samples is not modelled apart. With `misc`
  // (MegaScale's asynchronous preprocessing) the next step's samples are prepared while the
  // workers synchronise gradients at the end of this step and the next opens with its
  // parameter all-gather: only what exceeds that window (the critical stage's DP waits outside
  // its passes and its optimizer step) is exposed.
  Time data_per_sample;
  // Where PP and DP communication is timed: priced beforehand, pass by pass, or as flows on
  // the step's one shared network, every group's at once (executor.h, "The network"), as
  // coflows (ExecutorNetwork::coflows), or with every flow apart: the slow reference the
  // coflows are checked against.
  enum class Network { kPriced, kShared, kSharedApart };
  // --network's name of each: "priced", "shared", "apart".
  static const char* to_string(Network n);
  Network network = Network::kShared;
};

// Where the critical stage's step goes; `other` is its exposed data loading (the critical stage
// finishes last, so it waits for no slower one).
struct Breakdown {
  Time compute, tp_exposed, pp_exposed, dp_exposed, bubble, optimizer, other;
  // The slowest of the job's GPUs pacing the passes (hw::FleetVariation), and the waits at DP
  // collectives for straggling members (a scenario's `stragglers`).
  Time slowest_gpu;
  Time power_cap;    // GEMMs at the clock the board's power limit leaves (hw::SustainedGemm)

  // The step time: the parts are the critical stage's step, cut without overlap.
  Time sum() const {
    return compute + tp_exposed + pp_exposed + dp_exposed + bubble + optimizer + other +
           slowest_gpu + power_cap;
  }
};

struct StepPrediction {
  Time step_time;
  double tokens_per_step = 0.0;
  double tokens_per_s = 0.0;
  double mfu = 0.0, hfu = 0.0;
  // HFU by Korthikanti et al.'s published count (workload::FlopsPerToken::hardware_published:
  // the recomputed attention core three times its forward), for published HFU figures.
  double hfu_published = 0.0;
  double tflops_per_gpu_model = 0.0, tflops_per_gpu_hw = 0.0;
  double model_flops_per_token = 0.0, hardware_flops_per_token = 0.0;
  Breakdown breakdown;  // of the stage that finishes last
  // With MegaScale's asynchronous data pipeline (misc): the step's end on the critical stage,
  // from its last pass to its end, and its DP waits before its first pass (the opening
  // parameter all-gather), which the next step's loading hides behind.
  Time loading_window;
  // ZeRO-3 / FSDP collective time on the critical stage that ran beside compute (not part of
  // the breakdown's sum; the exposed part is in breakdown.dp_exposed).
  Time dp_hidden;
  // The framework's pipeline engine's own work on the critical stage (DeepSpeed's partitioned
  // transfers and per micro-batch gradient updates, workload/pipe_engine_ops.h), a part of
  // breakdown.compute and breakdown.tp_exposed.
  Time pipe_engine;
  int critical_stage = 0;
  std::vector<workload::MemoryEstimate> memory;  // per stage
  double measured_share = 0.0;  // of compute time priced from measured kernel tables
  double comm_measured_share = 0.0;  // of collective time priced from measured fits
  std::string cost_source;      // "measured", "fitted" or "roofline": the profile's main answer
  // Kernel time of one step on a GPU of the critical stage, by kind (standalone prices,
  // before interference; the optimizer step not included).
  Time kernel_gemm, kernel_attention, kernel_memory_bound;
  // How a GPU spends the step, averaged over the stages (sums to step_time).
  Time gemm_time, memory_bound_time, comm_only_time, idle_time;
  std::int64_t gpus = 0;
  std::int64_t ranks_simulated = 0;
  std::uint64_t events = 0;
  std::uint64_t network_solves = 0;  // the shared network's solves (its work; for benchmarks)
  // One forward-only evaluation iteration over the step's micro-batches (evaluation_pass.h).
  Time evaluation_iteration;
  bool full = false;
  StepRequest::Network network = StepRequest::Network::kShared;  // the model of the network run
  std::vector<TraceRecord> trace;
};

// The request is checked (io::load_inputs, plan::assemble_step): the plan fits the model, the
// cluster and the device memory, and the placement covers every rank.
StepPrediction predict_step(const StepRequest& request, const net::Topology& topology,
                            const hw::KernelCostModel& kernels,
                            const hw::CollectiveConstants& constants);

}  // namespace megasim::step
