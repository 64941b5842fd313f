#include "plan/estimate.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "collective/nccl_model.h"
#include "plan/work_bounds.h"
#include "step/pipeline_schedule.h"
#include "step/pricing.h"
#include "step/workload_assembly.h"
#include "workload/flops.h"
#include "workload/program.h"
#include "workload/rank_index.h"

namespace megasim::plan {
namespace {

double sec(Time t) {
  return t.to_seconds();
}

// The switches and the attention kernel of a system, as a cache key.
std::uint32_t system_bits(const step::SystemOptions& s) {
  std::uint32_t bits = 0;
  for (std::size_t i = 0; i < step::kSwitches.size(); ++i) {
    if (s.*step::kSwitches[i].field) bits |= 1u << i;
  }
  bits |= static_cast<std::uint32_t>(s.attention_kernel()) << 16;
  if (s.backward_tp_overlap) bits |= 1u << 24;
  if (s.pipe_engine.partitioned_transfers) bits |= 1u << 25;
  if (s.pipe_engine.bf16_optimizer) bits |= 1u << 26;
  if (s.tp_decomposition.enabled) bits |= 1u << 27;
  if (s.grad_accumulation_pass) bits |= 1u << 28;
  if (s.scatter_gather_transfers) bits |= 1u << 29;
  if (s.scatter_gather_list_copy) bits |= 1u << 30;
  return bits;
}

}  // namespace

AnalyticEstimator::AnalyticEstimator(const io::Inputs& in, const net::Topology& topology,
                                     const hw::KernelCostModel& kernels, std::int64_t max_passes)
    : inputs_(in), topology_(topology), kernels_(kernels), max_passes_(max_passes) {
  peak_flops_ = in.device.peak_for(workload::mfu_peak_dtype(in.scenario.plan)).value();
}

bool AnalyticEstimator::splits_tp_group(const workload::ParallelPlan& p) const {
  // Packed, TP innermost: groups are blocks of tp GPUs, and one crosses a node's end once the
  // job passes a node and tp neither divides the node nor is a multiple of it.
  const int per_node = topology_.gpus_per_node();
  return p.tp < per_node && per_node % p.tp != 0 && p.gpus() > per_node;
}

AnalyticEstimator::Probe AnalyticEstimator::price_probe(const workload::ParallelPlan& real,
                                                        const step::SystemOptions& system) {
  // Three stages of one layer each. Stage 0 holds the embedding and a layer, stage 1 a layer
  // alone, stage 2 a layer and the head.
  workload::ModelSpec model = inputs_.model;
  model.layers = 3;
  workload::ParallelPlan p;
  p.tp = real.tp;
  p.sequence_parallel = real.sequence_parallel;
  p.pp = 3;
  p.vpp = 1;
  p.dp = 1;
  p.micro_batch = real.micro_batch;
  p.global_batch = 3 * static_cast<std::int64_t>(real.micro_batch);
  p.recompute = real.recompute;
  p.precision = real.precision;
  p.fp32_gradients = real.fp32_gradients;
  p.fp8 = real.fp8;
  p.fp8_params = real.fp8_params;
  p.optimizer = real.optimizer;  // LAMB's step costs more than Adam's (the system's or the plan's)
  p.schedule = workload::Schedule::kOneFOneB;
  Probe probe;
  probe.workload = step::assemble_workload(model, p, system);
  // The probe's GPUs: three TP groups, packed; a cluster smaller than that reuses its GPUs
  // (only the TP groups of stage 0 are priced on the fabric; PP is priced analytically). A TP
  // size that does not divide the node splits some of the real plan's groups over two nodes
  // (TP 6 on 8 GPUs: two of every four): then each probe stage's group is placed across a
  // node's end as the worst of them is split, so that the probe prices the split group, whose
  // calls pace the step, on every stage (the Pricer prices each stage's groups where they
  // sit). Packed groups start at multiples of tp, so the fewest a split leaves on one node is
  // g = gcd(tp, GPUs a node) (TP 5 on 8: 1 and 4; TP 6: 2 and 4), and the call runs at that
  // node's NICs. (Until 2026-12-06 split in halves: TP 5 × DP 32 on 160 GPUs ranked at 9.39 s
  // where the event level gives 12.69 s.)
  const bool split = splits_tp_group(real);
  const int per_node = topology_.gpus_per_node();
  const int fewest = std::gcd(p.tp, per_node);
  std::vector<int> placement(static_cast<std::size_t>(3 * p.tp));
  for (int i = 0; i < 3 * p.tp; ++i) {
    const int gpu = split ? (i / p.tp) * per_node + (per_node - fewest) + i % p.tp : i;
    placement[static_cast<std::size_t>(i)] = gpu % topology_.gpus();
  }
  step::Pricer pricer(topology_, placement, inputs_.collective, kernels_, probe.workload.plan,
                      system);
  pricer.set_traffic_on_network(true);
  probe.tally.resize(3);
  for (int s = 0; s < 3; ++s) probe.costs.push_back(pricer.price(probe.workload.program[s], probe.tally[s]));
  return probe;
}

void AnalyticEstimator::engine_prices(const Candidate& c, const Probe& bare, LayerPrices& lp) {
  // DeepSpeed's engine and Megatron-LM's scatter-gather (workload/pipe_engine_ops.h): transfers
  // come once a chunk boundary, not once a layer, and the pipeline's first and last chunks lack
  // one side; the engine's BF16_Optimizer update, once a micro-batch over the stage's
  // parameters. Priced as the probe with the transfers alone and with both, less the bare one.
  step::SystemOptions transfers_only = c.system;
  transfers_only.pipe_engine.bf16_optimizer = false;
  const Probe tr = price_probe(c.plan, transfers_only);
  const Probe all = c.system.pipe_engine.bf16_optimizer ? price_probe(c.plan, c.system) : tr;
  lp.pp_bytes = tr.workload.program[0].pp_send_bytes.value();  // the bare probe's sends whole
  for (int s = 0; s < 3; ++s) {
    const auto i = static_cast<std::size_t>(s);
    lp.engine[i].f = sec(tr.costs[i].forward[0] - bare.costs[i].forward[0]);
    lp.engine[i].b = sec(tr.costs[i].backward[0] - bare.costs[i].backward[0]);
    lp.engine[i].tp = sec(tr.costs[i].forward_tp[0] + tr.costs[i].backward_tp[0] -
                          bare.costs[i].forward_tp[0] - bare.costs[i].backward_tp[0]);
  }
  const double params = static_cast<double>(bare.workload.program[1].parameters_per_rank);
  if (params <= 0) return;
  lp.update_per_param = sec(all.costs[1].backward[0] - tr.costs[1].backward[0]) / params;
  // BF16_Optimizer's step work over every parameter of the stage (the casts around its
  // all-reduce, the norm of all fp32 gradients), not the DP shard.
  lp.engine_step_per_param = sec(all.costs[1].optimizer - bare.costs[1].optimizer) / params;
  lp.bf16_engine = c.system.pipe_engine.bf16_optimizer;
}

const AnalyticEstimator::LayerPrices& AnalyticEstimator::layer_prices(const Candidate& c) {
  const workload::ParallelPlan& real = c.plan;
  // What a candidate's plan varies that the probe's prices depend on; precision and FP8 are
  // the scenario's, the same for every candidate of one estimator (the space has no axis for
  // them: plan_space.h), and the probe runs at DP 1, so the distributed optimizer's axis and
  // ZeRO do not reach its layers.
  const auto key =
      std::make_tuple(real.tp, real.sequence_parallel, real.micro_batch,
                      static_cast<int>(real.recompute), system_bits(c.system),
                      splits_tp_group(real), real.fp32_gradients, static_cast<int>(real.optimizer));
  if (auto it = layers_.find(key); it != layers_.end()) return it->second;

  // The layers priced without the transfers' and the engine's own work (engine_prices, apart).
  step::SystemOptions bare_system = c.system;
  bare_system.pipe_engine.partitioned_transfers = false;
  bare_system.pipe_engine.bf16_optimizer = false;
  bare_system.scatter_gather_transfers = false;
  const Probe bare = price_probe(real, bare_system);
  const std::vector<step::StageCosts>& costs = bare.costs;
  LayerPrices lp;
  lp.layer_f = sec(costs[1].forward[0]);
  lp.layer_b = sec(costs[1].backward[0]);
  lp.layer_tp = sec(costs[1].forward_tp[0] + costs[1].backward_tp[0]);
  lp.embed_f = sec(costs[0].forward[0]) - lp.layer_f;
  lp.embed_b = sec(costs[0].backward[0]) - lp.layer_b;
  lp.embed_tp = sec(costs[0].forward_tp[0] + costs[0].backward_tp[0]) - lp.layer_tp;
  lp.head_f = sec(costs[2].forward[0]) - lp.layer_f;
  lp.head_b = sec(costs[2].backward[0]) - lp.layer_b;
  lp.head_tp = sec(costs[2].forward_tp[0] + costs[2].backward_tp[0]) - lp.layer_tp;
  const double params = static_cast<double>(bare.workload.program[1].parameters_per_rank);
  lp.optimizer_per_param = params > 0 ? sec(costs[1].optimizer) / params : 0.0;
  const step::PricingTally& t = bare.tally[1];
  const double kernel = sec(t.gemm + t.attention + t.memory_bound);
  lp.gemm_share = kernel > 0 ? sec(t.gemm + t.attention) / kernel : 1.0;
  lp.pp_bytes = bare.workload.program[0].pp_send_bytes.value();
  if (c.system.pipe_engine.partitioned_transfers || c.system.pipe_engine.bf16_optimizer ||
      workload::pp_transfer(real, c.system.scatter_gather_transfers, false) ==
          workload::PpTransfer::kScatterGather) {
    engine_prices(c, bare, lp);
  }
  return layers_[key] = lp;
}

double closed_form_makespan(const workload::ParallelPlan& p, double f, double b, double hop,
                            std::optional<double> blocking_sync) {
  const auto micro_batches = static_cast<double>(p.micro_batches());
  if (!blocking_sync && p.vpp == 1 && p.schedule == workload::Schedule::kOneFOneB &&
      micro_batches >= 1.0) {
    // 1F1B with asynchronous sends, exactly as step::simulate_ideal runs it: the fill and
    // drain's 2 (pp − 1) sends, and in the steady state two for every micro-batch after the
    // first but one in every pp (stage 0 holds pp in flight, each waiting for its gradient's
    // round trip): (m + pp − 1)(f + b) + hop · (2 (pp − 1) + 2 (m − 1) − 2 (⌊(m − 2) / pp⌋ + 1)).
    // The textbook form below leaves out the steady state's sends (until 2026-12-06 for 1F1B
    // too: 36 against 41 at pp 4, m 8, f 1, b 2 and a send of 0.5).
    const double pp = static_cast<double>(p.pp);
    const double steady =
        micro_batches < 2.0
            ? 0.0
            : 2.0 * (micro_batches - 1.0) - 2.0 * (std::floor((micro_batches - 2.0) / pp) + 1.0);
    return (micro_batches + pp - 1.0) * (f + b) + hop * (2.0 * (pp - 1.0) + steady);
  }
  // f and b are a chunk's: a stage runs vpp chunks a micro-batch, and the fill and drain
  // take one chunk a stage each way (the bubble of (p - 1) / vpp stage passes), each crossing
  // p - 1 sends; the steady state's sends are left out, so this is the schedule's makespan
  // without them, a lower bound. Until 2026-12-03 this took f + b for a stage's, so an
  // interleaved plan past the bound was estimated vpp times too fast (175B at VPP 6: 7.7 s for
  // a 38.8 s step).
  const double fill = static_cast<double>(p.pp - 1) * (f + b + 2.0 * hop);
  // Blocking, a stage's exchanges besides: one a steady-state pass pair interleaved, one a
  // pass with 1F1B, each with its two messages or one and the synchronisation.
  // GPipe's and ZB-H1's programs exchange before and after every pass, about 4m.
  const double per_micro_batch = p.schedule == workload::Schedule::kOneFOneB ? 2.0 : 4.0;
  const double exchanges = !blocking_sync ? 0.0
                           : p.vpp > 1    ? (hop * 2.0 + *blocking_sync) * micro_batches * p.vpp
                                       : (hop + *blocking_sync) * per_micro_batch * micro_batches;
  return micro_batches * p.vpp * (f + b) + fill + exchanges;
}

double AnalyticEstimator::schedule_seconds(const workload::ParallelPlan& p, double f, double b,
                                           double hop, const Blocking* blocking) {
  const std::int64_t micro_batches = p.micro_batches();
  if (p.pp == 1) return static_cast<double>(micro_batches) * (f + b);
  // A step past the work bound (search's --max-events, which the event stage holds too) is
  // not built pass by pass: its makespan in closed form instead (closed_form_makespan). (A
  // 2^31-micro-batch plan's count overflowed an int; 2^25 built a schedule past the memory.
  // Until 2026-12-03 the bound ignored a raised --max-events.)
  // Counted as the event level counts them (three a micro-batch and chunk with zero-bubble).
  if (plan_passes(p, false) > static_cast<double>(max_passes_) ||
      micro_batches > std::numeric_limits<int>::max()) {
    return closed_form_makespan(p, f, b, hop,
                                blocking ? std::optional<double>(blocking->sync) : std::nullopt);
  }
  const int m = static_cast<int>(micro_batches);
  // The makespan is homogeneous of degree one in (f, b, hop): keyed by the ratios on a grid of
  // kScheduleRatioStep, and scaled back by f. b / f is rounded; hop / f is interpolated between
  // its two grid neighbours, so that a hop under half a step of f still delays the schedule
  // (rounded, what asynchronous sends add to the makespan was 0 below 1 % of f, 2026-12-05).
  const int b_steps = static_cast<int>(std::lround(b / f / kScheduleRatioStep));
  // Blocking: the synchronisation after each exchange, interpolated as the hop is (rounded to
  // the grid until the review of 2026-12-05: a sync under 1 % of f was dropped).
  const double sync_grid = blocking == nullptr ? 0.0 : blocking->sync / f / kScheduleRatioStep;
  const auto units = [&](int hop_steps, int sync_steps) {
    const auto key = std::make_tuple(p.pp, p.vpp, m, static_cast<int>(p.schedule), b_steps,
                                     hop_steps, sync_steps);
    auto it = schedules_.find(key);
    if (it == schedules_.end()) {
      const step::PipelineSchedule s = step::build_schedule(p.schedule, p.pp, p.vpp, m);
      constexpr double kUnit = 1e6;  // ns of f: resolution of the ratios
      const auto grid = [&](int steps) {
        return Time::from_ns_rounded(kUnit * steps * kScheduleRatioStep);
      };
      step::IdealTimes t;
      t.forward = Time::from_ns(static_cast<std::int64_t>(kUnit));
      t.backward = grid(b_steps);
      t.p2p = grid(hop_steps);
      const Time made = blocking == nullptr ? step::simulate_ideal(s, t).makespan
                                            : step::simulate_blocking_ideal(s, t, grid(sync_steps));
      // (sync_steps is -1 without blocking: a key apart from every blocking one.)
      it = schedules_.emplace(key, static_cast<double>(made.ns()) / kUnit).first;
    }
    return it->second;
  };
  // Linear between a ratio's two grid neighbours (the makespan is piecewise linear in each).
  const auto between = [](double ratio, const auto& at) {
    const int below = static_cast<int>(std::floor(ratio));
    const double above_share = ratio - below;
    return above_share > 0.0 ? (1.0 - above_share) * at(below) + above_share * at(below + 1)
                             : at(below);
  };
  const double hop_grid = hop / f / kScheduleRatioStep;
  const double made = between(hop_grid, [&](int hop_steps) {
    if (blocking == nullptr) return units(hop_steps, -1);
    return between(sync_grid, [&](int sync_steps) { return units(hop_steps, sync_steps); });
  });
  // The rounding of b / f, put back on each of the critical stage's m x vpp backward passes:
  // without it a ratio rounded down made the makespan less than a stage's own passes (a
  // negative bubble, -0.03 s, in search --json).
  const double b_built = b_steps * kScheduleRatioStep * f;
  return made * f + static_cast<double>(m) * p.vpp * (b - b_built);
}

AnalyticEstimator::DpParts AnalyticEstimator::dp_parts(const Candidate& c, const LayerPrices& lp,
                                                       int stage) {
  const workload::ParallelPlan& p = c.plan;
  const workload::ModelSpec& model = inputs_.model;
  // The critical stage's gradients and, with the distributed optimizer, its parameters. Once a
  // step: the space has no ZeRO-2 plan (plan_space.cpp), whose reduce-scatter of every
  // micro-batch (step/executor.h) this estimate would leave out.
  const auto params = static_cast<double>(workload::stage_parameters_per_rank(model, p, stage));
  const double grad_bytes = workload::gradient_bytes(p);
  const bool sharded = p.distributed_optimizer;
  // DeepSpeed's BF16_Optimizer all-reduces them once in bf16 (pipe_engine_ops.h), as simulated.
  const bool bf16_engine = lp.bf16_engine && p.precision == workload::Precision::kBf16 &&
                           !p.zero2 && !p.zero3;
  double grads = bf16_engine ? dp_seconds(hw::CollectiveOp::kAllReduce, params * 2.0, c)
                             : dp_seconds(sharded ? hw::CollectiveOp::kReduceScatter
                                                  : hw::CollectiveOp::kAllReduce,
                                          params * grad_bytes, c);
  const double gather = sharded ? dp_seconds(hw::CollectiveOp::kAllGather, params * 2.0, c) : 0.0;
  if (model.tied_embeddings && p.pp > 1) {
    // The tied embedding's gradient all-reduced between the pipeline's two ends, which the
    // executor runs among the end stages' DP gradient traffic (a chunk's share of it, queued
    // with the reduce-scatters): two ranks, one message's time each way at once. (Two
    // messages' time until 2026-12-05: the executor's all-reduce takes one.)
    const double vocab_r = static_cast<double>((model.vocab + p.tp - 1) / p.tp);
    grads += pair_seconds(vocab_r * static_cast<double>(model.hidden) * grad_bytes, false);
  }
  DpParts d;
  d.exposed = grads + gather;
  if (c.system.dp_overlap) {
    // The chunks' collectives queue on the one DP stream. Interleaved, stage 0 starts chunk
    // j's first forward pass j x pp passes into the step and ends chunk j's last backward pass
    // j x pp passes before its end: an all-gather (or reduce-scatter) longer than pp of a
    // chunk's passes falls behind by the difference at each chunk, and the last one waits.
    const double chunk_layers = static_cast<double>(model.layers) / p.pp / p.vpp;
    const double forward = lp.layer_f * chunk_layers, backward = lp.layer_b * chunk_layers;
    const double grad_chunk = grads / p.vpp, gather_chunk = gather / p.vpp;
    const auto queued = [&](double collective, double pass) {
      return collective + (p.vpp - 1) * std::max(0.0, collective - p.pp * pass);
    };
    d.exposed = queued(grad_chunk, backward) + queued(gather_chunk, forward);
    if (c.system.dp_bucket_overlap) {
      // Bucket by bucket, as the executor runs them: a chunk's gradients beside its last
      // backward pass, its parameters beside its first forward pass (gathered, queued, from the
      // step's start). What outlasts the pass is exposed, and at least one bucket's share of
      // each. (The all-gathers were not queued until 2026-12-05: 1.14 s where the event level
      // exposes 1.56 at 12,288 GPUs, PP 2, VPP 6.)
      const auto bucket = static_cast<double>(workload::dp_bucket_elements(p));
      const double buckets = std::max(1.0, std::round(params / p.vpp / bucket));
      const auto beside = [&](double collective, double pass) {
        return std::max(collective / buckets, queued(collective, pass) - pass);
      };
      d.exposed = beside(grad_chunk, backward) + beside(gather_chunk, forward);
    }
    const double hidden = grads + gather - d.exposed;
    d.interference = (kernels_.profile().interference.compute_slowdown - 1.0) * hidden;
  }
  d.optimizer = lp.optimizer_per_param * (sharded ? params / p.dp : params) +
                lp.engine_step_per_param * params;
  return d;
}

StepFigures AnalyticEstimator::estimate(const Candidate& c) {
  const workload::ParallelPlan& p = c.plan;
  const step::SystemOptions& sys = c.system;
  const LayerPrices& lp = layer_prices(c);
  const workload::ModelSpec& model = inputs_.model;
  const double m = static_cast<double>(p.micro_batches());
  const double per_stage_layers = static_cast<double>(model.layers / p.pp);
  const double vpp = p.vpp;

  // Per micro-batch work of the first, a middle and the last stage (all chunks).
  const double body = per_stage_layers * (lp.layer_f + lp.layer_b);
  const double body_tp = per_stage_layers * lp.layer_tp;
  const double embed = lp.embed_f + lp.embed_b, head = lp.head_f + lp.head_b;
  const EngineWork engine = engine_work(c, lp);  // transfers' and the engine's work; else zero
  double c_first = body + embed + engine.first.f + engine.first.b;
  double c_last = body + head + engine.last.f + engine.last.b;
  double c_mid = body + engine.mid.f + engine.mid.b;
  double tp_first = body_tp + lp.embed_tp + engine.first.tp;
  double tp_last = body_tp + lp.head_tp + engine.last.tp;
  const double mid_tp = body_tp + engine.mid.tp;
  if (p.pp == 1) {  // one stage: the engine's update alone (engine.first == engine.last)
    c_first = c_last = body + embed + head + engine.first.b;
    tp_first = tp_last = body_tp + lp.embed_tp + lp.head_tp;
  }
  const bool last_critical = c_last >= c_first;
  // The job's slowest GPU paces every pass's compute, as in the executor (ExecutorConfig::
  // slowest_gpu): the passes' compute, not their exposed TP time, takes `slow` longer.
  const double slow = slowest_gpu(p.gpus());
  const double c_crit_nominal = last_critical ? c_last : c_first;
  const double tp_crit = last_critical ? tp_last : tp_first;
  c_first += slow * (c_first - tp_first);
  c_last += slow * (c_last - tp_last);
  c_mid += slow * (c_mid - mid_tp);
  // A middle stage exists from PP 3 on.
  const double c_max = p.pp > 2 ? std::max({c_first, c_last, c_mid}) : std::max(c_first, c_last);
  const double compute_tp = m * (last_critical ? tp_last : tp_first);
  const double fwd_share = (last_critical
                                ? lp.layer_f * per_stage_layers + lp.head_f + engine.last.f
                                : lp.layer_f * per_stage_layers + lp.embed_f + engine.first.f) /
                           c_crit_nominal;

  const Pipeline pipe =
      pipeline_seconds(c, lp, c_max * fwd_share / vpp, c_max * (1.0 - fwd_share) / vpp);
  const double pipeline = pipe.passes, pp_exposed = pipe.pp_exposed;

  const DpParts dp = dp_parts(c, lp, last_critical ? p.pp - 1 : 0);
  const double dp_exposed = dp.exposed, interference = dp.interference, optimizer = dp.optimizer;

  // Data loading (step::StepRequest::data_per_sample).
  const double load = inputs_.scenario.data_loading.host_ms_per_sample * 1e-3 *
                      static_cast<double>(p.global_batch / p.dp);
  const double load_exposed = sys.misc ? std::max(0.0, load - dp_exposed - optimizer) : load;
  const double step = pipeline + interference + pp_exposed + dp_exposed + optimizer + load_exposed;
  StepFigures e;
  e.step_time = Time::from_seconds(step);
  const double c_crit = last_critical ? c_last : c_first;
  const double paced = m * slow * (c_crit_nominal - tp_crit);
  e.breakdown.compute = Time::from_seconds(m * c_crit_nominal - compute_tp + interference);
  e.breakdown.slowest_gpu = Time::from_seconds(paced);
  e.breakdown.tp_exposed = Time::from_seconds(compute_tp);
  e.breakdown.bubble = Time::from_seconds(pipeline - m * c_crit);
  e.breakdown.pp_exposed = Time::from_seconds(pp_exposed);
  e.breakdown.dp_exposed = Time::from_seconds(dp_exposed);
  e.breakdown.optimizer = Time::from_seconds(optimizer);
  e.breakdown.other = Time::from_seconds(load_exposed);
  e.tokens_per_s = static_cast<double>(p.global_batch) * static_cast<double>(model.seq) / step;
  // The candidate's own FLOPs: a varied sliding window changes the count.
  e.mfu = step::mfu_flops_per_token(model, sys) * e.tokens_per_s / p.gpus() / peak_flops_;
  // Power by activity as step_model.cpp's add_activity: waits are exchanges, the optimizer memory.
  const double busy = m * c_crit_nominal - compute_tp + interference;
  e.gemm_time = Time::from_seconds(busy * lp.gemm_share);
  e.memory_bound_time = Time::from_seconds(busy * (1.0 - lp.gemm_share) + optimizer);
  e.idle_time = e.breakdown.other;  // the host's data loading; every wait is an exchange
  e.comm_time = e.step_time - e.gemm_time - e.memory_bound_time - e.idle_time;
  return e;
}

AnalyticEstimator::EngineWork AnalyticEstimator::engine_work(const Candidate& c,
                                                            const LayerPrices& lp) const {
  // The transfers' work at each chunk's boundaries (none without PP): the pipeline's first (or
  // last) chunk prices as the probe's first (or last) stage, every other chunk as its middle
  // one; and the BF16_Optimizer update once a micro-batch.
  const workload::ParallelPlan& p = c.plan;
  EngineWork w;
  const auto add = [](LayerPrices::Engine& to, const LayerPrices::Engine& e, double times) {
    to.f += e.f * times;
    to.b += e.b * times;
    to.tp += e.tp * times;
  };
  if (p.pp > 1) {
    const double others = p.vpp - 1;
    add(w.first, lp.engine[0], 1.0);
    add(w.first, lp.engine[1], others);
    add(w.mid, lp.engine[1], p.vpp);
    add(w.last, lp.engine[2], 1.0);
    add(w.last, lp.engine[1], others);
  }
  const auto update = [&](int stage) {
    return lp.update_per_param *
           static_cast<double>(workload::stage_parameters_per_rank(inputs_.model, p, stage));
  };
  if (lp.update_per_param > 0) {
    w.first.b += update(0);
    w.mid.b += update(std::min(1, p.pp - 1));
    w.last.b += update(p.pp - 1);
  }
  return w;
}

double AnalyticEstimator::slowest_gpu(std::int64_t gpus) {
  const auto it = slowest_.find(gpus);
  if (it != slowest_.end()) return it->second;
  return slowest_[gpus] = kernels_.profile().fleet_variation.slowest_of(gpus);
}

}  // namespace megasim::plan
