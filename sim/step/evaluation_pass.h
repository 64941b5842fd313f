// One evaluation iteration, as Megatron-LM runs it (training.py evaluate(): the schedule's
// forward_backward_func with forward_only=True over the step's micro-batches): every stage runs
// the forward passes of its schedule in their training order and nothing else: no backward
// pass, no DP synchronisation, no optimizer step. A run that evaluates every N steps pays it
// between steps (run/run_simulation.h).
//
// Timed over the stages with each stage's priced forward passes (their compute paced by the
// slowest GPU as in the step, their exposed TP and ZeRO-3 / FSDP waits as priced), the
// activation send between stages (StageCosts::pp_activation) and the batch read first on the
// stages that read it (StageCosts::data_loading, zero under MegaScale's asynchronous loading,
// where step_model.cpp holds the iteration to at least the batch's reading):
// with PP overlap as a list schedule, a stage running its next forward once its input has
// arrived; under Megatron-LM's blocking exchanges (no PP overlap) as forward_only's blocking
// program (blocking_p2p_program, simulate_blocking: a send waits for its receiver, each
// exchange ends in a device synchronisation), the executor's lock-step off the network.
// Left out: stragglers (the run level slows the whole job instead) and the contention of PP
// sends with each other on the fabric, which the forward-only pass makes lighter than the step's.
#pragma once

#include <vector>

#include "engine/time.h"
#include "step/executor.h"
#include "step/pipeline_schedule.h"

namespace megasim::step {

// The schedule's forward passes only, in each stage's order.
PipelineSchedule forward_only(const PipelineSchedule& s);

// Throws std::logic_error if the forward passes deadlock (a bug in a schedule generator).
Time evaluation_iteration(const PipelineSchedule& s, const std::vector<StageCosts>& costs,
                          const ExecutorConfig& config);

}  // namespace megasim::step
