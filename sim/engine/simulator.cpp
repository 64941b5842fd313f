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
  while (!stopped_ && !queue_.empty()) {
    if (queue_.next_time() > limit) {
      if (limit != Time::max()) now_ = limit;
      return;
    }
    now_ = queue_.pop(callback);
    ++events_run_;
    callback();
  }
}

}  // namespace megasim
