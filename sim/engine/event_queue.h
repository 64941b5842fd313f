// The pending-event set of the discrete-event engine.
//
// Events are ordered by (time, insertion sequence): two events at the same time run in the
// order they were scheduled, so a run is reproducible bit for bit. Storage is a 4-ary heap of
// 16-byte keys (time, sequence << 24 | slot) on one contiguous array, aligned so that the four
// children of a node share one 64-byte cache line (LaMarca and Ladner, 1996). Callbacks live
// in a slot pool and never move while pending. Cancel is O(1) and lazy (ns-3's m_cancel): the
// callback is destroyed at once and its key is dropped when it surfaces; the heap is compacted
// when cancelled keys outnumber live ones. schedule and pop are O(log n).
//
// Limits (asserted): 2^24 events pending at once, 2^40 events scheduled over a queue's life.
// Not thread-safe: one queue belongs to one Simulator.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/callback.h"
#include "engine/time.h"

namespace megasim {

// Handle of a scheduled event. A default-constructed id refers to no event; an id whose event
// ran or was cancelled is stale, and cancelling it is a harmless no-op.
struct EventId {
  std::uint64_t seq = kNone;
  std::uint32_t slot = 0;
  static constexpr std::uint64_t kNone = ~std::uint64_t{0};
  bool valid() const { return seq != kNone; }
};

class EventQueue {
 public:
  EventQueue();
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
    std::uint64_t order;  // seq << kSlotBits | slot
    bool operator<(const Key& o) const { return time != o.time ? time < o.time : order < o.order; }
  };
  struct Slot {
    Callback callback;
    std::uint64_t seq = EventId::kNone;  // sequence of the event holding the slot
    bool pending = false;                // false once run or cancelled
  };
  static constexpr int kSlotBits = 24;
  static constexpr std::uint64_t kSlotMask = (std::uint64_t{1} << kSlotBits) - 1;

  Key& key(std::size_t i) { return keys_[i + kPad]; }
  std::uint32_t acquire_slot();
  void free_slot(std::uint32_t slot);
  void push_key(Key k);
  void pop_key();
  void drop_cancelled_top();
  void compact();
  void grow();

  // The heap lives at keys_[kPad ...]: with 3 padding keys, node i's children 4i+1..4i+4
  // start at a 64-byte boundary.
  static constexpr std::size_t kPad = 3;
  struct alignas(64) Line {
    Key k[4];
  };
  std::unique_ptr<Line[]> storage_;
  Key* keys_ = nullptr;
  std::size_t capacity_ = 0;  // keys the heap can hold
  std::size_t size_ = 0;      // keys in the heap, cancelled ones included

  std::vector<Slot> slots_;
  std::vector<std::uint32_t> free_slots_;
  std::uint64_t next_seq_ = 0;
  std::size_t live_ = 0;
};

}  // namespace megasim
