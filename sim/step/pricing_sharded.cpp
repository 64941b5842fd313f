// The Pricer's ZeRO-3 / FSDP part: a pass whose layers gather their parameters and scatter
// their gradients on the DP communicator (sharded_pass.h), and the framework's own costs
// around each of those collectives (SystemOptions::Sharding).
#include "step/pricing.h"
#include "step/sharded_pass.h"

namespace megasim::step {

using hw::CollectiveOp;
using workload::Group;
using workload::Op;

bool is_sharded_dp(Group g) { return g == Group::kDp || g == Group::kDpShard; }

Time Pricer::sharded_time(const std::vector<Op>& ops, const std::vector<Time>& share,
                          const std::vector<bool>& taken, PricingTally& tally, Time& dp_exposed) {
  // ZeRO-3 / FSDP: the layer's all-gathers and reduce-scatters on the DP communicator,
  // overlapped with compute as the system's framework does it.
  using Kind = ShardedSegment::Kind;
  std::vector<ShardedSegment> segments;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (taken[i]) continue;
    const workload::CommOp* c = ops[i].comm();
    const Kind kind = c == nullptr || !is_sharded_dp(c->group) ? Kind::kCompute
                      : c->kind == CollectiveOp::kReduceScatter ? Kind::kScatter
                                                                : Kind::kGather;
    if (segments.empty() || segments.back().kind != kind) {
      segments.push_back({kind, Time::zero(), Time::zero(), Time::zero()});
    }
    segments.back().time += share[i];
    if (kind != Kind::kCompute && system_.sharding.per_rank_copies) {
      segments.back().time += per_rank_copies(*c);
    }
    if (kind == Kind::kGather && system_.sharding.zeroed_gather_buffer) {
      segments.back().time += zero_fill(*c);
    }
    if (kind == Kind::kGather) segments.back().host += system_.sharding.gather_host;
  }
  const ShardedPassTime t = sharded_pass_time(segments, system_.sharding.prefetch_layers,
                                              system_.sharding.blocking_reduce);
  dp_exposed += t.dp_exposed;
  tally.dp_hidden += t.dp_hidden;
  return t.total;
}

Time Pricer::zero_fill(const workload::CommOp& c) const {
  // torch.zeros(gathered size): one fill kernel writing the whole output once, on the stream
  // the collective then runs on.
  hw::MemoryShape fill{hw::MemoryKernel::kCopy, Bytes(0.0), c.size, Flops(0.0)};
  return kernels_.cost(hw::KernelShape{fill}).time;
}

}  // namespace megasim::step
