// The work a scenario asks for, counted from its plan before any of it is done, and refused
// when it passes a limit: a plan in range key by key can still ask for billions of pipeline
// passes (a global batch of 10^9) or run-level events (10^16 tokens checkpointed every few
// seconds, or 10^5 Monte Carlo trials), which would run for hours and take gigabytes.
//
// Every count is a lower bound on the events it stands for (one per pipeline pass; one per
// checkpoint and per expected failure of each trial), computed exactly from the inputs, so a
// refusal is never a guess; the message names the keys that set the count, the count and the
// limit (--max-events).
#pragma once

#include <cstdint>

#include "io/inputs.h"
#include "run/step_profile.h"

namespace megasim::plan {

// At 10-20 M events/s a step or a run of 2·10^7 events takes seconds and well under 2 GiB;
// the largest shipped scenario (--full, 12,288 GPUs) needs 6·10^5 passes.
constexpr std::int64_t kDefaultMaxEvents = 20'000'000;

struct WorkLimits {
  std::int64_t max_events = kDefaultMaxEvents;
};

// Pipeline passes of one step: simulated ranks (a stage each folded, every TP group with
// `full`) × micro-batches × virtual stages × passes per micro-batch and stage.
double step_passes(const io::Inputs& inputs, bool full);
// Throws InputError, naming the scenario and its plan, when step_passes passes the limit.
void check_step_work(const io::Inputs& inputs, bool full, const WorkLimits& limits);
// Throws InputError, naming run.tokens or the trial count, when the run simulation's events
// (trials × (checkpoints + expected failures)) pass the limit.
void check_run_work(const io::Inputs& inputs, const run::StepProfile& step,
                    const WorkLimits& limits);

}  // namespace megasim::plan
