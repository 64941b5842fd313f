// AnalyticEstimator's prices of communication outside the probe: the PP message between two
// stages, a DP collective and a two-rank exchange, and the PP time the schedule exposes.
#include <algorithm>
#include <vector>

#include "collective/nccl_model.h"
#include "plan/assembly.h"
#include "plan/estimate.h"
#include "workload/rank_index.h"

namespace megasim::plan {
namespace {

double sec(Time t) {
  return t.to_seconds();
}

// How many of a pipeline's stage boundaries a PP message's price is the mean of.
constexpr int kPpHopsSampled = 4;

}  // namespace

double AnalyticEstimator::pair_seconds(double bytes, bool same_node) {
  const auto key = std::make_pair(bytes, same_node);
  if (auto it = pair_.find(key); it != pair_.end()) return it->second;
  const int g = topology_.gpus_per_node();
  collective::CollectiveCall call;
  call.op = hw::CollectiveOp::kSendRecv;
  call.bytes = Bytes(bytes);
  call.gpus = {0, same_node || topology_.gpus() <= g ? 1 % topology_.gpus() : g};
  const collective::NcclModel model(topology_, inputs_.collective);
  const collective::CommShape shape = collective::comm_shape(topology_, call.gpus);
  const auto [algorithm, protocol] = model.choose(call, shape);
  return pair_[key] = sec(model.cost(call, shape, algorithm, protocol).time);
}

double AnalyticEstimator::pp_message_seconds(double bytes, const Candidate& c) {
  const workload::ParallelPlan& p = c.plan;
  const auto key =
      std::make_tuple(bytes, p.tp, p.pp, p.dp, p.cp, static_cast<int>(p.rank_order), p.vpp > 1);
  if (auto it = pp_.find(key); it != pp_.end()) return it->second;
  // A stage's message to the next from every replica at once, as the executor sends it: on a
  // fabric the copies' ECMP paths collide above the ToRs, and the message ends with the
  // slowest copy. (Priced for one pair alone until 2026-12-05: 1.05 ms for a 24 MiB message at
  // 12,288 GPUs, PP 3, DP 512, where the executor's copies take 3.1-3.6 ms.) Each boundary
  // between stages collides differently, and each direction: SC'21's 18.4B at TP 2, PP 4, VPP
  // 10 on 256 GPUs sends in 1.5 ms from stage 0 to 1 and in 5.1 ms from 1 to 2. The price is
  // the mean of both directions over up to kPpHopsSampled boundaries spread along the
  // pipeline (the wrap from the last stage to the first included where the schedule
  // interleaves), NVLink's where two stages share a node. Stage 0 to 1 stood for every hop
  // until the thirty-eighth session (2026-12-05): that search's Spearman over the top 200 went
  // 0.911 -> 0.974 (with the blocking exchanges' lock-step, pipeline_seconds), Megatron-Core's
  // 70B on 768 H100 0.877 -> 0.968. Every boundary rather than four: 39.1B's 0.941 -> 0.966,
  // the others within 0.01, and the 12,288-GPU search 1.9 times slower. (Priced as the first hop
  // that leaves its node, tried on 2026-12-05, Korthikanti's 175B search on 64 GPUs ranked TP 8
  // first over TP 4 x PP 16: not kept.)
  step::Pricer pricer(topology_, job_placement(inputs_.scenario.placement, topology_, p),
                      inputs_.collective, kernels_, p, c.system);
  double sum = 0.0;
  int hops = 0;
  const int boundaries = p.vpp > 1 ? p.pp : p.pp - 1;
  const int sampled = std::min(boundaries, kPpHopsSampled);
  for (int i = 0; i < sampled; ++i) {
    const int s = i * boundaries / sampled;
    const int next = (s + 1) % p.pp;
    sum += sec(pricer.pp_message_time(Bytes(bytes), s, next)) +
           sec(pricer.pp_message_time(Bytes(bytes), next, s));
    hops += 2;
  }
  return pp_[key] = sum / hops;
}

double AnalyticEstimator::dp_seconds(hw::CollectiveOp op, double bytes, const Candidate& c) {
  const workload::ParallelPlan& p = c.plan;
  if (p.dp_cp() <= 1 || bytes <= 0) return 0.0;
  const auto key = std::make_tuple(static_cast<int>(op), bytes, p.tp, p.pp, p.dp, p.cp,
                                   static_cast<int>(p.rank_order));
  if (auto it = dp_.find(key); it != dp_.end()) return it->second;
  // Every DP group of every stage at once, as the event level's groups meet on the fabric at
  // the end of the backward: on an oversubscribed fabric their rings share the tiers above the
  // ToRs. (Stage 0's group of TP rank 0 alone until 2026-12-08: on the Llama 3 fabric at
  // 24,576 H100s, TP 8 × PP 4 × DP 768, 3.82 s estimated where the event level ran 5.70 s, and
  // search ranked it first.)
  step::Pricer pricer(topology_, job_placement(inputs_.scenario.placement, topology_, p),
                      inputs_.collective, kernels_, p, c.system);
  pricer.set_coflows(true);
  return dp_[key] = sec(pricer.dp_collective_time(op, Bytes(bytes)));
}

AnalyticEstimator::Pipeline AnalyticEstimator::pipeline_seconds(const Candidate& c,
                                                                const LayerPrices& lp, double f,
                                                                double b) {
  // The schedule with the critical stage's passes on every stage; what the PP sends add to its
  // makespan is their exposed time.
  const workload::ParallelPlan& p = c.plan;
  const double passes = schedule_seconds(p, f, b, 0.0);
  if (p.pp == 1) return {passes, 0.0};
  // Stage 0's GPUs to stage 1's, where the placement puts them (NVLink inside a node).
  const double t = pp_message_seconds(lp.pp_bytes, c);
  if (c.system.pp_overlap) {
    // Asynchronous sends delay only the schedule's dependencies between stages.
    return {passes, std::max(0.0, schedule_seconds(p, f, b, t) - passes)};
  }
  // Megatron-LM's blocking exchanges (step::blocking_p2p_program), run as the executor runs
  // them: a stage waits in each for its neighbour to post the matching one, and every exchange
  // ends with the host synchronisation. Until 2026-12-05 the first stage's exchanges were
  // counted (m·vpp + the warm-up's, each two messages) on top of a makespan that carried a
  // message on every dependency, which charged the warm-up's sends twice and the lock-step
  // waits not at all: SC'21's 39.1B search on 512 GPUs, Spearman 0.790 over the top 200 (0.941
  // now, with the mean price above).
  const Blocking blocking{sec(c.system.blocking_p2p_overhead)};
  return {passes, std::max(0.0, schedule_seconds(p, f, b, t, &blocking) - passes)};
}

}  // namespace megasim::plan
