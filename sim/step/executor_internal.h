// Internal to the step executor, shared by its three sources: executor.cpp (the compute and
// DP streams, the step's phases), executor_pp.cpp (pipeline communication: the PP stream
// beside compute, or Megatron-LM's blocking exchanges) and executor_network.cpp (PP and DP
// traffic as flows on the step's shared solver). The state of one simulated unit and the
// Executor that drives every unit on the engine. Not part of the module's interface: only
// those files include it.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "collective/collective_engine.h"
#include "engine/simulator.h"
#include "net/flow_solver.h"
#include "net/link_fold.h"
#include "step/executor.h"
#include "step/pipeline_schedule.h"
#include "step/pp_sends.h"
#include "workload/rank_index.h"

namespace megasim::step::detail {

constexpr std::int64_t kUnknown = -1;

enum class Wait { kNone, kProducer, kAllGather, kDp, kExchange };

// One blocking message, kept by its receiving unit: when each side posted its exchange
// (kUnknown until then), the sending unit, the transfer alone, and how many messages share
// each side's link in its exchange.
struct BlockingMessage {
  std::int64_t send_posted = kUnknown, recv_posted = kUnknown;
  int from = 0;
  int send_share = 1, recv_share = 1;
  Time transfer;
};

// A DP collective of one model chunk, or of one of its buckets (1/buckets of it).
struct DpOp {
  bool all_gather = false;
  int chunk = 0;
  int bucket = 0;
  int buckets = 1;
};

// Where a unit is in its step, in order.
enum class StepPhase {
  kStart,
  kPasses,          // forward and backward passes of the schedule
  kGradientSync,    // waiting for the gradient reduce-scatters (or all-reduces)
  kOptimizer,       // the optimizer step is running
  kParameterSync,   // waiting for the parameter all-gathers
  kDone,
};

// The compute stream: the pass (or host synchronisation) it runs, at what rate since when, and
// what it waits for when idle.
struct ComputeStream {
  bool busy = false;
  double remaining_ns = 0.0;  // standalone work left in the running pass
  bool interferable = false;  // true for a compute pass (not a host synchronisation)
  // The share of the running work that communication beside it slows: its kernels, not the
  // waits inside a pass (exposed TP/CP exchanges, ZeRO-3 and FP8 collectives), which slowed
  // with the rest until 2026-12-05.
  double slowed_share = 1.0;
  bool running_pass = false;  // the stream runs `current`
  PassId current;
  Time rate_since;
  // When the running work started and what it takes at full rate: what it took longer, slowed
  // by communication beside it, belongs to its own term (compute or optimizer).
  Time started, nominal;
  EventId done_event;
  Wait waiting = Wait::kNone;
  Time wait_since;
  // A forward pass started on a chunk whose parameters were still being gathered bucket by
  // bucket: it cannot end before the last bucket is in plus `gate_tail` (its last bucket's
  // share of the pass). `held`: its compute is done and it waits for that.
  int gate_chunk = -1;
  Time gate_tail;
  bool held = false;
  Time work_end;  // when the running pass's own work ended (the trace ends its slice there)
  // Bucket-wise DP overlap: the running pass (its chunk's last gradient pass) hands over its
  // gradient buckets as it produces them: bucket_next of bucket_count leave once that share of
  // its work is done, at whatever rate it runs (bucket_event; bucket_chunk -1: none pending).
  int bucket_chunk = -1, bucket_next = 0, bucket_count = 0;
  EventId bucket_event;
};

// Megatron-LM's blocking exchange in progress: messages not yet delivered, and when the last
// of them could start (both sides posted); the blocking messages to this unit, by the producing
// pass's index.
struct BlockingExchange {
  bool open = false;
  int pending = 0;
  Time ready;
  std::vector<BlockingMessage> inbox;
};

// The PP stream of asynchronous sends: FIFO of (duration, receiving unit) with the receiver's
// slot in `arrived` and the producer's finish of each.
struct PpStream {
  bool busy = false;
  std::vector<std::pair<Time, int>> queue;
  std::vector<int> dest_pass;
  std::size_t head = 0;
  std::vector<std::int64_t> producer_finish;
};

// The DP stream: queued reduce-scatters and all-gathers, which chunks' parameters are
// gathered, and what is still outstanding.
struct DpStream {
  bool busy = false;
  std::vector<DpOp> queue;
  std::size_t head = 0;
  std::vector<bool> ag_done;        // per chunk: every bucket gathered
  std::vector<int> ag_buckets_done;  // per chunk
  std::vector<Time> ag_complete_at;  // per chunk: when its last bucket was gathered
  std::vector<int> rs_buckets_sent;  // per chunk: reduce-scatter buckets enqueued
  std::vector<int> backward_left;  // per chunk: B (or W) passes still to run
  int rs_outstanding = 0;
  int ag_outstanding = 0;
  // When this member reached the head collective (reserved it), and of the compute stream's
  // current DP wait the part spent before the collective could start: the group's slower
  // members not yet at it (a straggling host), which the breakdown books as slowest_gpu.
  Time reserved_at;
  Time peer_wait;
};

// One simulated unit: a TP group (all TP ranks of one (data-parallel index, stage)), lock-stepped
// by the TP collectives inside every pass, with its compute, PP and DP streams.
struct Unit {
  int d = 0, s = 0;
  double slowdown = 1.0;
  StepPhase phase = StepPhase::kStart;
  bool passes_begun = false;  // its first pass has started

  std::size_t next_pass = 0;  // into the schedule's order (asynchronous PP)
  std::size_t next_step = 0;  // into the blocking p2p program (Megatron-LM's PP)
  std::vector<std::int64_t> finished;  // [pass · V·m + chunk · m + mb]: own pass finish
  std::vector<std::int64_t> arrived;   // same index: input from another stage arrived
  std::vector<std::int64_t> produced;  // same index: producer finished (for attribution)

  ComputeStream compute;
  BlockingExchange exchange;
  int active_comm = 0;  // PP and DP transfers running beside compute (for interference)
  PpStream pp;
  DpStream dp;

  StageBreakdown stats;
};

class Executor {
 public:
  Executor(const PipelineSchedule& sched, const std::vector<StageCosts>& costs,
           const ExecutorConfig& cfg);
  ExecutionResult run();
  void prepare_trace() { pending_slices_.resize(units_.size()); }

 private:
  int index(int d, int s) const { return d * sched_.pp + s; }
  int slot(const PassId& p) const {
    return static_cast<int>(p.pass) * slots_ + p.chunk * sched_.micro_batches + p.micro_batch;
  }
  double unit_slowdown(int d, int s) const;
  bool traced(const Unit& u) const { return cfg_.record_trace && u.d == 0; }
  void record(const Unit& u, const char* stream, std::string name, Time start, Time end,
              Bytes bytes = Bytes(0)) {
    if (!traced(u)) return;
    trace_.push_back({trace_rank(u.s), u.s, stream, std::move(name), start, end, -1, {}, bytes});
  }
  // A PP send of unit `from` to unit `to`, the message keyed `key` there (the producing
  // pass's slot).
  void record_send(int from, int to, int key, const char* name, Time start);
  // The global rank of a stage's traced unit (d = 0, t = 0): the configured one, else its job
  // rank (workload::RankIndex).
  int trace_rank(int s) const {
    if (!cfg_.trace_ranks.empty()) return cfg_.trace_ranks[static_cast<std::size_t>(s)];
    return static_cast<int>(workload::RankIndex(cfg_.tp, sched_.pp, cfg_.dp).linear(s, 0, 0));
  }

  // Compute stream and the step's phases (executor.cpp).
  void start_unit(int i);
  void begin_wait(Unit& u, Wait why);
  void end_wait(Unit& u, std::int64_t producer_finish);
  void try_compute(int i);
  void start_pass(int i, const PassId& p);
  double rate(const Unit& u) const {
    return u.compute.interferable && u.active_comm > 0
               ? 1.0 / (1.0 + cfg_.interference * u.compute.slowed_share)
               : 1.0;
  }
  // `slowed_share`: of `work`, what communication beside it slows (ComputeStream).
  void run_compute(int i, Time work, bool interferable, std::string name,
                   double slowed_share = 1.0);
  // The running pass's work left, at its current rate.
  Time time_left(const Unit& u) const {
    return Time::from_ns_rounded(u.compute.remaining_ns / rate(u));
  }
  void schedule_completion(int i) {
    units_[i].compute.done_event = sim_.after(time_left(units_[i]), [this, i] { compute_done(i); });
  }
  // The set of communication tasks beside unit i's compute changed: re-rate its running pass.
  void comm_changed(int i, int delta);
  // The running pass's next gradient bucket: when its share of the work will be done.
  void schedule_bucket(int i);
  void bucket_due(int i);
  void compute_done(int i);
  void pass_done(int i, const PassId& p);

  // Pipeline communication (executor_pp.cpp).
  // Asynchronous PP: start the next pass of the schedule once its input is here. False when
  // every pass has run.
  bool next_pass(int i);
  // Blocking PP (Megatron-LM): the next step of the stage's program, a pass or an exchange.
  // False when the program is done.
  bool next_step(int i);
  // The unit on another stage that consumes the output of pass p of unit u, and the index of
  // p there (`arrived` and the blocking messages are indexed by the producing pass);
  // {-1, -1} when the consumer is on the same stage or there is none.
  std::pair<int, int> consumer(const Unit& u, const PassId& p) const;
  // Posts every send and receive of unit i's exchange. A message starts once both of its
  // sides are posted, or at the send where sends are eager (blocking_sends_rendezvous).
  // Messages of one exchange share the rank's link: each takes its transfer time times the
  // number of messages on the busier side.
  void post_exchange(int i, const ProgramStep& step);
  void start_message(int to, int k);
  void deliver(int to, int key, std::int64_t produced);
  void start_pp(int i);

  // DP stream (executor.cpp).
  void enqueue_dp(int i, DpOp op);
  // Which DP collective of stage s this is (its position in every member's DP queue).
  std::size_t dp_key(int s, std::size_t position) const {
    return static_cast<std::size_t>(s) * dp_stride_ + position;
  }
  // Stage s's DP buckets of chunk c (1 without bucketed overlap).
  int buckets(int s, int c) const {
    const auto& b = costs_[static_cast<std::size_t>(s)].dp_buckets;
    return b.empty() ? 1 : b[static_cast<std::size_t>(c)];
  }
  // The buckets of chunk c's gradient reduce-scatters (StageCosts::dp_reduce_buckets).
  int reduce_buckets(int s, int c) const {
    const auto& b = costs_[static_cast<std::size_t>(s)].dp_reduce_buckets;
    return b.empty() ? buckets(s, c) : b[static_cast<std::size_t>(c)];
  }
  // Enqueues the reduce-scatter buckets of chunk c up to (not including) `until`.
  void send_rs_buckets(int i, int c, int until);
  // The pass of unit i is over (its compute, and any wait for its chunk's parameters).
  void finish_pass(int i);
  // Ends unit i's wait for its chunk's parameters at `t` and finishes its pass then.
  void release_pass_at(int i, Time t);
  void start_dp(int i);
  // The DP collective `op` of stage s ended on its members (every replica in full mode, the
  // representative d0 when folded).
  void finish_dp(int s, int d0, int members, DpOp op, Time start);
  Bytes dp_bucket_bytes(int s, const DpOp& op) const;

  // The network (executor_network.cpp).
  void init_network();
  bool pp_on_network(int s) const {
    return engine_ && cfg_.network->stages[static_cast<std::size_t>(s)].pp_on_network;
  }
  // Unit `from`'s message to unit `to` as flows: the sends of every DP replica when folded,
  // of the unit's own replica in full mode, on every issued rail; `done` after the slowest.
  void send_pp(int from, int to, std::function<void()> done);
  // Runs the DP collective `op` of stage s, part `part` onwards, then `done`. Off the network
  // the whole collective takes its priced time.
  void run_dp(int s, DpOp op, std::size_t part, std::function<void()> done);
  // The calls of stage s's DP groups running part p, one per issued rail.
  std::vector<collective::CollectiveCall> dp_calls(int s, const DpPart& p) const;
  // The coflow of stage s's DP groups running part p (one per issued rail), folded.
  const collective::CollectiveEngine::Coflow& dp_coflow(int s, const DpPart& p);

  const PipelineSchedule& sched_;
  const std::vector<StageCosts>& costs_;
  const ExecutorConfig& cfg_;
  Simulator sim_;
  // The network every PP and DP flow of the step shares (null without cfg_.network).
  std::unique_ptr<net::FlowSolver> solver_;
  std::unique_ptr<collective::CollectiveEngine> engine_;
  std::unique_ptr<PpSends> sends_;  // PP messages, as coflows over replicas and rails
  // Folded with coflows: the network folded onto replica 0's own links (net/link_fold.h).
  std::optional<net::LinkFold> fold_;
  std::map<std::tuple<int, int, double>, collective::CollectiveEngine::Coflow> dp_coflows_;
  int slots_ = 0;
  std::vector<Unit> units_;
  std::vector<int> dp_members_ready_;
  std::size_t dp_stride_ = 0;  // DP collectives a stage can issue in a step, and some
  std::vector<std::vector<ProgramStep>> program_;  // per stage, blocking PP only
  bool rendezvous_ = false;  // blocking sends wait for the receiver to post
  std::vector<TraceRecord> trace_;
  // A traced unit's running slice: its name, its start, and the DP waits inside it (a sharded
  // pass's gathers, timed with the pass and drawn together at its end on the "dp wait" line).
  struct PendingSlice {
    std::string name;
    Time start, dp_wait;
    const ShardedTimeline* timeline = nullptr;  // a sharded pass's, where kept
  };
  // A sharded pass drawn as it was priced (executor_trace.cpp), from its slice's start to the
  // end of its work.
  void record_sharded_pass(const Unit& u, const PendingSlice& slice, Time work_end);
  std::vector<PendingSlice> pending_slices_;
};

}  // namespace megasim::step::detail
