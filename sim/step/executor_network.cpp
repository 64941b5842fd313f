// The step executor's traffic on the network: PP messages and DP collectives issued as flows
// on the step's one flow solver, through the collective engine, so that whatever is in flight
// at the same simulated time shares the fabric (executor.h, "The network").
#include <cassert>
#include <memory>
#include <tuple>
#include <utility>
#include <vector>

#include "engine/join.h"
#include "step/executor_internal.h"

namespace megasim::step::detail {
void Executor::init_network() {
  if (cfg_.network == nullptr || cfg_.network->topology == nullptr) return;
  const ExecutorNetwork& n = *cfg_.network;
  assert(static_cast<int>(n.stages.size()) == sched_.pp && n.constants && n.gpu);
  assert(n.rails >= 1 && n.rails <= cfg_.tp);
  solver_ = std::make_unique<net::FlowSolver>(sim_, *n.topology, net::Routing::kEcmp);
  solver_->set_local_updates(n.local_updates);
  engine_ = std::make_unique<collective::CollectiveEngine>(sim_, *n.topology, *solver_,
                                                           *n.constants);
  engine_->merge_identical_flows(true);
  engine_->use_coflows(n.coflows);
  if (!cfg_.full && n.coflows) {
    // Folded, every flow is a coflow over all replicas in lockstep: each replica's own links
    // carry what replica 0's carry, and replica 0's stand for them.
    std::vector<std::pair<int, int>> images;
    for (int s = 0; s < sched_.pp; ++s)
      for (int d = 0; d < cfg_.dp; ++d)
        for (int t = 0; t < cfg_.tp; ++t) images.emplace_back(n.gpu(s, d, t), n.gpu(s, 0, t));
    fold_ = net::LinkFold::build(*n.topology, images);
  }
  sends_ = std::make_unique<PpSends>(sim_, *engine_, n, sched_.pp, cfg_.tp, cfg_.dp,
                                     fold_ ? &*fold_ : nullptr);
}

void Executor::send_pp(int from, int to, std::function<void()> done) {
  const Unit& a = units_[from];
  const Unit& b = units_[to];
  // Folded: the representative's message stands for the same message of every DP replica.
  if (cfg_.full) {
    sends_->send_one(a.d, a.s, b.s, std::move(done));
  } else {
    sends_->send_all(a.s, b.s, std::move(done));
  }
}

std::vector<collective::CollectiveCall> Executor::dp_calls(int s, const DpPart& p) const {
  // Every DP group of the stage (one per issued rail) runs the collective at once.
  const ExecutorNetwork& n = *cfg_.network;
  std::vector<collective::CollectiveCall> calls(static_cast<std::size_t>(n.rails));
  for (int t = 0; t < n.rails; ++t) {
    collective::CollectiveCall& call = calls[static_cast<std::size_t>(t)];
    call.op = p.op;
    call.bytes = p.bytes;
    call.tag = static_cast<std::uint64_t>(s * cfg_.tp + t);
    call.gpus.reserve(static_cast<std::size_t>(cfg_.dp));
    for (int d = 0; d < cfg_.dp; ++d) call.gpus.push_back(n.gpu(s, d, t));
  }
  return calls;
}

const collective::CollectiveEngine::Coflow& Executor::dp_coflow(int s, const DpPart& p) {
  const auto key = std::make_tuple(s, static_cast<int>(p.op), p.bytes.value());
  auto it = dp_coflows_.find(key);
  if (it != dp_coflows_.end()) return it->second;
  auto c = engine_->coflow(dp_calls(s, p));
  if (fold_) fold_->apply(c.path);
  return dp_coflows_.emplace(key, std::move(c)).first->second;
}

void Executor::run_dp(int s, DpOp op, std::size_t part, std::function<void()> done) {
  const StageCosts& c = costs_[s];
  const double share = 1.0 / op.buckets;  // a bucket's share of the chunk's collective
  if (!engine_) {
    const Time whole = op.all_gather ? c.dp_all_gather[op.chunk] : c.dp_reduce_scatter[op.chunk];
    sim_.after(op.buckets == 1 ? whole : whole * share, std::move(done));
    return;
  }
  const ExecutorNetwork& n = *cfg_.network;
  const StageTraffic& traffic = n.stages[static_cast<std::size_t>(s)];
  const auto& parts = (op.all_gather ? traffic.all_gather : traffic.reduce_scatter)[op.chunk];
  // A bucket runs its share of the chunk's parts (the workload's buckets), the whole chunk all.
  const std::size_t b = static_cast<std::size_t>(op.bucket), nb = static_cast<std::size_t>(op.buckets);
  const std::size_t first = b * parts.size() / nb, last = (b + 1) * parts.size() / nb;
  part = std::max(part, first);
  if (part >= last) {
    sim_.after(Time::zero(), std::move(done));
    return;
  }
  std::function<void()> next =
      part + 1 == last
          ? std::move(done)
          : std::function<void()>([this, s, op, part, done = std::move(done)]() mutable {
              run_dp(s, op, part + 1, std::move(done));
            });
  const DpPart& p = parts[part];
  if (!p.on_network) {
    sim_.after(p.priced, std::move(next));
    return;
  }
  if (n.coflows) {
    const auto& c = dp_coflow(s, p);
    engine_->send_path(c.path, c.bytes, c.latency, std::move(next), c.max_rate);
    return;
  }
  engine_->launch_all(dp_calls(s, p), std::move(next));
}

}  // namespace megasim::step::detail
