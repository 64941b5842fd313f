// The discrete-event simulator: a clock, a pending-event set and a seeded RNG, owned by one
// object that is passed by reference to every model (no globals, no singletons).
//
// Models keep one pending event per resource (a stream's next completion, the flow solver's
// next finish), never one per byte. Callbacks may schedule, cancel and reschedule freely,
// also at the current time (they then run after every event already due at that time).
// Not thread-safe; run independent simulations on independent Simulator objects.
#pragma once

#include <cstdint>

#include "engine/event_queue.h"
#include "engine/rng.h"
#include "engine/time.h"

namespace megasim {

class Simulator {
 public:
  explicit Simulator(std::uint64_t seed = 1) : rng_(seed) {}
  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;

  Time now() const { return now_; }
  Rng& rng() { return rng_; }

  // Schedules at an absolute time, which must not be in the past.
  EventId at(Time when, Callback callback);
  EventId after(Time delay, Callback callback) { return at(now_ + delay, std::move(callback)); }
  bool cancel(EventId id) { return queue_.cancel(id); }
  EventId reschedule(EventId id, Time when);
  bool pending(EventId id) const { return queue_.pending(id); }

  // Runs until no event is pending or stop() is called.
  void run() { run_until(Time::max()); }
  // Runs every event with time <= limit; the clock then stands at the last event run (or at
  // `limit` if the queue still holds later events and limit is finite).
  void run_until(Time limit);
  // Makes run()/run_until() return after the current event.
  void stop() { stopped_ = true; }

  std::uint64_t events_run() const { return events_run_; }
  std::size_t events_pending() const { return queue_.size(); }

 private:
  EventQueue queue_;
  Rng rng_;
  Time now_ = Time::zero();
  std::uint64_t events_run_ = 0;
  bool stopped_ = false;
};

}  // namespace megasim
