// The analytic stage of `megasim search`: a plan's step in closed form, from the same prices
// the event-level executor runs on, fast enough to rank every plan of a space.
//
// Prices. One transformer layer's forward and backward pass (TP collectives and their overlap
// with the GEMMs included), the embedding's and the logits head's, and the optimizer's cost
// per parameter come from step::Pricer on a probe workload of three one-layer stages
// (step::assemble_workload: the same op generator, kernel cost model and TP pricing as the
// executor's), priced once per (tp, sequence parallelism, micro-batch, recompute, system) and
// cached. A PP send is priced as the executor sends it, every replica's copy at once on the
// fabric (ECMP collisions above the ToRs included), the mean of both directions over up to four
// of the pipeline's stage boundaries; a DP collective as every DP group of every stage runs it
// at once on the fabric, one coflow as the step's shared network runs a stage's (step::Pricer::
// dp_collective_time; one group alone by NCCL's analytic model until 2026-12-08); each once per
// message size and layout.
//
// Schedule: the plan's pipeline schedule (step::simulate_ideal) with the critical stage's
// chunk passes on every stage. PP: with the system's pp_overlap, what a send's time on each
// dependency between stages adds to that makespan is PP exposed; without, Megatron-LM's
// blocking exchanges run lock-step (step::simulate_blocking_ideal: a stage waits in each for
// its neighbour to post the matching one, and each exchange ends with the system's host
// synchronisation), and what they add is PP exposed. DP: without dp_overlap the gradient
// reduce-scatter (or all-reduce) and the parameter all-gather after the backward; with it the
// chunks' collectives queued beside their passes, the rest hidden beside compute (which it
// slows by the interference factor). Then the optimizer and exposed data loading.
//
// Left out, and so left to the event-level stage: contention between PP sends and DP traffic,
// DP groups that do not all meet at once (the price is of every group together), each stage
// boundary's own
// PP price (one mean stands for all), the interference of DP collectives spreading through a
// pipeline without slack, and the stages' unequal memory of the interleaved warm-up.
// Not thread-safe (caches); one estimator per thread.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <tuple>

#include "engine/time.h"
#include "hw/kernel_cost_model.h"
#include "io/inputs.h"
#include "net/topology.h"
#include "plan/plan_space.h"
#include "plan/work_bounds.h"
#include "step/pricing.h"
#include "step/step_model.h"

namespace megasim::plan {

struct StepFigures {
  Time step_time;
  step::Breakdown breakdown;
  double tokens_per_s = 0.0;
  double mfu = 0.0;
  // How a GPU of the critical stage spends the step, for energy (sums to step_time).
  Time gemm_time, memory_bound_time, comm_time, idle_time;
};

// The makespan of the plan's pipeline in closed form, in seconds, for a chunk's forward f and
// backward b and a send of `hop` between stages: the estimate of a step past the work bound,
// which is not built pass by pass. 1F1B with asynchronous sends: step::simulate_ideal's
// makespan exactly, its steady state's sends included. Else the textbook one (Narayanan et
// al. 2021, section 2.2): m·vpp·(f + b) and the fill and drain of pp − 1 stages of a chunk each
// way, each crossing a send, without the steady state's (with asynchronous sends a lower
// bound); with `blocking_sync`, Megatron-LM's blocking exchanges counted besides (`hop` one
// message's time, each exchange followed by the sync): neither exact nor a bound (0.87–1.30
// of step::simulate_blocking_ideal's makespan for 1F1B, 0.78–1.08 interleaved, over a
// reviewer's grid of 2026-12-06).
double closed_form_makespan(const workload::ParallelPlan& p, double f, double b, double hop,
                            std::optional<double> blocking_sync = std::nullopt);

class AnalyticEstimator {
 public:
  // `inputs` gives the model, the device, the collective constants and the scenario's data
  // loading; `topology` (of inputs.cluster) and `kernels` must outlive the estimator. A step
  // of more than `max_passes` pipeline passes (search's --max-events) is estimated by
  // closed_form_makespan, not built pass by pass.
  AnalyticEstimator(const io::Inputs& inputs, const net::Topology& topology,
                    const hw::KernelCostModel& kernels,
                    std::int64_t max_passes = kDefaultMaxEvents);
  AnalyticEstimator(const AnalyticEstimator&) = delete;
  AnalyticEstimator& operator=(const AnalyticEstimator&) = delete;

  StepFigures estimate(const Candidate& c);

 private:
  // Per micro-batch, in seconds: one layer, and what the embedding and the head add.
  struct LayerPrices {
    double layer_f = 0, layer_b = 0, layer_tp = 0;
    double embed_f = 0, embed_b = 0, embed_tp = 0;
    double head_f = 0, head_b = 0, head_tp = 0;
    double optimizer_per_param = 0;  // seconds per parameter the rank updates
    double gemm_share = 1;           // of kernel time: GEMM and attention
    double pp_bytes = 0;
    // The transfers' work (Megatron-LM's scatter-gather, DeepSpeed's PipelineEngine) per chunk
    // of the first, a middle and the last stage (seconds a micro-batch: forward, backward, and
    // the TP part of both), and the engine's BF16_Optimizer update per parameter of a stage,
    // once a micro-batch (0 without them).
    struct Engine {
      double f = 0, b = 0, tp = 0;
    };
    std::array<Engine, 3> engine{};
    double update_per_param = 0;
    double engine_step_per_param = 0;  // BF16_Optimizer's step work per stage parameter
    bool bf16_engine = false;          // BF16_Optimizer on (the plan decides if it runs)
  };
  struct Probe {
    step::AssembledWorkload workload;
    std::vector<step::StageCosts> costs;
    std::vector<step::PricingTally> tally;
  };
  // Whether some TP group of `p` sits on two nodes (a TP size that does not divide the node).
  bool splits_tp_group(const workload::ParallelPlan& p) const;
  Probe price_probe(const workload::ParallelPlan& real, const step::SystemOptions& system);
  void engine_prices(const Candidate& c, const Probe& bare, LayerPrices& lp);
  // The engine's work a micro-batch on the first, a middle and the last stage of the plan.
  struct EngineWork {
    LayerPrices::Engine first, mid, last;
  };
  EngineWork engine_work(const Candidate& c, const LayerPrices& lp) const;
  const LayerPrices& layer_prices(const Candidate& c);
  // hw::FleetVariation::slowest_of, once per GPU count (a quadrature: not for every plan).
  double slowest_gpu(std::int64_t gpus);
  // The pipeline's passes and bubble, and the PP time exposed, for a chunk's forward f and
  // backward b on every stage (seconds).
  struct Pipeline {
    double passes = 0, pp_exposed = 0;
  };
  Pipeline pipeline_seconds(const Candidate& c, const LayerPrices& lp, double f, double b);
  struct DpParts {
    double exposed = 0, interference = 0, optimizer = 0;  // seconds
  };
  DpParts dp_parts(const Candidate& c, const LayerPrices& lp, int stage);
  // A two-rank exchange priced alone, inside a node or across two.
  double pair_seconds(double bytes, bool same_node);
  // A PP message from stage 0 to stage 1 of every replica at once (step::Pricer::
  // pp_message_time), once per size and layout.
  double pp_message_seconds(double bytes, const Candidate& c);
  // The makespan of the plan's pipeline schedule with forward f, backward b and a PP send of
  // `hop` between stages (step::simulate_ideal), in seconds. With `blocking`, Megatron-LM's
  // blocking exchanges instead (step::simulate_blocking_ideal): `hop` is one message's time and
  // each exchange is followed by the synchronisation.
  struct Blocking {
    double sync = 0;  // seconds
  };
  double schedule_seconds(const workload::ParallelPlan& p, double f, double b, double hop,
                          const Blocking* blocking = nullptr);
  double dp_seconds(hw::CollectiveOp op, double bytes, const Candidate& c);

  const io::Inputs& inputs_;
  const net::Topology& topology_;
  const hw::KernelCostModel& kernels_;
  double peak_flops_ = 0;
  std::int64_t max_passes_;
  std::map<std::tuple<int, bool, int, int, std::uint32_t, bool, bool, int>, LayerPrices> layers_;
  std::map<std::pair<double, bool>, double> pair_;
  std::map<std::tuple<double, int, int, int, int, int, bool>, double> pp_;
  // Ratios b/f and hop/f are rounded to this step for the schedule cache.
  static constexpr double kScheduleRatioStep = 0.02;
  std::map<std::tuple<int, int, int, int, int, int, int>, double> schedules_;
  std::map<std::tuple<int, double, int, int, int, int, int>, double> dp_;
  std::map<std::int64_t, double> slowest_;
};

}  // namespace megasim::plan
