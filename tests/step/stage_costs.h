// Stage costs for the step tests: every stage alike, no TP and no communication.
#pragma once

#include <string>
#include <vector>

#include <fmt/format.h>

#include "engine/time.h"
#include "step/executor.h"
#include "workload/parallel_plan.h"

namespace megasim::test {

// `pp` stages of `v` chunks: F = f and B = b per stage and micro-batch, split evenly over the
// chunks; every other cost zero.
inline std::vector<step::StageCosts> uniform_costs(int pp, int v, Time f, Time b) {
  step::StageCosts c;
  const auto chunks = static_cast<std::size_t>(v);
  c.forward.assign(chunks, Time::from_ns(f.ns() / v));
  c.backward.assign(chunks, Time::from_ns(b.ns() / v));
  c.weight_grad.assign(chunks, Time::zero());
  c.forward_tp.assign(chunks, Time::zero());
  c.backward_tp.assign(chunks, Time::zero());
  c.weight_grad_tp.assign(chunks, Time::zero());
  c.dp_reduce_scatter.assign(chunks, Time::zero());
  c.dp_all_gather.assign(chunks, Time::zero());
  return std::vector<step::StageCosts>(static_cast<std::size_t>(pp), c);
}

// Small schedules of every kind, each a case of the tests that set two timings of one schedule
// against each other (the executor off the network, the blocking program, the evaluation).
struct ScheduleCase {
  workload::Schedule kind;
  int pp, vpp, micro_batches;
  std::string describe() const {
    return fmt::format("{} pp {} vpp {} m {}", workload::to_string(kind), pp, vpp, micro_batches);
  }
};
inline const std::vector<ScheduleCase> kScheduleCases = {
    {workload::Schedule::kOneFOneB, 4, 1, 8},    {workload::Schedule::kOneFOneB, 3, 1, 2},
    {workload::Schedule::kInterleaved, 4, 2, 8}, {workload::Schedule::kInterleaved, 2, 3, 4},
    {workload::Schedule::kGpipe, 3, 1, 5},       {workload::Schedule::kZeroBubble, 4, 1, 6}};

}  // namespace megasim::test
