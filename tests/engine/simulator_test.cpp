#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <vector>

#include "engine/simulator.h"

using megasim::EventId;
using megasim::Simulator;
using megasim::Time;

TEST_CASE("simulator: clock advances to each event and callbacks may schedule more") {
  Simulator sim;
  std::vector<std::int64_t> times;
  std::function<void()> tick = [&] {
    times.push_back(sim.now().ns());
    if (times.size() < 5) sim.after(Time::from_ns(10), tick);
  };
  sim.at(Time::from_ns(3), tick);
  sim.run();
  CHECK(times == std::vector<std::int64_t>{3, 13, 23, 33, 43});
  CHECK(sim.now().ns() == 43);
  CHECK(sim.events_run() == 5);
}

TEST_CASE("simulator: run_until stops at the limit and resumes later") {
  Simulator sim;
  int count = 0;
  for (int i = 1; i <= 10; ++i) sim.at(Time::from_ns(i * 100), [&count] { ++count; });
  sim.run_until(Time::from_ns(450));
  CHECK(count == 4);
  CHECK(sim.now().ns() == 450);
  sim.run();
  CHECK(count == 10);
}

TEST_CASE("simulator: stop() ends the run after the current event") {
  Simulator sim;
  int count = 0;
  for (int i = 1; i <= 10; ++i) {
    sim.at(Time::from_ns(i), [&] {
      if (++count == 3) sim.stop();
    });
  }
  sim.run();
  CHECK(count == 3);
  CHECK(sim.events_pending() == 7);
}

TEST_CASE("simulator: an event scheduled at the current time runs after those already due") {
  Simulator sim;
  std::string order;
  sim.at(Time::from_ns(5), [&] {
    order += "a";
    sim.after(Time::zero(), [&] { order += "c"; });
  });
  sim.at(Time::from_ns(5), [&] { order += "b"; });
  sim.run();
  CHECK(order == "abc");
}

TEST_CASE("simulator: cancel and reschedule through the simulator") {
  Simulator sim;
  std::string order;
  EventId x = sim.at(Time::from_ns(10), [&] { order += "x"; });
  EventId y = sim.at(Time::from_ns(20), [&] { order += "y"; });
  sim.at(Time::from_ns(15), [&] { order += "z"; });
  sim.cancel(x);
  sim.reschedule(y, Time::from_ns(12));
  sim.run();
  CHECK(order == "yz");
}

namespace {
// A small randomised model: returns a fingerprint of (time, event) pairs.
std::uint64_t fingerprint(std::uint64_t seed) {
  Simulator sim(seed);
  std::uint64_t h = 1469598103934665603ull;
  int remaining = 20000;
  std::function<void(int)> fire = [&](int who) {
    h = (h ^ static_cast<std::uint64_t>(sim.now().ns())) * 1099511628211ull;
    h = (h ^ static_cast<std::uint64_t>(who)) * 1099511628211ull;
    if (--remaining > 0) {
      sim.after(Time::from_ns(static_cast<std::int64_t>(sim.rng().exponential(100.0))),
                [&fire, who] { fire(who); });
    }
  };
  for (int i = 0; i < 64; ++i) sim.at(Time::zero(), [&fire, i] { fire(i); });
  sim.run();
  return h;
}
}  // namespace

TEST_CASE("simulator: same seed gives the same event sequence and another seed does not") {
  CHECK(fingerprint(7) == fingerprint(7));
  CHECK(fingerprint(7) != fingerprint(8));
}
