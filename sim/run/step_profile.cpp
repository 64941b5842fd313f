#include "run/step_profile.h"

#include <stdexcept>

#include <fmt/format.h>

namespace megasim::run {

void StepProfile::validate() const {
  if (step_time <= Time::zero()) {
    throw std::invalid_argument(
        fmt::format("step profile: step time must be positive, got {}", step_time.to_string()));
  }
  if (!(tokens_per_step > 0.0)) {
    throw std::invalid_argument(
        fmt::format("step profile: tokens per step must be positive, got {}", tokens_per_step));
  }
  if (gpus <= 0 || gpus_per_node <= 0 || nodes <= 0 || !(switches >= 0.0)) {
    throw std::invalid_argument(
        fmt::format("step profile: gpus {}, gpus per node {}, nodes {}, switches {} "
                    "must be positive (switches ≥ 0)",
                    gpus, gpus_per_node, nodes, switches));
  }
  if (nodes * gpus_per_node < gpus) {
    throw std::invalid_argument(fmt::format("step profile: {} nodes × {} GPUs per node cannot hold {} GPUs",
                                 nodes, gpus_per_node, gpus));
  }
  if (evaluation < Time::zero() || evaluation_interval_steps < 0) {
    throw std::invalid_argument(fmt::format("step profile: evaluation {} every {} steps must not be negative",
                                            evaluation.to_string(), evaluation_interval_steps));
  }
  Time sum = Time::zero();
  for (const Time t : activity_time) {
    if (t < Time::zero()) throw std::invalid_argument("step profile: negative activity time");
    sum += t;
  }
  if (sum != step_time) {
    throw std::invalid_argument(fmt::format("step profile: activity times add up to {}, not the step time {}",
                                 sum.to_string(), step_time.to_string()));
  }
  if (!phases.empty()) {
    Time psum = Time::zero();
    for (const auto& p : phases) psum += p.duration;
    if (psum != step_time) {
      throw std::invalid_argument(fmt::format("step profile: phases add up to {}, not the step time {}",
                                   psum.to_string(), step_time.to_string()));
    }
  }
}

StepProfile uniform_step(Time step_time, double tokens_per_step, std::int64_t gpus,
                         int gpus_per_node, double switches, Activity activity) {
  StepProfile p;
  p.step_time = step_time;
  p.tokens_per_step = tokens_per_step;
  p.gpus = gpus;
  p.gpus_per_node = gpus_per_node;
  p.nodes = (gpus + gpus_per_node - 1) / gpus_per_node;
  p.switches = switches;
  p.activity_time[static_cast<std::size_t>(activity)] = step_time;
  return p;
}

}  // namespace megasim::run
