// The step executor's traffic on the network: PP messages and DP collectives issued as flows
// on the step's one flow solver, through the collective engine, so that whatever is in flight
// at the same simulated time shares the fabric (executor.h, "The network").
#include <cassert>
#include <memory>
#include <utility>

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
  sends_ = std::make_unique<ReplicaSends>(*engine_, *solver_, n, sched_.pp, cfg_.tp, cfg_.dp);
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

void Executor::run_dp(int s, DpOp op, std::size_t part, std::function<void()> done) {
  const StageCosts& c = costs_[s];
  if (!engine_) {
    sim_.after(op.all_gather ? c.dp_all_gather[op.chunk] : c.dp_reduce_scatter[op.chunk],
               std::move(done));
    return;
  }
  const ExecutorNetwork& n = *cfg_.network;
  const StageTraffic& traffic = n.stages[static_cast<std::size_t>(s)];
  const auto& parts = (op.all_gather ? traffic.all_gather : traffic.reduce_scatter)[op.chunk];
  if (part >= parts.size()) {
    sim_.after(Time::zero(), std::move(done));
    return;
  }
  std::function<void()> next =
      part + 1 == parts.size()
          ? std::move(done)
          : std::function<void()>([this, s, op, part, done = std::move(done)]() mutable {
              run_dp(s, op, part + 1, std::move(done));
            });
  const DpPart& p = parts[part];
  if (!p.on_network) {
    sim_.after(p.priced, std::move(next));
    return;
  }
  // Every DP group of the stage (one per issued rail) runs the collective at once. Its rings
  // cross every replica and take ECMP paths above the ToRs, so PP sends stop being lumped.
  auto each = after_all(n.rails, sends_->asymmetric(std::move(next)));
  for (int t = 0; t < n.rails; ++t) {
    collective::CollectiveCall call;
    call.op = p.op;
    call.bytes = p.bytes;
    call.tag = static_cast<std::uint64_t>(s * cfg_.tp + t);
    call.gpus.reserve(static_cast<std::size_t>(cfg_.dp));
    for (int d = 0; d < cfg_.dp; ++d) call.gpus.push_back(n.gpu(s, d, t));
    engine_->launch(call, each);
  }
}

}  // namespace megasim::step::detail
