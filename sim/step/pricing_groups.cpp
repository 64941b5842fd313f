// The Pricer's communicator groups (the rails their calls are issued on, where TP groups sit and
// their collectives' price) and the
// context-parallel exchange beside attention (a part of pricing.h's Pricer, kept apart from
// the pass and stage pricing).
#include <algorithm>
#include <set>
#include <variant>
#include <vector>

#include "step/pricing.h"

namespace megasim::step {
namespace {

using hw::CollectiveOp;
using workload::Group;
using workload::Op;

bool is_attention(const Op& op) {
  const auto* k = op.kernel();
  return k && std::holds_alternative<hw::AttentionShape>(*k);
}

bool is_cp(const Op& op) {
  return op.comm() && op.comm()->group == Group::kCp;
}

// Each context-parallel exchange's attention op: the one it feeds (the K/V all-gathers: the
// next attention op) or the one whose gradients it returns (the dK/dV reduce-scatter: the one
// before); -1 for every other op.
std::vector<int> cp_partners(const std::vector<Op>& ops) {
  std::vector<int> partner(ops.size(), -1);
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (!is_cp(ops[i])) continue;
    if (ops[i].comm()->kind == CollectiveOp::kReduceScatter) {
      for (std::size_t k = i; k-- > 0 && partner[i] < 0;) {
        if (is_attention(ops[k])) partner[i] = static_cast<int>(k);
      }
    } else {
      for (std::size_t k = i + 1; k < ops.size() && partner[i] < 0; ++k) {
        if (is_attention(ops[k])) partner[i] = static_cast<int>(k);
      }
    }
  }
  return partner;
}

}  // namespace

void Pricer::overlap_context_exchange(const std::vector<Op>& ops, const std::vector<Time>& cost,
                                     std::vector<Time>& share, Time& tp_exposed) const {
  // Transformer Engine's ring (AttnFuncWithCPAndKVP2P): the exchange goes in cp steps, each
  // beside the attention of the chunk already received, so a layer's attention a (slowed by
  // interference to a') and its exchanges c cost max(a', c) + min(a', c)/cp, as a TP
  // collective pipelined with its GEMM in tp chunks.
  const std::vector<int> partner = cp_partners(ops);
  std::vector<Time> exchange(ops.size());
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (partner[i] < 0) continue;
    exchange[static_cast<std::size_t>(partner[i])] += cost[i];
    tp_exposed -= share[i];  // counted as exposed above; now priced with its attention
    share[i] = Time::zero();
  }
  for (std::size_t j = 0; j < ops.size(); ++j) {
    if (exchange[j] == Time::zero()) continue;
    const Time slowed = cost[j] * interference_;
    const Time c = exchange[j];
    const Time pair = std::max(slowed, c) + Time::from_ns(std::min(slowed, c).ns() / plan_.cp);
    share[j] = pair;
    tp_exposed += pair - cost[j];
  }
}

int Pricer::rails() const {
  // TP rank t of every group sits on local GPU t of its node, whose NIC is rail t. Where the
  // rails share links their calls are all issued: GPUs that share a NIC, and NICs wired to
  // the rack's one ToR (every rail's traffic on the same uplinks). Rail-wired, each rail has
  // ToRs of its own and the rails meet only on the aggregation switches' uplinks (3 tiers):
  // one rail's calls stand for all (a representative rail), which leaves those uplinks
  // 1/tp of their load (README, Known limitations: +0.1-0.7 % on MegaScale's plans).
  // A TP size that does not divide the node puts a DP group's ranks on several rails.
  const net::ClusterSpec& spec = topology_.spec();
  const bool nic_per_gpu = spec.node.nics >= topology_.gpus_per_node();
  const int per_node = topology_.gpus_per_node();
  const bool tp_aligned = per_node % plan_.tp == 0 || plan_.tp % per_node == 0;
  return nic_per_gpu && tp_aligned && spec.fabric.wiring == net::Wiring::kRail ? 1 : plan_.tp;
}

int Pricer::gpu(int stage, int d, int t) const {
  return placement_[static_cast<std::size_t>(workload::RankIndex(plan_).linear(stage, d, t))];
}

std::vector<std::vector<int>> Pricer::dp_groups(Group g) const {
  // The DP indices of each communicator: all of DP (dp × cp ranks), the context-parallel groups
  // (cp consecutive indices), or, with a hybrid shard of `k` ranks, the shard groups
  // (consecutive indices) and the replica groups (every k-th).
  const int k = plan_.shard_ranks(), dp = plan_.dp_cp();
  std::vector<std::vector<int>> out;
  if (g == Group::kCp) {
    for (int r = 0; r < plan_.dp; ++r) {
      out.emplace_back();
      for (int i = 0; i < plan_.cp; ++i) out.back().push_back(r * plan_.cp + i);
    }
  } else if (g == Group::kDpShard) {
    for (int r = 0; r < dp / k; ++r) {
      out.emplace_back();
      for (int i = 0; i < k; ++i) out.back().push_back(r * k + i);
    }
  } else if (g == Group::kDpReplica) {
    for (int i = 0; i < k; ++i) {
      out.emplace_back();
      for (int r = 0; r < dp / k; ++r) out.back().push_back(r * k + i);
    }
  } else {
    out.emplace_back();
    for (int d = 0; d < dp; ++d) out.back().push_back(d);
  }
  return out;
}

int Pricer::sharded_ranks(const workload::CommOp& c) const {
  return c.group == Group::kDpShard ? plan_.shard_ranks() : plan_.dp_cp();
}

Time Pricer::per_rank_copies(const workload::CommOp& c) const {
  // One copy_ per rank of the DP group, each a kernel launch (the profile's gap between
  // back-to-back kernels) moving 1/dp of the buffer: together the whole buffer read and written.
  const int ranks = sharded_ranks(c);
  if (ranks < 2) return Time::zero();  // no collective, nothing to copy
  return copy_time(c.size, c.size) + kernels_.profile().memory_model.launch_overhead * (ranks - 1);
}

template <typename GpuOf>
int Pricer::nodes_spanned(int n, GpuOf gpu_of) const {
  std::set<int> nodes;
  for (int i = 0; i < n; ++i) nodes.insert(topology_.node_of(gpu_of(i)));
  return static_cast<int>(nodes.size());
}

int Pricer::dp_group_nodes() const {
  // Stage 0's and TP rank 0's communicator: placements are symmetric.
  return nodes_spanned(plan_.dp_cp(), [&](int d) { return gpu(0, d, 0); });
}

int Pricer::pp_nodes(int from, int to) const {
  // A hand-off inside a node crosses NVLink: a table measured across two nodes is not its.
  return nodes_spanned(2, [&](int i) { return gpu(i == 0 ? from : to, 0, 0); });
}

std::vector<int> Pricer::tp_group_nodes() const {
  std::vector<int> most(static_cast<std::size_t>(plan_.pp), 1);
  for (int s = 0; s < plan_.pp; ++s) {
    for (int d = 0; d < plan_.dp_cp(); ++d) {
      const int nodes = nodes_spanned(plan_.tp, [&](int t) { return gpu(s, d, t); });
      most[static_cast<std::size_t>(s)] = std::max(most[static_cast<std::size_t>(s)], nodes);
    }
  }
  return most;
}

Time Pricer::tp_time(const workload::CommOp& c) {
  // A TP collective runs once per micro-batch.
  const std::int64_t m = plan_.micro_batches();
  const int nodes = tp_nodes_[static_cast<std::size_t>(stage_)];
  if (auto t = measured(c, plan_.tp, nodes)) return tally_comm(*t, true, m);
  return tally_comm(tp_time_simulated(c), false, m);
}

// The stage's TP groups: where every one sits inside a node, the same on every stage.
Time Pricer::tp_time_simulated(const workload::CommOp& c) {
  const int nodes = tp_nodes_[static_cast<std::size_t>(stage_)];
  const int stage = nodes == 1 ? 0 : stage_;
  const auto key = std::make_tuple(0, static_cast<int>(c.kind), -1 - stage, c.size.value());
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  std::vector<collective::CollectiveCall> calls;
  // TP groups inside one node never share a link with another group: one suffices. A TP group
  // wider than a node, or one a TP size that does not divide the node splits (TP 6 on 8 GPUs),
  // crosses the fabric, where all of a stage's groups contend and the slowest ends the call.
  const int groups = nodes == 1 ? 1 : plan_.dp_cp();
  for (int d = 0; d < groups; ++d) {
    collective::CollectiveCall call;
    call.op = c.kind;
    call.bytes = c.size;
    call.tag = static_cast<std::uint64_t>(d);
    for (int t = 0; t < plan_.tp; ++t) call.gpus.push_back(gpu(stage, d, t));
    calls.push_back(std::move(call));
  }
  return cache_[key] = concurrent(calls);
}

}  // namespace megasim::step
