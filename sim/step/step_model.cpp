#include "step/step_model.h"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "engine/error.h"
#include "engine/rng.h"
#include "step/pipeline_schedule.h"
#include "step/pricing.h"
#include "workload/flops.h"
#include "workload/program.h"
#include "workload/rank_index.h"

namespace megasim::step {
workload::ModelSpec executed_model(const workload::ModelSpec& m, const SystemOptions& s) {
  workload::ModelSpec e = m;
  if (s.parallel_block) e.parallel_block = true;
  if (s.sliding_window) {
    if (s.attention_window <= 0) {
      throw InputError("optimizations.sliding_window is on but no attention_window is set");
    }
    e.attention_window = s.attention_window;
  }
  return e;
}

namespace {

// Per job rank, in the workload::RankIndex order that the placement and the executor share:
// the slowdown of the host it runs on.
std::vector<double> straggler_factors(const StepRequest& r, const net::Topology& topology) {
  const auto& st = r.stragglers;
  if (st.host_fraction <= 0.0 || st.slowdown <= 1.0) return {};
  const std::int64_t ranks = workload::RankIndex(r.plan).size();
  // The hosts the job occupies, then a seeded choice of round(fraction × hosts) of them.
  std::vector<int> hosts;
  for (std::int64_t i = 0; i < ranks; ++i) hosts.push_back(topology.node_of(r.placement[i]));
  std::sort(hosts.begin(), hosts.end());
  hosts.erase(std::unique(hosts.begin(), hosts.end()), hosts.end());
  const auto slow = static_cast<std::size_t>(std::llround(st.host_fraction * hosts.size()));
  Rng rng(st.seed);
  for (std::size_t i = 0; i + 1 < hosts.size(); ++i) {
    std::swap(hosts[i], hosts[i + rng.below(hosts.size() - i)]);
  }
  std::vector<bool> is_slow(static_cast<std::size_t>(topology.nodes()), false);
  for (std::size_t i = 0; i < slow; ++i) is_slow[static_cast<std::size_t>(hosts[i])] = true;
  std::vector<double> f(static_cast<std::size_t>(ranks), 1.0);
  for (std::int64_t i = 0; i < ranks; ++i) {
    if (is_slow[static_cast<std::size_t>(topology.node_of(r.placement[i]))]) f[i] = st.slowdown;
  }
  return f;
}

}  // namespace

StepPrediction predict_step(const StepRequest& r, const net::Topology& topology,
                            const hw::KernelCostModel& kernels,
                            const hw::CollectiveConstants& constants) {
  const auto& plan = r.plan;
  if (plan.gpus() > topology.gpus()) {
    throw InputError(fmt::format("plan: tp × pp × dp = {} GPUs but the cluster '{}' has {}",
                                 plan.gpus(), topology.spec().name, topology.gpus()));
  }
  if (static_cast<std::int64_t>(r.placement.size()) < plan.gpus()) {
    throw InputError("placement covers fewer GPUs than the plan uses");
  }
  const workload::ModelSpec model = executed_model(r.model, r.system);
  workload::ParallelPlan run_plan = plan;
  if (r.system.lamb) run_plan.optimizer = workload::Optimizer::kLamb;

  workload::GeneratorOptions gen;
  gen.fused_attention = r.system.attention_kernel() != AttentionKernel::kUnfused;
  const std::vector<workload::StageProgram> program = workload::build_program(model, run_plan, gen);

  StepPrediction out;
  out.gpus = plan.gpus();
  for (int s = 0; s < plan.pp; ++s) {
    out.memory.push_back(workload::estimate_memory(model, run_plan, s));
    workload::check_fits(out.memory.back(), kernels.profile().memory);
  }

  Pricer pricer(topology, r.placement, constants, kernels, run_plan, r.system);
  std::vector<StageCosts> costs;
  std::vector<PricingTally> tallies(plan.pp);
  for (int s = 0; s < plan.pp; ++s) costs.push_back(pricer.price(program[s], tallies[s]));
  // The step's samples, read on the first and the last stage of every pipeline.
  const Time load = r.data_per_sample * (plan.global_batch / plan.dp);
  if (!r.system.misc) {
    costs.front().data_loading = load;
    costs.back().data_loading = load;
  }

  const PipelineSchedule schedule =
      build_schedule(plan.schedule, plan.pp, plan.vpp, static_cast<int>(plan.micro_batches()));
  ExecutorConfig cfg;
  cfg.pp_overlap = r.system.pp_overlap;
  cfg.dp_overlap = r.system.dp_overlap;
  cfg.blocking_p2p_overhead = r.system.blocking_p2p_overhead;
  cfg.interference = kernels.profile().interference.compute_slowdown - 1.0;
  cfg.tp = plan.tp;
  cfg.dp = plan.dp;
  cfg.rank_slowdown = straggler_factors(r, topology);
  cfg.slow_all_passes = r.stragglers.all_passes;
  cfg.full = r.full || !cfg.rank_slowdown.empty();
  cfg.record_trace = r.trace;
  ExecutionResult ex = execute_step(schedule, costs, cfg);

  // Asynchronous loading runs while the step ends synchronising gradients; the rest of it is
  // exposed before the next step can start.
  const StageBreakdown& end = ex.stages[ex.critical_stage];
  const Time window = end.dp_exposed + end.optimizer;
  const Time load_exposed = r.system.misc ? std::max(Time::zero(), load - window) : Time::zero();
  out.step_time = ex.step_time + load_exposed;
  out.full = cfg.full;
  out.critical_stage = ex.critical_stage;
  out.events = ex.events;
  out.ranks_simulated = ex.ranks_simulated;
  out.trace = std::move(ex.trace);
  const StageBreakdown& b = ex.stages[ex.critical_stage];
  out.breakdown = {b.compute, b.tp_exposed, b.pp_exposed, b.dp_exposed, b.bubble, b.optimizer,
                   b.data_loading + (out.step_time - b.end)};

  const double seconds = out.step_time.to_seconds();
  out.tokens_per_step = static_cast<double>(plan.global_batch) * static_cast<double>(r.model.seq);
  out.tokens_per_s = out.tokens_per_step / seconds;
  // MFU counts the model as its file defines it (a sliding window switched on as a system
  // optimisation does not lower the numerator, as MegaScale counts it).
  out.model_flops_per_token = workload::model_flops_per_token(r.model).value();
  out.hardware_flops_per_token = workload::hardware_flops_per_token(r.model, plan.recompute).value();
  const double peak = kernels.profile().peak_for(hw::DType::kBf16).value();
  const double gpus = static_cast<double>(plan.gpus());
  out.tflops_per_gpu_model = out.model_flops_per_token * out.tokens_per_s / gpus / 1e12;
  out.tflops_per_gpu_hw = out.hardware_flops_per_token * out.tokens_per_s / gpus / 1e12;
  out.mfu = out.tflops_per_gpu_model * 1e12 / peak;
  out.hfu = out.tflops_per_gpu_hw * 1e12 / peak;

  Time measured, priced, comm_measured, comm_priced;
  for (const auto& t : tallies) {
    measured += t.measured;
    priced += t.priced;
    comm_measured += t.comm_measured;
    comm_priced += t.comm_priced;
  }
  out.measured_share = priced.ns() > 0 ? static_cast<double>(measured.ns()) / priced.ns() : 0.0;
  out.comm_measured_share =
      comm_priced.ns() > 0 ? static_cast<double>(comm_measured.ns()) / comm_priced.ns() : 0.0;
  const auto& prof = kernels.profile();
  out.cost_source = out.measured_share > 0.5 ? "measured"
                    : prof.gemm.fitted       ? "fitted"
                                             : "roofline";

  // A GPU of the critical stage: its compute time split by what the kernels were, its exposed
  // communication, and idle time.
  const PricingTally& t = tallies[ex.critical_stage];
  const std::int64_t m = plan.micro_batches();
  out.kernel_gemm = t.gemm * m;
  out.kernel_attention = t.attention * m;
  out.kernel_memory_bound = t.memory_bound * m;
  const double kernel_total = static_cast<double>((t.gemm + t.attention + t.memory_bound).ns());
  const double compute = static_cast<double>((b.compute + b.optimizer).ns());
  const double gemm_share =
      kernel_total > 0 ? static_cast<double>((t.gemm + t.attention).ns()) / kernel_total : 1.0;
  out.gemm_time = Time::from_ns(std::llround(compute * gemm_share));
  out.memory_bound_time = b.compute + b.optimizer - out.gemm_time;
  out.comm_only_time = b.tp_exposed + b.pp_exposed + b.dp_exposed;
  out.idle_time = out.step_time - out.gemm_time - out.memory_bound_time - out.comm_only_time;
  return out;
}

}  // namespace megasim::step
