#include "step/step_model.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <cmath>
#include <numeric>
#include <set>

#include "engine/rng.h"
#include "step/evaluation_pass.h"
#include "step/pipeline_schedule.h"
#include "step/pricing.h"
#include "workload/flops.h"
#include "workload/program.h"
#include "workload/rank_index.h"

namespace megasim::step {

const char* StepRequest::to_string(Network n) {
  switch (n) {
    case Network::kPriced:
      return "priced";
    case Network::kShared:
      return "shared";
    case Network::kSharedApart:
      return "apart";
  }
  return "shared";
}

std::int64_t slowed_hosts(double host_fraction, double slowdown, std::int64_t hosts) {
  if (host_fraction <= 0.0 || slowdown <= 1.0 || hosts <= 0) return 0;
  return std::llround(host_fraction * static_cast<double>(hosts));
}

std::int64_t job_hosts(std::int64_t gpus, int gpus_per_node) {
  return (gpus + gpus_per_node - 1) / gpus_per_node;
}

namespace {

// Per job rank, in the workload::RankIndex order that the placement and the executor share:
// the slowdown of the host it runs on.
std::vector<double> straggler_factors(const StepRequest& r, const net::Topology& topology) {
  const auto& st = r.stragglers;
  if (st.host_fraction <= 0.0 || st.slowdown <= 1.0) return {};
  const std::int64_t ranks = workload::RankIndex(r.workload.plan).size();
  // The hosts the job occupies, then a seeded choice of round(fraction × hosts) of them.
  std::vector<int> hosts;
  for (std::int64_t i = 0; i < ranks; ++i) hosts.push_back(topology.node_of(r.placement[i]));
  std::sort(hosts.begin(), hosts.end());
  hosts.erase(std::unique(hosts.begin(), hosts.end()), hosts.end());
  const auto slow = static_cast<std::size_t>(
      slowed_hosts(st.host_fraction, st.slowdown, static_cast<std::int64_t>(hosts.size())));
  if (slow == 0) return {};
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

// PP and DP traffic as flows on the step's own network, every group's at once. The GPU lookup
// keeps a reference to the pricer.
ExecutorNetwork step_network(Pricer& pricer, const net::Topology& topology,
                             const hw::CollectiveConstants& constants,
                             const std::vector<workload::StageProgram>& program) {
  ExecutorNetwork n;
  n.topology = &topology;
  n.constants = &constants;
  n.gpu = [&pricer](int s, int d, int t) { return pricer.gpu(s, d, t); };
  n.rails = pricer.rails();
  for (const auto& stage : program) n.stages.push_back(pricer.traffic(stage));
  return n;
}

ExecutorConfig executor_config(const StepRequest& r, const net::Topology& topology,
                               const hw::DeviceProfile& profile) {
  ExecutorConfig cfg;
  cfg.pp_overlap = r.system.pp_overlap;
  cfg.dp_overlap = r.system.dp_overlap;
  cfg.reduce_every_backward = r.workload.plan.zero2;
  cfg.blocking_p2p_overhead = r.system.blocking_p2p_overhead;
  cfg.interference = profile.interference.compute_slowdown - 1.0;
  cfg.slowest_gpu = profile.fleet_variation.slowest_of(r.workload.plan.gpus());
  cfg.tp = r.workload.plan.tp;
  // The ranks of a stage that run the same program: dp replicas × cp context ranks
  // (workload::RankIndex); the DP collectives span them all.
  cfg.dp = r.workload.plan.dp_cp();
  cfg.rank_slowdown = straggler_factors(r, topology);
  cfg.slow_all_passes = r.stragglers.all_passes;
  cfg.full = r.full || !cfg.rank_slowdown.empty();
  cfg.record_trace = r.trace;
  if (r.trace) {
    for (int s = 0; s < r.workload.plan.pp; ++s) {
      cfg.trace_ranks.push_back(
          static_cast<int>(workload::placement_slot(r.workload.plan, s, 0, 0)));
    }
  }
  return cfg;
}

// Tokens per second, MFU and HFU from the step time.
void add_rates(const AssembledWorkload& w, const hw::DeviceProfile& profile, StepPrediction& out) {
  const double seconds = out.step_time.to_seconds();
  out.tokens_per_step = static_cast<double>(w.plan.global_batch) * static_cast<double>(w.model.seq);
  out.tokens_per_s = out.tokens_per_step / seconds;
  // MFU counts the model as it is trained: a sliding window, whether the model file or the
  // system switches it on, lowers the attention term of the numerator to s·window, as
  // MegaScale's published figures count it (workload/flops.h).
  out.model_flops_per_token = workload::model_flops_per_token(w.executed).value();
  // HFU counts what the hardware runs: the executed model (a system's window applied where
  // the attention kernel skips the masked scores; unfused attention computes them all).
  out.hardware_flops_per_token =
      workload::hardware_flops_per_token(w.executed, w.plan.recompute, !w.fused_attention).value();
  const double peak = profile.peak_for(workload::mfu_peak_dtype(w.plan)).value();
  const double gpus = static_cast<double>(w.plan.gpus());
  out.tflops_per_gpu_model = out.model_flops_per_token * out.tokens_per_s / gpus / 1e12;
  out.tflops_per_gpu_hw = out.hardware_flops_per_token * out.tokens_per_s / gpus / 1e12;
  out.mfu = out.tflops_per_gpu_model * 1e12 / peak;
  out.hfu = out.tflops_per_gpu_hw * 1e12 / peak;
  const double published =
      workload::flops_per_token(w.executed, w.plan.recompute).hardware_published.value();
  out.hfu_published = published * out.tokens_per_s / gpus / peak;
}

// How much of the compute and collective time rests on measurements.
void add_cost_sources(const std::vector<PricingTally>& tallies, const hw::DeviceProfile& profile,
                      StepPrediction& out) {
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
  out.cost_source = out.measured_share > 0.5 ? "measured"
                    : profile.gemm.fitted      ? "fitted"
                                               : "roofline";
}

// The fraction the passes' compute takes longer at the power-limited clock (ExecutorConfig::
// power_cap), from a step run without it (the critical stage's tally `t` per micro-batch,
// its breakdown `b`, the step `step`): the GEMMs and fused attention
// (tensor-core work alike) run at the profile's sustained rate for the share of the step
// they take, and that share grows as they slow (a few rounds of the fixed point); weighted
// by their share of the kernels, since memory-bound kernels keep the memory clock.
double power_cap_fraction(const hw::SustainedGemm& sustained, const PricingTally& t,
                          const StageBreakdown& b, Time step) {
  if (sustained.points.empty() || step <= Time::zero()) return 0.0;
  const double kernels = static_cast<double>((t.gemm + t.attention + t.memory_bound).ns());
  if (kernels <= 0.0) return 0.0;
  const double weight = static_cast<double>((t.gemm + t.attention).ns()) / kernels;
  const double gemm = static_cast<double>(b.compute.ns()) * weight;
  const double total = static_cast<double>(step.ns());
  double slowdown = 0.0;
  for (int round = 0; round < 8; ++round) {
    slowdown = sustained.slowdown(gemm * (1.0 + slowdown) / (total + gemm * slowdown));
  }
  return slowdown * weight;
}

// How a GPU spends the step, for its power: each stage's compute split by what its kernels
// were (its tally per micro-batch in `tallies`), its exposed communication and its waits,
// averaged over the stages, which hold as many GPUs each; the kernels' times are the critical
// stage's, `m` micro-batches of them. Until 2026-12-07 every GPU was taken to spend the step as
// the critical stage's does.
void add_activity(const std::vector<PricingTally>& tallies, const ExecutionResult& ex,
                  std::int64_t m, StepPrediction& out) {
  const PricingTally& t = tallies[static_cast<std::size_t>(ex.critical_stage)];
  out.kernel_gemm = t.gemm * m;
  out.kernel_attention = t.attention * m;
  out.kernel_memory_bound = t.memory_bound * m;
  const StageBreakdown& critical = ex.stages[static_cast<std::size_t>(ex.critical_stage)];
  // Summed over the stages: GEMM, memory-bound, communication, idle.
  std::array<std::int64_t, 4> sum{};
  for (std::size_t s = 0; s < ex.stages.size(); ++s) {
    const StageBreakdown& b = ex.stages[s];
    const PricingTally& k = tallies[s];
    const double kernel_total = static_cast<double>((k.gemm + k.attention + k.memory_bound).ns());
    const double gemm_share =
        kernel_total > 0 ? static_cast<double>((k.gemm + k.attention).ns()) / kernel_total : 1.0;
    const Time gemm = Time::from_ns_rounded(static_cast<double>(b.compute.ns()) * gemm_share);
    // The slowest GPU's longer passes keep one GPU of the job busy; the others wait for it in
    // their next exchange or collective (NCCL kernels spinning), so the step's GPUs spend that
    // time at communication power. So do they the pipeline's bubble (a stage waits for its
    // neighbour in a posted receive or exchange), and a stage done before the critical one
    // (waiting in the step's next exchange or collective). The optimizer's kernels are
    // memory-bound.
    const Time done_early = std::max(Time::zero(), critical.end - b.end);
    const Time gemm_time = gemm + b.power_cap;  // the same GEMMs, longer at the lower clock
    const Time memory = b.compute - gemm + b.optimizer;
    const Time comm =
        b.tp_exposed + b.pp_exposed + b.dp_exposed + b.slowest_gpu + b.bubble + done_early;
    const Time parts[] = {gemm_time, memory, comm, out.step_time - gemm_time - memory - comm};
    for (std::size_t a = 0; a < sum.size(); ++a) sum[a] += parts[a].ns();
  }
  // Each averaged down, the nanoseconds of the division's remainders to the largest, so that
  // they add up to the step and an activity no stage had stays at none (a few nanoseconds of
  // idle would set the step's power trough).
  const auto stages = static_cast<std::int64_t>(ex.stages.size());
  std::array<std::int64_t, 4> avg{};
  std::int64_t left = out.step_time.ns();
  for (std::size_t a = 0; a < avg.size(); ++a) left -= (avg[a] = sum[a] / stages);
  *std::max_element(avg.begin(), avg.end()) += left;
  out.gemm_time = Time::from_ns(avg[0]);
  out.memory_bound_time = Time::from_ns(avg[1]);
  out.comm_only_time = Time::from_ns(avg[2]);
  out.idle_time = Time::from_ns(avg[3]);
}

// Asynchronous loading exposed past the step's own end (MegaScale's misc, the part the end's
// window does not hide): a slice on every traced rank from the executor's end to the step's,
// as the blocking loading has one at the start, so the trace spans the step (until
// 2026-12-05 it stopped short and the HTML drew the gap as a bubble).
void add_exposed_loading(std::vector<TraceRecord>& trace, Time executed, Time step) {
  if (step <= executed) return;
  std::set<std::pair<int, int>> ranks;
  for (const TraceRecord& t : trace) ranks.emplace(t.rank, t.stage);
  for (const auto& [rank, stage] : ranks) {
    trace.push_back({rank,
                     stage,
                     "compute",
                     "data loading (asynchronous, exposed)",
                     executed,
                     step,
                     -1,
                     {},
                     Bytes(0)});
  }
}

// Each stage's work priced (its tally in `tallies`), and the step's samples (`load`), read on
// the first and the last stage of every pipeline where the system does not load them behind it.
std::vector<StageCosts> price_stages(Pricer& pricer, const StepRequest& r, Time load,
                                     std::vector<PricingTally>& tallies) {
  std::vector<StageCosts> costs;
  for (int s = 0; s < r.workload.plan.pp; ++s)
    costs.push_back(pricer.price(r.workload.program[s], tallies[s]));
  if (!r.system.misc) {
    costs.front().data_loading = load;
    costs.back().data_loading = load;
  }
  return costs;
}

}  // namespace

StepPrediction predict_step(const StepRequest& r, const net::Topology& topology,
                            const hw::KernelCostModel& kernels,
                            const hw::CollectiveConstants& constants) {
  const workload::ParallelPlan& plan = r.workload.plan;
  assert(plan.gpus() <= topology.gpus() && "io::load_inputs checks the cluster size");
  assert(static_cast<std::int64_t>(r.placement.size()) >= plan.gpus());
  const std::vector<workload::StageProgram>& program = r.workload.program;

  StepPrediction out;
  out.gpus = plan.gpus();
  out.memory = r.workload.memory;

  Pricer pricer(topology, r.placement, constants, kernels, plan, r.system);
  const bool shared = r.network != StepRequest::Network::kPriced;
  pricer.set_traffic_on_network(shared);
  pricer.set_keep_timelines(r.trace);
  const Time load = r.data_per_sample * (plan.global_batch / plan.dp);
  std::vector<PricingTally> tallies(plan.pp);
  std::vector<StageCosts> costs = price_stages(pricer, r, load, tallies);

  const PipelineSchedule schedule =
      build_schedule(plan.schedule, plan.pp, plan.vpp, static_cast<int>(plan.micro_batches()),
                     plan.group());
  ExecutorConfig cfg = executor_config(r, topology, kernels.profile());
  ExecutorNetwork network;
  if (shared) {
    network = step_network(pricer, topology, constants, program);
    network.coflows = r.network == StepRequest::Network::kShared;
    cfg.network = &network;
  }
  ExecutionResult ex = execute_step(schedule, costs, cfg);
  // At the power limit: the step again with its GEMMs at the clock the limit leaves them.
  cfg.power_cap = power_cap_fraction(kernels.profile().sustained_gemm, tallies[ex.critical_stage],
                                     ex.stages[ex.critical_stage], ex.step_time);
  if (cfg.power_cap > 0.0) ex = execute_step(schedule, costs, cfg);
  out.evaluation_iteration = evaluation_iteration(schedule, costs, cfg);
  // MegaScale's asynchronous loading reads the next iteration's batch behind this one: an
  // evaluation runs no faster than its batches are read (until 2026-12-05 it read them free).
  if (r.system.misc) out.evaluation_iteration = std::max(out.evaluation_iteration, load);

  // Asynchronous loading runs while the step ends synchronising gradients (MegaScale §3.4) and
  // the next opens with its parameter all-gather (left out until 2026-12-06: 52 of the default
  // scenario's 161 ms); the rest is exposed. (DP time inside the passes is no such window.)
  const StageBreakdown& end = ex.stages[ex.critical_stage];
  const Time window = end.end - end.passes_end + end.dp_before_passes;
  const Time load_exposed = r.system.misc ? std::max(Time::zero(), load - window) : Time::zero();
  out.loading_window = window;
  out.step_time = ex.step_time + load_exposed;
  out.full = cfg.full;
  out.network = r.network;
  out.critical_stage = ex.critical_stage;
  out.events = ex.events;
  out.network_solves = ex.network_solves;
  out.ranks_simulated = ex.ranks_simulated;
  out.trace = std::move(ex.trace);
  add_exposed_loading(out.trace, ex.step_time, out.step_time);
  const StageBreakdown& b = ex.stages[ex.critical_stage];
  out.breakdown = {b.compute,
                   b.tp_exposed,
                   b.pp_exposed,
                   b.dp_exposed,
                   b.bubble,
                   b.optimizer,
                   b.data_loading + (out.step_time - b.end),
                   b.slowest_gpu,
                   b.power_cap};

  add_rates(r.workload, kernels.profile(), out);
  add_cost_sources(tallies, kernels.profile(), out);

  add_activity(tallies, ex, plan.micro_batches(), out);
  out.dp_hidden = tallies[ex.critical_stage].dp_hidden * plan.micro_batches();
  out.pipe_engine = tallies[ex.critical_stage].pipe_engine * plan.micro_batches();
  return out;
}

}  // namespace megasim::step
