// simulate_blocking_ideal: the blocking exchanges of step/executor_pp.cpp on fixed times, for
// search's estimate (plan/estimate.cpp), which prices Megatron-LM's lock-step stages with it.
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "step/pipeline_schedule.h"

namespace megasim::step {
namespace {

constexpr std::int64_t kUnknown = -1;

struct Message {
  std::int64_t send = kUnknown, recv = kUnknown;  // when each side posted it (ns)
  std::int64_t send_share = 1, recv_share = 1;    // messages of the exchange on each side
};

}  // namespace

Time simulate_blocking_ideal(const PipelineSchedule& s, const IdealTimes& t, Time sync) {
  const int slots = s.vpp * s.micro_batches;
  // A message is named by the pass that produces it, on the stage that runs that pass.
  const auto key = [&](int stage, const PassId& p) {
    return (static_cast<std::size_t>(stage) * 3 + static_cast<std::size_t>(p.pass)) * slots +
           static_cast<std::size_t>(p.chunk * s.micro_batches + p.micro_batch);
  };
  std::vector<Message> messages(static_cast<std::size_t>(s.pp) * 3 * slots);
  const bool rendezvous = blocking_sends_rendezvous(s);
  // When a message is delivered, kUnknown while a side it waits for has not posted.
  const auto delivered = [&](const Message& m) {
    if (m.send == kUnknown || (rendezvous && m.recv == kUnknown)) return kUnknown;
    const std::int64_t start = rendezvous ? std::max(m.send, m.recv) : m.send;
    const std::int64_t share = rendezvous ? std::max(m.send_share, m.recv_share) : m.send_share;
    return start + t.p2p.ns() * share;
  };
  const auto duration = [&](Pass p) {
    return p == Pass::kForward ? t.forward : p == Pass::kBackward ? t.backward : t.weight_grad;
  };

  std::vector<std::vector<ProgramStep>> programs;
  for (int stage = 0; stage < s.pp; ++stage) programs.push_back(blocking_p2p_program(s, stage));
  std::vector<std::size_t> next(s.pp, 0);
  std::vector<std::int64_t> clock(s.pp, 0);
  std::vector<bool> posted(s.pp, false);
  bool progress = true;
  while (progress) {
    progress = false;
    for (int stage = 0; stage < s.pp; ++stage) {
      while (next[stage] < programs[stage].size()) {
        const ProgramStep& step = programs[stage][next[stage]];
        if (!step.exchange) {
          clock[stage] += duration(step.pass.pass).ns();
          ++next[stage];
          progress = true;
          continue;
        }
        if (!posted[stage]) {
          posted[stage] = true;
          progress = true;
          for (const PassId& p : step.sends) {
            Message& m = messages[key(stage, p)];
            m.send = clock[stage];
            m.send_share = static_cast<std::int64_t>(step.sends.size());
          }
          for (const PassId& p : step.recvs) {
            const Dependency d = dependency(s, stage, p);
            Message& m = messages[key(d.stage, d.pass)];
            m.recv = clock[stage];
            m.recv_share = static_cast<std::int64_t>(step.recvs.size());
          }
        }
        std::int64_t ends = clock[stage];
        bool done = true;
        const auto wait_for = [&](const Message& m) {
          const std::int64_t at = delivered(m);
          done = done && at != kUnknown;
          ends = std::max(ends, at);
        };
        for (const PassId& p : step.sends) wait_for(messages[key(stage, p)]);
        for (const PassId& p : step.recvs) {
          const Dependency d = dependency(s, stage, p);
          wait_for(messages[key(d.stage, d.pass)]);
        }
        if (!done) break;
        clock[stage] = ends + sync.ns();
        posted[stage] = false;
        ++next[stage];
        progress = true;
      }
    }
  }
  for (int stage = 0; stage < s.pp; ++stage) {
    if (next[stage] != programs[stage].size()) {
      throw std::logic_error(
          fmt::format("blocking program deadlocks at stage {} step {}", stage, next[stage]));
    }
  }
  return Time::from_ns(*std::max_element(clock.begin(), clock.end()));
}

}  // namespace megasim::step
