// The Pricer's ZeRO-3 / FSDP part: a pass whose layers gather their parameters and scatter
// their gradients on the DP communicator (sharded_pass.h), and the framework's own costs
// around each of those collectives (SystemOptions::Sharding).
#include <algorithm>

#include "step/pricing.h"
#include "step/sharded_pass.h"

namespace megasim::step {

using hw::CollectiveOp;
using workload::Group;
using workload::Op;

bool is_sharded_dp(Group g) { return g == Group::kDp || g == Group::kDpShard; }

Time Pricer::sharded_time(const std::vector<Op>& ops, const std::vector<Time>& share,
                          const std::vector<bool>& taken, PricingTally& tally, Time& dp_exposed,
                          ShardedTimeline* timeline) {
  // ZeRO-3 / FSDP: the layer's all-gathers and reduce-scatters on the DP communicator,
  // overlapped with compute as the system's framework does it.
  using Kind = ShardedSegment::Kind;
  std::vector<ShardedSegment> segments;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (taken[i]) continue;
    const workload::CommOp* c = ops[i].comm();
    // A hybrid shard's replica all-reduce follows its reduce-scatter on the same stream: a
    // reduction of the scatter's, with no per-rank work of its own.
    const bool replica = c != nullptr && c->group == Group::kDpReplica;
    const Kind kind = c == nullptr || !(is_sharded_dp(c->group) || replica) ? Kind::kCompute
                      : c->kind == CollectiveOp::kReduceScatter || replica  ? Kind::kScatter
                                                                            : Kind::kGather;
    if (segments.empty() || segments.back().kind != kind) {
      segments.emplace_back();
      segments.back().kind = kind;
      if (kind != Kind::kCompute) {
        segments.back().layer = ops[i].layer;
        segments.back().work = kind == Kind::kScatter                ? DpWork::kReduceScatter
                               : c->kind == CollectiveOp::kAllReduce ? DpWork::kAllReduce
                                                                     : DpWork::kAllGather;
      }
    }
    ShardedSegment one;  // this op alone
    one.kind = kind;
    one.time = share[i];
    const bool framework_work = kind != Kind::kCompute && !replica;
    const Time copies =
        framework_work && system_.sharding.per_rank_copies ? per_rank_copies(*c) : Time::zero();
    one.time += copies;
    if (kind == Kind::kGather && system_.sharding.zeroed_gather_buffer) one.time += zero_fill(*c);
    if (framework_work) add_host(*c, copies, one);
    ShardedSegment& s = segments.back();
    // An exchange inside the pass (TP, CP), or a GEMM's share priced with its TP collective
    // (slowed there already): compute the DP line does not slow again.
    if (kind == Kind::kCompute && c != nullptr) s.shielded += one.time;
    s.time += one.time;
    s.host += one.host;
    s.host_tail += one.host_tail;
    if (kind != Kind::kCompute) s.bytes += c->size;
    if (kind == Kind::kScatter) {
      // Apart, its collective and its copies, which the bucket's timing places on the line.
      const Time loop = replica ? Time::zero() : scatter_loop(*c);
      s.tensors.push_back(
          {share[i], one.host, c->elements, loop, copies, Time::zero(), Time::zero(), c->size});
      if (system_.sharding.contiguous_gradients && !replica)
        reduce_buffer_work(*c, s.tensors.back());
    }
  }
  const ShardedPassTime t =
      sharded_pass_time(segments, system_.sharding.prefetch_layers,
                        system_.sharding.blocking_reduce, system_.sharding.reduce_bucket_elements,
                        interference_, system_.sharding.fetch_waits_device, timeline);
  dp_exposed += t.dp_exposed;
  tally.dp_hidden += t.dp_hidden;
  return t.total;
}

void Pricer::add_host(const workload::CommOp& c, Time copies, ShardedSegment& s) const {
  // The host's issue of one collective: for a gather, the measured time less its per-rank part
  // on the group it was measured on, then the framework's per-rank views before the call and
  // the library's per-rank copies after the launch; for a scatter, all of its per-rank work
  // before the launch (SystemOptions::Sharding::HostPerRank). A scatter's copies into the flat
  // buffer (`copies`, device time already in s.time) run on the device as the host issues
  // them, so as much of them as the host's loop lasts is not added again after it.
  const SystemOptions::Sharding& z = system_.sharding;
  const int ranks = sharded_ranks(c);
  const int per_rank = ranks < 2 ? 0 : ranks;  // no collective, no per-rank tensors
  if (s.kind == ShardedSegment::Kind::kGather) {
    s.host += z.gather_fixed_host() + z.host_per_rank.framework(z.host_per_rank.gather) * per_rank;
    s.host_tail += z.host_per_rank.library(z.host_per_rank.gather) * per_rank;
  } else {
    const Time loop = scatter_loop(c);
    s.host += z.host_per_rank.framework(z.host_per_rank.scatter) * per_rank + loop;
    s.time -= std::min(loop, copies);
  }
}

Time Pricer::scatter_loop(const workload::CommOp& c) const {
  // The library's loop over the DP group copying each rank's input into the flat buffer.
  const SystemOptions::Sharding& z = system_.sharding;
  const int ranks = sharded_ranks(c);
  return ranks < 2 ? Time::zero() : z.host_per_rank.library(z.host_per_rank.scatter) * ranks;
}

void Pricer::reduce_buffer_work(const workload::CommOp& c, ShardedSegment::Tensor& t) const {
  // DeepSpeed's contiguous_gradients (stage3.py, v0.3.13-v0.3.16): a gradient no larger than
  // the bucket is copied into the reduce buffer (new_grad_tensor.copy_), a larger one is
  // reduced alone from where it is; average_tensor then divides the whole buffer, however full,
  // and that larger gradient by the DP size (tensor.div_) before the bucket's reduce-scatters.
  // Each pass reads and writes its bytes once.
  const std::int64_t bucket = system_.sharding.reduce_bucket_elements;
  if (bucket <= 0) return;  // no buffer (io::load_system_file refuses the key without one)
  const double elem = c.elements > 0 ? c.size.value() / static_cast<double>(c.elements) : 0.0;
  const Bytes buffer(elem * static_cast<double>(bucket));
  const bool alone = c.elements > bucket;
  if (!alone) t.stream_copy = copy_time(c.size, c.size);
  t.divide = copy_time(buffer, buffer) + (alone ? copy_time(c.size, c.size) : Time::zero());
}

Time Pricer::copy_time(Bytes read, Bytes written) const {
  const hw::MemoryShape copy{hw::MemoryKernel::kCopy, read, written, Flops(0.0)};
  return kernels_.cost(hw::KernelShape{copy}).time;
}

Time Pricer::zero_fill(const workload::CommOp& c) const {
  // torch.zeros(gathered size): one fill kernel writing the whole output once, on the stream
  // the collective then runs on.
  return copy_time(Bytes(0.0), c.size);
}

}  // namespace megasim::step
