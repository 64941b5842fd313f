#include "step/evaluation_pass.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace megasim::step {

PipelineSchedule forward_only(const PipelineSchedule& s) {
  PipelineSchedule f = s;
  for (auto& order : f.order) {
    order.erase(std::remove_if(order.begin(), order.end(),
                               [](const PassId& p) { return p.pass != Pass::kForward; }),
                order.end());
  }
  return f;
}

Time evaluation_iteration(const PipelineSchedule& training, const std::vector<StageCosts>& costs,
                          const ExecutorConfig& config) {
  const PipelineSchedule s = forward_only(training);
  const auto slot = [&s](const PassId& p) {
    return static_cast<std::size_t>(p.chunk * s.micro_batches + p.micro_batch);
  };
  const auto duration = [&](int stage, const PassId& p) {
    const auto c = static_cast<std::size_t>(p.chunk);
    const StageCosts& k = costs[static_cast<std::size_t>(stage)];
    // Exposed TP and ZeRO-3 / FSDP waits are not paced by the slowest GPU, as in the executor.
    const Time waits = k.forward_tp[c] + (k.forward_dp.empty() ? Time::zero() : k.forward_dp[c]);
    return (k.forward[c] - waits) * (1.0 + config.slowest_gpu + config.power_cap) + waits;
  };
  // The batch read before the first pass on the stages that read it (zero where MegaScale's
  // asynchronous pipeline loads it behind the iteration before).
  const auto loading = [&](int stage) {
    return costs[static_cast<std::size_t>(stage)].data_loading;
  };
  if (!config.pp_overlap && s.pp > 1) {
    // Megatron-LM's blocking exchanges, in forward_only's program: a stage waits for each
    // send to be taken and each receive to arrive, then synchronises the device; a stage
    // that reads the batch reads it first, as in the step.
    std::vector<Time> start;
    for (int stage = 0; stage < s.pp; ++stage) start.push_back(loading(stage));
    return simulate_blocking(
        s, [&](int stage, const PassId& p) { return duration(stage, p); },
        [&](int stage, const PassId&) {
          return costs[static_cast<std::size_t>(stage)].pp_activation;
        },
        config.blocking_p2p_overhead, start);
  }
  // finish[stage][slot] in ns; -1 while not run.
  std::vector<std::vector<std::int64_t>> finish(
      static_cast<std::size_t>(s.pp),
      std::vector<std::int64_t>(static_cast<std::size_t>(s.vpp * s.micro_batches), -1));
  std::vector<std::size_t> next(static_cast<std::size_t>(s.pp), 0);
  std::vector<std::int64_t> free_at(static_cast<std::size_t>(s.pp), 0);
  for (int stage = 0; stage < s.pp; ++stage)
    free_at[static_cast<std::size_t>(stage)] = loading(stage).ns();
  for (bool progress = true; progress;) {
    progress = false;
    for (int stage = 0; stage < s.pp; ++stage) {
      const auto st = static_cast<std::size_t>(stage);
      while (next[st] < s.order[st].size()) {
        const PassId& p = s.order[st][next[st]];
        const Dependency d = dependency(s, stage, p);
        std::int64_t ready = 0;
        if (d.found) {
          const std::int64_t f = finish[static_cast<std::size_t>(d.stage)][slot(d.pass)];
          if (f < 0) break;
          ready = f + (d.crosses_stages ? costs[static_cast<std::size_t>(d.stage)].pp_activation.ns() : 0);
        }
        free_at[st] = finish[st][slot(p)] = std::max(ready, free_at[st]) + duration(stage, p).ns();
        ++next[st];
        progress = true;
      }
    }
  }
  for (int stage = 0; stage < s.pp; ++stage) {
    if (next[static_cast<std::size_t>(stage)] != s.order[static_cast<std::size_t>(stage)].size())
      throw std::logic_error(fmt::format("forward-only schedule deadlocks at stage {}", stage));
  }
  return Time::from_ns(*std::max_element(free_at.begin(), free_at.end()));
}

}  // namespace megasim::step
