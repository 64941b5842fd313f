// Stage costs for the step tests: every stage alike, no TP and no communication.
#pragma once

#include <vector>

#include "engine/time.h"
#include "step/executor.h"

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

}  // namespace megasim::test
