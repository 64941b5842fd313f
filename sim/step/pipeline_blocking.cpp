// simulate_blocking: the blocking exchanges of step/executor_pp.cpp without a network, on given
// pass and message times: on fixed times (simulate_blocking_ideal) for search's estimate
// (plan/estimate.cpp), which prices Megatron-LM's lock-step stages with it, and on a step's
// priced passes for its forward-only evaluation iteration (step/evaluation_pass.cpp).
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
  std::int64_t each = 0;                          // one message's time alone (ns)
};

// A stage whose program did not run to its end waits on an exchange no one posts.
void throw_if_stuck(const std::vector<std::vector<ProgramStep>>& programs,
                    const std::vector<std::size_t>& next) {
  for (std::size_t stage = 0; stage < programs.size(); ++stage) {
    if (next[stage] != programs[stage].size()) {
      throw std::logic_error(
          fmt::format("blocking program deadlocks at stage {} step {}", stage, next[stage]));
    }
  }
}

}  // namespace

Time simulate_blocking(const PipelineSchedule& s, const BlockingPassTime& pass_time,
                       const BlockingMessageTime& message_time, Time sync,
                       const std::vector<Time>& start) {
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
    return start + m.each * share;
  };

  std::vector<std::vector<ProgramStep>> programs;
  for (int stage = 0; stage < s.pp; ++stage) programs.push_back(blocking_p2p_program(s, stage));
  std::vector<std::size_t> next(s.pp, 0);
  std::vector<std::int64_t> clock(s.pp, 0);
  for (std::size_t i = 0; i < std::min(start.size(), clock.size()); ++i) clock[i] = start[i].ns();
  std::vector<bool> posted(s.pp, false);
  bool progress = true;
  while (progress) {
    progress = false;
    for (int stage = 0; stage < s.pp; ++stage) {
      while (next[stage] < programs[stage].size()) {
        const ProgramStep& step = programs[stage][next[stage]];
        if (!step.exchange) {
          clock[stage] += pass_time(stage, step.pass).ns();
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
            m.each = message_time(stage, p).ns();
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
  throw_if_stuck(programs, next);
  return Time::from_ns(*std::max_element(clock.begin(), clock.end()));
}

Time simulate_blocking_ideal(const PipelineSchedule& s, const IdealTimes& t, Time sync) {
  return simulate_blocking(
      s,
      [&t](int, const PassId& p) {
        return p.pass == Pass::kForward    ? t.forward
               : p.pass == Pass::kBackward ? t.backward
                                           : t.weight_grad;
      },
      [&t](int, const PassId&) { return t.p2p; }, sync);
}

}  // namespace megasim::step
