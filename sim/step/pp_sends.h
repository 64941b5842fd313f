// The step executor's PP messages on the shared network (executor.h, "The network"), with
// their routes and NCCL latencies computed once per (stage pair, rail, replica) rather than
// per message.
//
// Folded mode stands one pipeline for every DP replica, all in lockstep; so a message of the
// representative is the same message of every replica on every issued rail, and with coflows
// on (ExecutorNetwork::coflows) it is issued as one coflow over all their paths
// (FlowSolver::start_path_flow): the copies move together and the representative's message
// ends when the slowest copy would. When the copies meet the same load (a symmetric plan) that
// is exactly what separate flows give; when ECMP or a DP ring loads some replicas' links more,
// the lighter copies end with the slowest rather than before it, which is what the folded
// representative assumes anyway. Full mode issues replica d's message as one coflow over its
// rails, joined with the same message of every replica that sends it at the same instant
// (replicas in step with each other stay so, as folded mode assumes; a replica that has
// fallen behind, a straggler's, sends alone). With coflows off, every (replica, rail) message
// is a flow of its own: the reference the tests compare with.
//
// Not thread-safe; bound to the executor's engine, which outlives it.
#pragma once

#include <cstddef>
#include <functional>
#include <unordered_map>
#include <vector>

#include "collective/collective_engine.h"
#include "engine/simulator.h"
#include "engine/time.h"
#include "net/link_fold.h"
#include "net/topology.h"
#include "step/executor.h"

namespace megasim::step::detail {

class PpSends {
 public:
  // `fold`, optional: the quotient the folded coflows are issued on (net/link_fold.h).
  PpSends(Simulator& sim, collective::CollectiveEngine& engine, const ExecutorNetwork& network,
          int pp, int tp, int dp, const net::LinkFold* fold);
  PpSends(const PpSends&) = delete;
  PpSends& operator=(const PpSends&) = delete;

  // Stage `from`'s message to stage `to` from every DP replica (folded); `done` after the
  // slowest copy has arrived.
  void send_all(int from, int to, std::function<void()> done);
  // Replica d's message only (full mode).
  void send_one(int d, int from, int to, std::function<void()> done);

 private:
  struct Route {
    bool built = false;
    Bytes bytes;
    Time latency;                                // the largest of the copies'
    std::vector<std::vector<net::Hop>> apart;    // [d · rails + t]: one copy's path
    std::vector<std::vector<net::Hop>> replica;  // [d]: replica d's copies joined
    std::vector<net::Hop> all;                   // every copy joined
  };
  // A message's key: stage `from` to stage `to`.
  std::size_t key(int from, int to) const;
  const Route& route(int from, int to);
  void send(const std::vector<net::Hop>* paths, std::size_t n, const Route& r,
            std::function<void()> done);
  // Full mode: the replicas that asked for message `key` at this instant, as one coflow.
  void flush(std::size_t k);

  struct Batch {
    std::vector<int> replicas;
    std::vector<std::function<void()>> done;
  };
  Simulator& sim_;
  collective::CollectiveEngine& engine_;
  const ExecutorNetwork& net_;
  const net::LinkFold* fold_;
  int pp_, tp_, dp_;
  // By key(from, to), built as the schedule first sends each: a stage sends to its neighbours
  // alone, so a table of every pair (pp² routes) overflowed at PP 65,536 and took gigabytes
  // from PP 4,096 until 2026-12-06 (a user's trial). Looked up by key, never walked in order.
  std::unordered_map<std::size_t, Route> routes_;
  std::unordered_map<std::size_t, Batch> batches_;  // full mode, this instant's sends
};

}  // namespace megasim::step::detail
