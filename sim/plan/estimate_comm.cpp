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
  const auto key = std::make_tuple(bytes, p.tp, p.pp, p.dp, p.cp, static_cast<int>(p.rank_order));
  if (auto it = pp_.find(key); it != pp_.end()) return it->second;
  // A stage's message to the next from every replica at once, as the executor sends it: on a
  // fabric the copies' ECMP paths collide above the ToRs, and the message ends with the
  // slowest copy. (Priced for one pair alone until 2026-12-05: 1.05 ms for a 24 MiB message at
  // 12,288 GPUs, PP 3, DP 512, where the executor's copies take 3.1-3.6 ms.) Stage 0's message
  // to stage 1 stands for every hop, the first stage's exchanges' own: where two stages share a
  // node (TP 4 on 8-GPU nodes at DP 1) the hops that leave it are priced as NVLink's in the
  // schedule. Priced as the first hop that leaves its node instead, Korthikanti's 175B search
  // on 64 GPUs ranked TP 8 first (13.77 s estimated, 13.61 event by event) over TP 4 × PP 16
  // (13.86 estimated, 13.35 event by event; 13.25 estimated as now): tried on 2026-12-05, not kept.
  step::Pricer pricer(topology_, job_placement(inputs_.scenario.placement, topology_, p),
                      inputs_.collective, kernels_, p, c.system);
  return pp_[key] = sec(pricer.pp_message_time(Bytes(bytes), 0, 1));
}

double AnalyticEstimator::dp_seconds(hw::CollectiveOp op, double bytes,
                                     const workload::ParallelPlan& p) {
  if (p.dp_cp() <= 1 || bytes <= 0) return 0.0;
  const auto key = std::make_tuple(static_cast<int>(op), bytes, p.tp, p.pp, p.dp, p.cp,
                                   static_cast<int>(p.rank_order));
  if (auto it = dp_.find(key); it != dp_.end()) return it->second;
  // Stage 0's DP group of TP rank 0, packed (GPU = the rank's place in its rank order).
  collective::CollectiveCall call;
  call.op = op;
  call.bytes = Bytes(bytes);
  for (int d = 0; d < p.dp_cp(); ++d) {
    call.gpus.push_back(static_cast<int>(workload::placement_slot(p, 0, d, 0)));
  }
  const collective::NcclModel model(topology_, inputs_.collective);
  const collective::CommShape shape = collective::comm_shape(topology_, call.gpus);
  const auto [algorithm, protocol] = model.choose(call, shape);
  return dp_[key] = sec(model.cost(call, shape, algorithm, protocol).time);
}

AnalyticEstimator::Pipeline AnalyticEstimator::pipeline_seconds(const Candidate& c,
                                                                const LayerPrices& lp, double f,
                                                                double b) {
  // The schedule with the critical stage's passes on every stage and each PP send's time
  // between them.
  double hop = 0.0;
  const double blocking = pp_exposure(c, lp, hop);
  const double makespan = schedule_seconds(c.plan, f, b, hop);
  // Asynchronous sends: what they add to the makespan is their exposed time, the rest bubble.
  const double waits = c.system.pp_overlap && hop > 0.0
                           ? std::max(0.0, makespan - schedule_seconds(c.plan, f, b, 0.0))
                           : 0.0;
  return {makespan - waits, blocking + waits};
}

double AnalyticEstimator::pp_exposure(const Candidate& c, const LayerPrices& lp, double& hop) {
  const workload::ParallelPlan& p = c.plan;
  const double m = static_cast<double>(p.micro_batches());
  const double vpp = p.vpp;
  hop = 0.0;
  if (p.pp == 1) return 0.0;
  // Stage 0's GPUs to stage 1's, where the placement puts them (NVLink inside a node).
  const double t = pp_message_seconds(lp.pp_bytes, c);
  if (!c.system.pp_overlap) {
    // Megatron-LM's exchanges on the first stage (step::blocking_p2p_program): interleaved,
    // one after each of its warm-up forwards, steady-state pairs and cool-down backwards, each
    // sending and receiving an activation and a gradient; 1F1B, two per micro-batch, each one
    // message each way. Each ends with the host synchronisation.
    const double exchanges =
        p.vpp > 1 ? m * vpp + std::min(m * vpp, 2.0 * (p.pp - 1) + (vpp - 1) * p.pp) + 1 : 2.0 * m;
    const double messages = p.vpp > 1 ? 2.0 : 1.0;
    hop = messages * t + sec(c.system.blocking_p2p_overhead);
    return exchanges * hop;
  }
  // Asynchronous sends expose only what they delay on the schedule's dependencies, which the
  // makespan prices (estimate()). Until 2026-12-05 a send per forward and backward pass,
  // 2·m·vpp·t, was added on top of the makespan: it stood in for the fabric's collisions, which
  // the send's price now holds (12,288 GPUs: Spearman 0.860 → 0.963 over the top 200).
  hop = t;
  return 0.0;
}

}  // namespace megasim::plan
