// Pipeline schedules as per-stage orders of passes with explicit dependencies.
//
// A schedule says, for each pipeline stage (one GPU of each pipeline), the order in which it
// runs the forward (F), backward (B) and — for zero-bubble — weight-gradient (W) passes of
// every (micro-batch, model chunk). Passes of one stage run one after another in that order;
// across stages, a pass waits for its producer (dependencies()). Model chunk c of stage s is
// virtual stage c·pp + s, so with vpp > 1 a micro-batch visits every stage vpp times.
//
//   GPipe        all forwards, then all backwards.
//   1F1B         PipeDream-Flush/Megatron: pp − s − 1 warm-up forwards, then alternate.
//   interleaved  Megatron-LM's interleaved 1F1B (Narayanan et al., SC'21): warm-up of
//                (pp − s − 1)·2 + (vpp − 1)·g chunk-forwards, micro-batches taken in groups of
//                g per chunk (g = pp in Megatron-LM; Megatron-Core's micro-batch group size
//                and Llama 3's N may differ); needs micro_batches % g == 0.
//   zero-bubble  ZB-H1 (Qi et al., ICLR'24): 1F1B whose backward is split into B (input
//                gradient) and W (weight gradient); W passes are deferred to fill the bubbles,
//                stage s deferring at most s of them (peak memory of 1F1B's first stage).
//
// simulate_ideal() runs a schedule with fixed pass durations and no communication cost: the
// bubble fractions it yields are the textbook ones, (pp−1)/m for 1F1B and (pp−1)/(vpp·m)
// interleaved, which the tests check.
#pragma once

#include <functional>

#include <string>
#include <vector>

#include "engine/time.h"
#include "workload/parallel_plan.h"

namespace megasim::step {

enum class Pass { kForward, kBackward, kWeightGrad };
const char* to_string(Pass p);

struct PassId {
  Pass pass = Pass::kForward;
  int micro_batch = 0;
  int chunk = 0;
  bool operator==(const PassId&) const = default;
};

struct PipelineSchedule {
  workload::Schedule kind = workload::Schedule::kOneFOneB;
  int pp = 1, vpp = 1, micro_batches = 1;
  int group = 1;  // interleaved: micro-batches per chunk in a row (pp in Megatron-LM)
  std::vector<std::vector<PassId>> order;  // order[stage] = passes in execution order

  int virtual_stage(int stage, int chunk) const { return chunk * pp + stage; }
  int stage_of(int virtual_stage) const { return virtual_stage % pp; }
  int chunk_of(int virtual_stage) const { return virtual_stage / pp; }
  // Whether B is split from W (zero-bubble).
  bool split_backward() const { return kind == workload::Schedule::kZeroBubble; }
};

// Throws std::invalid_argument when the schedule cannot be built (e.g. interleaved with
// micro_batches % pp != 0, or vpp > 1 without the interleaved schedule): a plan that
// workload::validate_plan accepted never gets here with one.
// `group`: the interleaved schedule's micro-batch group (ParallelPlan::group()); 0 = pp.
PipelineSchedule build_schedule(workload::Schedule kind, int pp, int vpp, int micro_batches,
                                int group = 0);

// How many forward passes `stage` runs before its first backward pass in the 1F1B-like
// schedules (Megatron-LM's num_warmup_microbatches); every forward for GPipe.
int warmup_forwards(const PipelineSchedule& s, int stage);

// The pass on another stage (or the same one) that must finish before `pass` of `stage` can
// start; `found` is false for passes with no producer (the first virtual stage's forwards).
struct Dependency {
  bool found = false;
  int stage = 0;
  PassId pass;
  bool crosses_stages = false;  // true when it is an activation/gradient send between GPUs
};
Dependency dependency(const PipelineSchedule& s, int stage, const PassId& pass);

struct IdealTimes {
  Time forward, backward, weight_grad;  // weight_grad used only when B and W are split
  Time p2p;                             // latency of one send between stages
};
struct IdealResult {
  Time makespan;
  Time busy_per_stage;  // F+B(+W) work of one stage
  double bubble_fraction = 0.0;  // (makespan − busy) / busy
};
// Throws std::logic_error if the schedule deadlocks (a bug in a schedule generator).
IdealResult simulate_ideal(const PipelineSchedule& s, const IdealTimes& t);

// Megatron-LM's blocking point-to-point program of one stage: the stage's passes in schedule
// order with the exchanges its p2p_communication makes between them. An exchange is one
// batch_isend_irecv followed by a device synchronisation: it sends the outputs of the passes
// just run that another stage consumes and receives the inputs, produced on another stage, of
// the passes about to run, and it ends only when every one of them has been delivered, so a
// send also waits for the receiving stage to post its matching exchange. Where exchanges fall:
//   interleaved  one exchange after every warm-up forward, after every steady-state (F, B)
//                pair (send_forward_backward_recv_forward_backward) and after every
//                cool-down backward, plus the first forward's receive.
//   1F1B         a receive before and a send after every warm-up forward and cool-down
//                backward; in the steady state, one combined exchange after each F
//                (send_forward_recv_backward) and after each B (send_backward_recv_forward).
//   others       a receive before and a send after every pass.
// Megatron-LM's 1F1B helpers (recv_forward, send_forward, send_forward_recv_backward, ...)
// return early when there is nothing to send or receive; the interleaved schedule's helpers
// (send_forward_recv_forward, send_backward_recv_backward,
// send_forward_backward_recv_forward_backward) synchronise the device even then. Exchanges
// that would return early are left out; the others stay, possibly empty, as a bare sync.
struct ProgramStep {
  bool exchange = false;
  PassId pass;                // the pass to run, when !exchange
  std::vector<PassId> sends;  // own passes whose output another stage consumes
  std::vector<PassId> recvs;  // own passes whose input another stage produces
};
std::vector<ProgramStep> blocking_p2p_program(const PipelineSchedule& s, int stage);

// Whether a blocking send waits for the receiving stage to post its exchange (NCCL's
// rendezvous), as under Megatron-LM's 1F1B and interleaved schedules. GPipe and ZB-H1 were
// not written for blocking exchanges (ZB-H1 deadlocks under rendezvous): their sends are
// eager, buffered at the receiver.
bool blocking_sends_rendezvous(const PipelineSchedule& s);

// The makespan of Megatron-LM's blocking programs on fixed times, the executor's exchanges
// without a network: every stage runs blocking_p2p_program(s, stage), its passes taking
// t.forward, t.backward and t.weight_grad; a message starts once its send is posted and, where
// sends rendezvous, its receive too, and takes t.p2p times the messages of the busier of its two
// exchanges (the executor's price off the network); an exchange ends with its last message and
// is followed by the device synchronisation `sync`. Throws std::logic_error on a deadlock.
Time simulate_blocking_ideal(const PipelineSchedule& s, const IdealTimes& t, Time sync);

// The same on times given per pass and per message: `pass_time(stage, pass)` and
// `message_time(stage, pass)` for the message carrying `pass`'s output from `stage` (its time
// alone; an exchange of k messages takes k of them), each stage starting its program at
// `start[stage]` (0 where not given: a stage's data loading before its first exchange).
using BlockingPassTime = std::function<Time(int stage, const PassId& pass)>;
using BlockingMessageTime = std::function<Time(int stage, const PassId& pass)>;
Time simulate_blocking(const PipelineSchedule& s, const BlockingPassTime& pass_time,
                       const BlockingMessageTime& message_time, Time sync,
                       const std::vector<Time>& start = {});

}  // namespace megasim::step
