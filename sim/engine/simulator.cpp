#include "engine/simulator.h"

#include <cassert>
#include <utility>

namespace megasim {

EventId Simulator::at(Time when, Callback callback) {
  assert(when >= now_ && "an event cannot be scheduled in the past");
  return queue_.schedule(when, std::move(callback));
}

EventId Simulator::reschedule(EventId id, Time when) {
  assert(when >= now_ && "an event cannot be rescheduled into the past");
  return queue_.reschedule(id, when);
}

void Simulator::run_until(Time limit) {
  stopped_ = false;
  Callback callback;
  while (!stopped_) {
    if (!queue_.pop_until(limit, now_, callback)) {
      if (limit != Time::max() && !queue_.empty()) now_ = limit;
      return;
    }
    ++events_run_;
    callback();
  }
}

}  // namespace megasim
