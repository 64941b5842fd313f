#include "step/pricing.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "engine/simulator.h"
#include "net/flow_solver.h"

namespace megasim::step {
namespace {

using hw::CollectiveOp;
using workload::Group;
using workload::Op;

// From this size a collective's price is kept for scaling to calls of similar size.
constexpr double kScalableBytes = 64.0 * 1024 * 1024;

bool is_gemm(const Op& op) {
  const auto* k = op.kernel();
  return k && std::holds_alternative<hw::GemmShape>(*k);
}

// The weight-gradient GEMMs, and the work that follows them (the gradient accumulation pass).
bool is_weight_grad(const Op& op) {
  return op.gemm_role == workload::GemmRole::kWeightGrad;
}

}  // namespace

Pricer::Pricer(const net::Topology& topology, std::vector<int> placement,
               const hw::CollectiveConstants& constants, const hw::KernelCostModel& kernels,
               const workload::ParallelPlan& plan, const SystemOptions& system)
    : topology_(topology),
      placement_(std::move(placement)),
      constants_(constants),
      kernels_(kernels),
      plan_(plan),
      system_(system),
      interference_(kernels.profile().interference.compute_slowdown),
      dp_nodes_(dp_group_nodes()),
      tp_nodes_(tp_group_nodes()) {}

Time Pricer::analytic(const collective::CollectiveCall& call) const {
  return nccl_price(call).time;
}

Pricer::ScalablePrice Pricer::nccl_price(const collective::CollectiveCall& call) const {
  const collective::NcclModel model(topology_, constants_);
  const collective::CommShape shape = collective::comm_shape(topology_, call.gpus);
  const auto choice = model.choose(call, shape);
  const collective::ModelCost cost = model.cost(call, shape, choice.first, choice.second);
  return {call.bytes.value(), cost.time, cost.latency, choice};
}

Time Pricer::concurrent(const std::vector<collective::CollectiveCall>& calls) {
  Simulator sim;
  // One solver for every call, reset to new each time: its per-link table is allocated once.
  if (solver_) {
    solver_->reset(sim);
  } else {
    solver_ = std::make_unique<net::FlowSolver>(sim, topology_, net::Routing::kEcmp);
  }
  net::FlowSolver& solver = *solver_;
  collective::CollectiveEngine engine(sim, topology_, solver, constants_);
  Time last = Time::zero();
  if (coflows_) {
    engine.use_coflows(true);
    engine.launch_all(calls, [&sim, &last] { last = sim.now(); });
    sim.run();
    return last;
  }
  for (const auto& call : calls) {
    engine.launch(call, [&sim, &last] { last = std::max(last, sim.now()); });
  }
  sim.run();
  return last;
}

std::optional<Time> Pricer::measured(const workload::CommOp& c, int ranks, int nodes) const {
  return hw::measured_collective_time(kernels_.profile().collective_table, c.kind, ranks, nodes,
                                     c.size);
}

Time Pricer::tally_comm(Time t, bool from_measurement, std::int64_t per_step) {
  if (tally_) {
    tally_->comm_priced += t * per_step;
    if (from_measurement) tally_->comm_measured += t * per_step;
  }
  return t;
}

Time Pricer::pp_time(Bytes bytes, int from, int to) {
  // Sent once per micro-batch and model chunk.
  const std::int64_t n = plan_.micro_batches() * plan_.vpp;
  if (auto m = measured(workload::CommOp{CollectiveOp::kSendRecv, Group::kPp, bytes}, 2,
                        pp_nodes(from, to))) {
    return tally_comm(*m, true, n);
  }
  return tally_comm(pp_time_simulated(bytes, from, to), false, n);
}

Time Pricer::pp_message_time(Bytes bytes, int from, int to) {
  if (auto m = measured(workload::CommOp{CollectiveOp::kSendRecv, Group::kPp, bytes}, 2,
                        pp_nodes(from, to))) {
    return *m;
  }
  return concurrent(pp_calls(bytes, from, to));
}

Time Pricer::dp_collective_time(CollectiveOp op, Bytes bytes) {
  return dp_time(workload::CommOp{op, Group::kDp, bytes});
}

Time Pricer::pp_time_simulated(Bytes bytes, int from, int to) {
  const auto key = std::make_tuple(1, from, to, bytes.value());
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  const std::vector<collective::CollectiveCall> calls = pp_calls(bytes, from, to);
  return cache_[key] = traffic_on_network_ ? analytic(calls.front()) : concurrent(calls);
}

std::vector<collective::CollectiveCall> Pricer::pp_calls(Bytes bytes, int from, int to,
                                                         CollectiveOp op) const {
  std::vector<collective::CollectiveCall> calls;
  for (int d = 0; d < plan_.dp_cp(); ++d) {
    for (int t = 0; t < rails(); ++t) {
      collective::CollectiveCall call;
      call.op = op;
      call.bytes = bytes;
      call.gpus = {gpu(from, d, t), gpu(to, d, t)};
      call.tag = static_cast<std::uint64_t>(d * plan_.tp + t);
      calls.push_back(std::move(call));
    }
  }
  return calls;
}

Time Pricer::dp_time(const workload::CommOp& c, std::int64_t per_step, bool timed_on_network) {
  if (c.group == Group::kDp) {
    if (auto m = measured(c, plan_.dp_cp(), dp_nodes_)) return tally_comm(*m, true, per_step);
  }
  return tally_comm(dp_time_simulated(c, timed_on_network), false, per_step);
}

Time Pricer::dp_time_simulated(const workload::CommOp& c, bool timed_on_network) {
  const bool pp_group = c.group == Group::kPp;
  const bool stand_in = traffic_on_network_ && timed_on_network && c.group == Group::kDp;
  const int path = pp_group ? 3 : (stand_in ? 4 : 2);
  const auto key =
      std::make_tuple(path, static_cast<int>(c.kind), static_cast<int>(c.group), c.size.value());
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  std::vector<collective::CollectiveCall> calls;
  if (pp_group) {
    // The tied-embedding all-reduce between the first and the last stage, once per step, of
    // every replica's pairs at once, as the PP sends: where GPUs share a NIC the pairs share it
    // (priced for one pair alone until 2026-12-06, half the time on Jean Zay's nodes of 4 NICs
    // for 8 GPUs), and the pairs' flows meet above the ToRs.
    calls = pp_calls(c.size, 0, plan_.pp - 1, c.kind);
  } else {
    // Every DP group (or hybrid shard's subgroup) of every stage at once, as at the end of
    // Megatron-LM's backward.
    for (int s = 0; s < plan_.pp; ++s) {
      for (int t = 0; t < rails(); ++t) {
        const auto groups = dp_groups(c.group);
        for (std::size_t i = 0; i < groups.size(); ++i) {
          const auto& members = groups[i];
          if (members.size() < 2) continue;
          collective::CollectiveCall call;
          call.op = c.kind;
          call.bytes = c.size;
          call.tag = static_cast<std::uint64_t>(s * plan_.tp + t) +
                     static_cast<std::uint64_t>(i) * static_cast<std::uint64_t>(plan_.pp * plan_.tp);
          for (const int d : members) call.gpus.push_back(gpu(s, d, t));
          calls.push_back(std::move(call));
        }
      }
    }
  }
  if (calls.empty()) return cache_[key] = Time::zero();
  if (stand_in) return cache_[key] = analytic(calls.front());
  if (c.size.value() < kScalableBytes) return cache_[key] = concurrent(calls);
  // Gradient buckets are hundreds of megabytes: a bucket within a factor 2 of one already
  // simulated, with NCCL's same algorithm and protocol, is priced by scaling its bandwidth part.
  const int kind = path * 16 + static_cast<int>(c.kind) + 256 * static_cast<int>(c.group);
  ScalablePrice price = nccl_price(calls.front());
  for (const ScalablePrice& ref : scaled_[kind]) {
    const double ratio = c.size.value() / ref.bytes;
    if (ratio < 0.5 || ratio > 2.0 || ref.choice != price.choice) continue;
    return cache_[key] = price.latency + (ref.time - ref.latency) * ratio;
  }
  price.time = concurrent(calls);
  if (price.time > price.latency) scaled_[kind].push_back(price);
  return cache_[key] = price.time;
}

// Pairs each overlappable TP collective with its GEMM: partner[i] is the GEMM's index (-1:
// none), and taken marks the GEMMs paired.
std::vector<int> Pricer::pair_tp_collectives(const std::vector<Op>& ops, bool backward,
                                             std::vector<bool>& taken) const {
  const std::size_t n = ops.size();
  std::vector<int> partner(n, -1);
  for (std::size_t i = 0; i < n; ++i) {
    const auto* c = ops[i].comm();
    if (!c || c->group != Group::kTp || !ops[i].tp_overlappable) continue;
    // A recomputed forward inside the backward pass runs its collectives as the forward does.
    const bool backward_op = backward && ops[i].phase == workload::Phase::kBackward;
    if (!system_.tp_overlap && !(backward_op && system_.backward_tp_overlap)) continue;
    const bool look_back = !backward_op && c->kind == CollectiveOp::kReduceScatter;
    int j = -1;
    if (!look_back) {
      for (std::size_t k = i + 1; k < n && j < 0; ++k) {
        if (ops[k].comm()) break;
        if (is_gemm(ops[k]) && !taken[k]) j = static_cast<int>(k);
      }
    }
    if (j < 0) {
      for (std::size_t k = i; k-- > 0 && j < 0;) {
        if (ops[k].comm()) break;
        if (is_gemm(ops[k]) && !taken[k]) j = static_cast<int>(k);
      }
    }
    if (j >= 0) {
      partner[i] = j;
      taken[static_cast<std::size_t>(j)] = true;
    }
  }
  return partner;
}

Time Pricer::pass_time(const std::vector<Op>& ops, bool backward, PricingTally& tally,
                       Time& tp_exposed, Time& dp_exposed, ShardedTimeline* timeline) {
  const std::size_t n = ops.size();
  std::vector<Time> cost(n);
  for (std::size_t i = 0; i < n; ++i) {
    const Op& op = ops[i];
    if (const auto* shape = op.kernel()) {
      hw::KernelShape k = *shape;
      if (auto* a = std::get_if<hw::AttentionShape>(&k)) {
        a->flash_version = system_.attention_kernel() == AttentionKernel::kFlashV1 ? 1 : 2;
      }
      const hw::KernelCost kc = kernels_.cost(k);
      cost[i] = kc.time;
      tally.priced += kc.time;
      if (kc.source == hw::CostSource::kMeasured) tally.measured += kc.time;
      if (std::holds_alternative<hw::GemmShape>(k))
        tally.gemm += kc.time;
      else if (std::holds_alternative<hw::AttentionShape>(k))
        tally.attention += kc.time;
      else
        tally.memory_bound += kc.time;
    } else {
      const workload::CommOp& c = *op.comm();
      cost[i] = c.group == Group::kTp ? tp_time(c) : dp_time(c, plan_.micro_batches());
    }
    if (op.pipe_engine) tally.pipe_engine += cost[i];
  }
  std::vector<bool> taken(n, false);
  const std::vector<int> partner = pair_tp_collectives(ops, backward, taken);
  // Each op's share of the pass: a paired collective carries its GEMM's time.
  std::vector<Time> share(n);
  bool sharded = false;
  for (std::size_t i = 0; i < n; ++i) {
    if (taken[i]) continue;  // counted with its collective
    if (partner[i] < 0) {
      share[i] = cost[i];
      // Exposed model-parallel exchanges inside a layer: TP, and CP's unless overlapped below.
      if (ops[i].comm() && (ops[i].comm()->group == Group::kTp ||
                             ops[i].comm()->group == Group::kCp)) {
        tp_exposed += cost[i];
      }
      if (ops[i].comm() && is_sharded_dp(ops[i].comm()->group)) sharded = true;
      continue;
    }
    const auto j = static_cast<std::size_t>(partner[i]);
    const Time g = cost[j];
    const Time c = cost[i];
    const Time pair = overlapped_pair(ops[i], ops[j], g, c);
    share[i] = pair;
    tp_exposed += pair - g;
    tally.tp_hidden += std::max(Time::zero(), c - (pair - g));
  }
  if (system_.cp_overlap && plan_.cp > 1) overlap_context_exchange(ops, cost, share, tp_exposed);
  tally.tp_exposed += tp_exposed;
  if (sharded) return sharded_time(ops, share, taken, tally, dp_exposed, timeline);
  Time total;
  for (std::size_t i = 0; i < n; ++i) total += share[i];
  return total;
}

Time Pricer::overlapped_pair(const Op& comm, const Op& gemm, Time g, Time c) const {
  const SystemOptions::TpDecomposition& d = system_.tp_decomposition;
  // TE's userbuffers run with --tp-comm-overlap, sequence-parallel all-gathers and
  // reduce-scatters of the layers' own modules only.
  if (!d.enabled || !system_.tp_overlap || comm.layer < 0 ||
      comm.comm()->kind == CollectiveOp::kAllReduce) {
    // Whole: the GEMM slowed by the collective's kernels, the collective pipelined in tp chunks.
    const Time slowed = g * interference_;
    return std::max(slowed, c) + Time::from_ns(std::min(slowed, c).ns() / plan_.tp);
  }
  const hw::GemmShape& shape = std::get<hw::GemmShape>(*gemm.kernel());
  const std::int64_t sms = kernels_.profile().sm_count;
  if (!comm.tp_feeds_gemm) {  // bulk: side by side, on SMs split between them
    return std::max(kernels_.gemm_on_sms(shape, sms - d.bulk_comm_sms).time, c);
  }
  const bool ring = comm.comm()->kind == CollectiveOp::kAllGather;
  const int pieces = ring ? plan_.tp : d.pipeline_splits;
  hw::GemmShape piece = shape;
  piece.m = (shape.m + pieces - 1) / pieces;
  const Time pieces_time =
      ring ? kernels_.gemm(piece).time * pieces * interference_
           : kernels_.gemm_on_sms(piece, sms - d.pipeline_comm_sms).time * pieces;
  return std::max(pieces_time, c) + Time::from_ns(std::min(pieces_time, c).ns() / pieces);
}

StageCosts Pricer::price(const workload::StageProgram& stage, PricingTally& tally) {
  tally_ = &tally;
  stage_ = stage.stage;
  StageCosts c;
  const int s = stage.stage;
  const bool split = plan_.schedule == workload::Schedule::kZeroBubble;
  // A sharded pass's timeline, kept where the trace wants it.
  const auto keep = [this](std::vector<ShardedTimeline>& kept) -> ShardedTimeline* {
    return keep_timelines_ ? &kept.emplace_back() : nullptr;
  };
  for (const auto& chunk : stage.chunks) {
    Time tp, dp;
    c.forward.push_back(pass_time(chunk.forward, false, tally, tp, dp, keep(c.forward_timeline)));
    c.forward_tp.push_back(tp);
    c.forward_dp.push_back(dp);
    std::vector<Op> b, w;
    if (split) {
      for (const Op& op : chunk.backward) (is_weight_grad(op) ? w : b).push_back(op);
    }
    tp = dp = Time::zero();
    c.backward.push_back(
        pass_time(split ? b : chunk.backward, true, tally, tp, dp, keep(c.backward_timeline)));
    c.backward_tp.push_back(tp);
    c.backward_dp.push_back(dp);
    tp = dp = Time::zero();
    ShardedTimeline* w_timeline = keep(c.weight_grad_timeline);
    c.weight_grad.push_back(split ? pass_time(w, true, tally, tp, dp, w_timeline) : Time::zero());
    c.weight_grad_tp.push_back(tp);
    c.weight_grad_dp.push_back(dp);
  }
  if (plan_.pp > 1) {
    c.pp_activation = pp_time(stage.pp_send_bytes, s, (s + 1) % plan_.pp);
    c.pp_gradient = pp_time(stage.pp_send_bytes, s, (s + plan_.pp - 1) % plan_.pp);
    c.pp_message = stage.pp_send_bytes;
  }
  Time grads, params;
  double grad_bytes = 0.0, param_bytes = 0.0;
  int dp_buckets = 0;
  for (const Op& op : stage.dp_gradient_comm) {
    grads += dp_time(*op.comm(), 1, true);
    grad_bytes += op.comm()->size.value();
    if (op.comm()->group == Group::kDp) ++dp_buckets;
  }
  for (const Op& op : stage.dp_param_comm) {
    params += dp_time(*op.comm(), 1, true);
    param_bytes += op.comm()->size.value();
  }
  for (const double share : chunk_shares(stage)) {
    c.dp_reduce_scatter.push_back(grads * share);
    c.dp_all_gather.push_back(params * share);
    c.dp_reduce_scatter_bytes.push_back(Bytes(grad_bytes * share));
    c.dp_all_gather_bytes.push_back(Bytes(param_bytes * share));
    // Overlapped bucket by bucket: the chunk's share of the stage's DP buckets (as traffic()
    // splits them); else the chunk's collectives go out as one.
    const int workload_buckets = std::max(1, static_cast<int>(std::lround(dp_buckets * share)));
    c.dp_buckets.push_back(system_.dp_overlap && system_.dp_bucket_overlap ? workload_buckets : 1);
    c.dp_reduce_buckets.push_back(system_.dp_overlap && plan_.zero2 ? workload_buckets
                                                                    : c.dp_buckets.back());
  }
  for (const Op& op : stage.optimizer) {
    const hw::KernelCost kc = kernels_.cost(*op.kernel());
    c.optimizer += kc.time;
  }
  tally_ = nullptr;
  return c;
}

std::vector<double> Pricer::chunk_shares(const workload::StageProgram& stage) {
  std::int64_t stage_parameters = 0;
  for (const auto& chunk : stage.chunks) stage_parameters += chunk.parameters;
  std::vector<double> shares;
  for (const auto& chunk : stage.chunks) {
    shares.push_back(stage_parameters > 0 ? static_cast<double>(chunk.parameters) /
                                                static_cast<double>(stage_parameters)
                                          : 1.0 / static_cast<double>(stage.chunks.size()));
  }
  return shares;
}

StageTraffic Pricer::traffic(const workload::StageProgram& stage) {
  assert(tally_ == nullptr);  // prices read here are already in the stage's tally
  StageTraffic t;
  const workload::CommOp pp{hw::CollectiveOp::kSendRecv, Group::kPp, stage.pp_send_bytes};
  // Priced from a table only where both of the stage's hand-offs (to the next stage and back
  // to the one before) have one of their shape; else both run on the network.
  const int s = stage.stage;
  t.pp_on_network = plan_.pp > 1 && (!measured(pp, 2, pp_nodes(s, (s + 1) % plan_.pp)) ||
                                     !measured(pp, 2, pp_nodes(s, (s + plan_.pp - 1) % plan_.pp)));
  t.pp_bytes = stage.pp_send_bytes;
  // A chunk's DP collectives: its share of the stage's buckets' bytes, in buckets of the same
  // size (at least one), so the step issues about as many calls as the stage has buckets.
  auto parts = [&](const std::vector<Op>& ops, double share) {
    std::vector<DpPart> out;
    double bucket_bytes = 0.0;
    int buckets = 0;
    DpPart bucket;
    for (const Op& op : ops) {
      const workload::CommOp& c = *op.comm();
      if (c.group == Group::kDp && plan_.dp_cp() == 1) continue;  // nothing to send
      DpPart p;
      p.on_network = c.group == Group::kDp && !measured(c, plan_.dp_cp(), dp_nodes_);
      p.op = c.kind;
      if (p.on_network) {
        bucket_bytes += c.size.value();
        ++buckets;
        bucket = p;
        continue;
      }
      p.priced = Time::from_seconds(dp_time(c).to_seconds() * share);
      out.push_back(p);
    }
    if (buckets > 0) {
      const int n = std::max(1, static_cast<int>(std::lround(buckets * share)));
      bucket.bytes = Bytes(bucket_bytes * share / n);
      out.insert(out.begin(), static_cast<std::size_t>(n), bucket);
    }
    return out;
  };
  for (const double share : chunk_shares(stage)) {
    t.reduce_scatter.push_back(parts(stage.dp_gradient_comm, share));
    t.all_gather.push_back(parts(stage.dp_param_comm, share));
  }
  return t;
}

}  // namespace megasim::step
