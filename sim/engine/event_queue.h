// The pending-event set of the discrete-event engine.
//
// Events are ordered by (time, insertion sequence): two events at the same time run in the
// order they were scheduled, so a run is reproducible bit for bit. Storage is a 4-ary heap on
// one contiguous array of 24-byte keys; callbacks live in a slot pool and never move while
// pending. Cancel is O(1) and lazy (ns-3's m_cancel): the slot is freed at once and its heap
// key, whose generation no longer matches, is skipped when it surfaces; the heap is compacted
// when stale keys outnumber live ones. schedule and pop are O(log n).
//
// Not thread-safe: one queue belongs to one Simulator.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "engine/time.h"

namespace megasim {

using Callback = std::function<void()>;

// Handle of a scheduled event. A default-constructed id refers to no event; an id whose event
// ran or was cancelled is stale, and cancelling it is a harmless no-op.
struct EventId {
  std::uint32_t slot = kNone;
  std::uint32_t generation = 0;
  static constexpr std::uint32_t kNone = 0xffffffffu;
  bool valid() const { return slot != kNone; }
};

class EventQueue {
 public:
  EventQueue() = default;
  EventQueue(const EventQueue&) = delete;
  EventQueue& operator=(const EventQueue&) = delete;

  EventId schedule(Time at, Callback callback);
  // Returns false when the event already ran or was cancelled.
  bool cancel(EventId id);
  // Moves a pending event to a new time (it is ordered as if scheduled now). Returns the new
  // id, or an invalid id when `id` is no longer pending.
  EventId reschedule(EventId id, Time at);
  bool pending(EventId id) const;

  bool empty() const { return live_ == 0; }
  std::size_t size() const { return live_; }
  // Time of the earliest pending event; Time::max() when empty.
  Time next_time();
  // Removes the earliest event, returning its time and callback. Precondition: !empty().
  Time pop(Callback& out);

 private:
  struct Key {
    std::int64_t time;
    std::uint64_t seq;
    std::uint32_t slot;
    std::uint32_t generation;
    bool operator<(const Key& o) const { return time != o.time ? time < o.time : seq < o.seq; }
  };
  struct Slot {
    Callback callback;
    std::uint32_t generation = 0;
    bool busy = false;
  };

  std::uint32_t acquire_slot();
  void release_slot(std::uint32_t slot);
  bool is_live(const Key& k) const;
  void push_key(const Key& k);
  void pop_key();
  void drop_stale_top();
  void compact();

  std::vector<Key> heap_;
  std::vector<Slot> slots_;
  std::vector<std::uint32_t> free_slots_;
  std::uint64_t next_seq_ = 0;
  std::size_t live_ = 0;
};

}  // namespace megasim
