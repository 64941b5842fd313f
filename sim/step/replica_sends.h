// The step executor's PP messages on the shared network (executor.h, "The network"), with
// their routes and NCCL latencies computed once per (stage pair, rail) rather than per message.
//
// Folded mode issues the message of every DP replica at one instant. While nothing on the
// solver breaks the replica symmetry, those replicas' flows are isomorphic and never meet:
// each replica's path is the image of replica 0's under a link map that is one-to-one, keeps
// capacity and weight, and sends different replicas to different links (checked once per
// stage pair and rail, against every pair checked before). Then every replica's flows form a
// copy of replica 0's system, max-min gives them replica 0's rates, and one flow on replica 0's
// path stands for all of them ("lumped"): exact, not an approximation, up to the rounding of
// the solver's sums. The symmetry holds while the solver carries only lumped flows; so before
// anything that may break it starts (a DP collective: rings over every replica, ECMP above the
// ToRs), every lumped flow in flight is cancelled and reissued as the per-replica flows it
// stands for, each with the bytes it has left, and no send is lumped again until the last
// asymmetric flow and expanded send has ended. A stage pair whose replicas fail the check
// (paths that share links, unequal capacities) switches lumping off for the rest of the step,
// after expanding what is in flight. Full mode issues one replica's message and never lumps.
//
// Not thread-safe; bound to the executor's simulator, solver and engine, which outlive it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "collective/collective_engine.h"
#include "engine/time.h"
#include "net/flow_solver.h"
#include "step/executor.h"

namespace megasim::step::detail {

class ReplicaSends {
 public:
  ReplicaSends(collective::CollectiveEngine& engine, net::FlowSolver& solver,
               const ExecutorNetwork& network, int pp, int tp, int dp);
  ReplicaSends(const ReplicaSends&) = delete;
  ReplicaSends& operator=(const ReplicaSends&) = delete;

  // Stage `from`'s message to stage `to` from every DP replica (folded), on every issued rail;
  // `done` after the slowest has arrived.
  void send_all(int from, int to, std::function<void()> done);
  // Replica d's message only (full mode).
  void send_one(int d, int from, int to, std::function<void()> done);
  // Wraps the `done` of traffic about to start that may break the replica symmetry: expands
  // every lumped send first, and keeps lumping off until the returned callback has run.
  std::function<void()> asymmetric(std::function<void()> done);

  std::uint64_t lumped_sends() const { return lumped_sends_; }
  std::uint64_t expanded_sends() const { return expanded_sends_; }

 private:
  struct Route {
    bool built = false;
    Bytes bytes;
    Time latency;
    std::vector<std::vector<net::Hop>> paths;  // per replica
  };
  struct Lumped {
    net::FlowId id;
    const Route* route = nullptr;
    std::function<void()> done;
  };
  const Route& route(int from, int to, int t);
  // Whether replica d's path is replica 0's under the link map built so far (extending it).
  bool isomorphic(int d, const std::vector<net::Hop>& p0, const std::vector<net::Hop>& pd);
  void lump(const Route& r, std::function<void()> done);
  void expand_all();
  void expand(Lumped& l);
  void issue_expanded(const Route& r, int first, int last, Bytes bytes, std::function<void()> done);
  bool may_lump() const { return symmetric_ && asymmetric_in_flight_ == 0 && expanded_in_flight_ == 0; }

  collective::CollectiveEngine& engine_;
  net::FlowSolver& solver_;
  const ExecutorNetwork& net_;
  int pp_, tp_, dp_;
  std::vector<Route> routes_;  // [(from · pp + to) · rails + t]
  // The replica link map: image_[d][link of replica 0], and which (replica, replica-0 link)
  // each mapped link is the image of.
  std::vector<std::unordered_map<net::LinkId, net::LinkId>> image_;
  std::unordered_map<net::LinkId, std::pair<int, net::LinkId>> preimage_;
  bool symmetric_;  // no replica pair has failed the check (and lumping is asked for)
  int asymmetric_in_flight_ = 0;
  int expanded_in_flight_ = 0;
  std::vector<std::shared_ptr<Lumped>> live_;
  std::size_t prune_at_ = 64;
  std::uint64_t lumped_sends_ = 0, expanded_sends_ = 0;
};

}  // namespace megasim::step::detail
