// What the run-level simulation needs to know about one training step, summarised from the
// step simulator's StepResult and the cluster: the step time, how much training it does, how
// many GPUs, nodes and switches run it, and how a GPU spends the step (time per activity,
// and optionally the ordered phases of one step for peak power and the compute/communication
// swing). A plain value type; `validate()` checks its preconditions and throws
// std::invalid_argument naming the field that is wrong (a bug upstream, not bad user input).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/time.h"
#include "engine/units.h"
#include "hw/device_profile.h"

namespace megasim::run {

// What a GPU is doing, for power: the hw module's one activity type.
using hw::Activity;
using hw::kActivityCount;

// One stretch of a step during which the GPUs (all ranks alike, as in a symmetric plan) do
// the same kind of work.
struct StepPhase {
  Activity activity = Activity::kIdle;
  Time duration;
};

struct StepProfile {
  Time step_time;                // one optimizer step, failure-free
  double tokens_per_step = 0.0;  // global batch × sequence length
  std::int64_t gpus = 0;
  int gpus_per_node = 8;
  std::int64_t nodes = 0;     // gpus / gpus_per_node, rounded up
  double switches = 0.0;      // the job's share of the fabric's switches (a fraction of one)
  Bytes checkpoint_size;      // model + optimizer states written per checkpoint (whole job)
  // Time per GPU activity within one step; sums to step_time (a rank's timeline summarised).
  std::array<Time, kActivityCount> activity_time{};
  // Ordered phases of one step (optional). Empty: the activity times stand for the step, and
  // peak power is that of the most power-hungry activity that occurs.
  std::vector<StepPhase> phases;
  // The evaluation the job runs every `evaluation_interval_steps` steps (0: none), taking
  // `evaluation` (eval iterations × one forward-only iteration). Megatron-LM evaluates at every
  // multiple of its interval, so redone steps redo their evaluations: the run level spreads
  // the run's whole evaluations evenly over its steps.
  Time evaluation;
  std::int64_t evaluation_interval_steps = 0;
  double mfu = 0.0;  // the step's model FLOPs utilisation (for the running job's MFU)

  // Throws std::invalid_argument (a bug upstream) when a field is out of range or the activity
  // times do not add up.
  void validate() const;
  Time time_in(Activity a) const { return activity_time[static_cast<std::size_t>(a)]; }
};

// A profile whose GPUs spend the whole step in one activity (for tests and quick estimates).
StepProfile uniform_step(Time step_time, double tokens_per_step, std::int64_t gpus,
                         int gpus_per_node, double switches, Activity activity);

}  // namespace megasim::run
