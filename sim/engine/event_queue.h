// The pending-event set of the discrete-event engine.
//
// Events are ordered by (time, insertion sequence): two events at the same time run in the
// order they were scheduled, so a run is reproducible bit for bit. Keys are 16 bytes (time,
// sequence << 24 | slot); callbacks live in a slot pool and never move while pending.
//
// The keys are kept in a calendar of buckets, in the manner of the ladder queue (Tang, Goh and
// Thng, 2005): a short sorted run of the earliest keys (`near_`, popped from its back), a row of
// unsorted buckets of equal power-of-two width after it, and an unsorted overflow beyond. A key
// is appended to its bucket in O(1); a bucket is sorted only when the clock reaches it; when
// the buckets run out, the overflow is spread over a new row sized to it. Every key is thus
// moved a constant number of times, by sequential passes, which is what keeps a queue of a
// million events fast. The slot of each upcoming key is prefetched while the sorted run is
// popped. Cancel is O(1) and lazy (ns-3's m_cancel): the callback is destroyed at once and the
// key is dropped when it surfaces; everything is compacted when cancelled keys outnumber live
// ones.
//
// Limits (asserted): 2^24 events pending at once, 2^40 events scheduled over a queue's life.
// Keys must not precede the last key popped (Simulator guarantees it). Not thread-safe.
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
  // Pops the earliest event into `out` if its time is <= limit; returns false (leaving the
  // queue as it was) when the queue is empty or its earliest event is later.
  bool pop_until(Time limit, Time& when, Callback& out);

 private:
  struct Key {
    std::int64_t time;
    std::uint64_t order;  // seq << kSlotBits | slot
    bool operator<(const Key& o) const { return time != o.time ? time < o.time : order < o.order; }
    bool operator>(const Key& o) const { return o < *this; }
  };
  struct Slot {
    Callback callback;
    std::uint64_t seq = EventId::kNone;  // sequence of the event holding the slot
    bool pending = false;                // false once run or cancelled
  };
  static constexpr int kSlotBits = 24;
  static constexpr std::uint64_t kSlotMask = (std::uint64_t{1} << kSlotBits) - 1;
  static std::uint32_t slot_of(const Key& k) { return static_cast<std::uint32_t>(k.order & kSlotMask); }

  std::uint32_t acquire_slot();
  void free_slot(std::uint32_t slot);
  void insert(const Key& k);
  // Brings the earliest live key to near_.back(); false when none is left.
  bool settle();
  void rebuild_row();
  void compact();

  std::vector<Key> near_;  // sorted descending: back() is the earliest key
  std::int64_t horizon_;   // every key in buckets_/overflow_ has time >= horizon_
  std::vector<std::vector<Key>> buckets_;
  std::int64_t row_base_ = 0;  // bucket i holds times [row_base_ + i << shift_, ... + 1 << shift_)
  int shift_ = 0;
  std::size_t next_bucket_ = 0;  // buckets before it are empty
  std::vector<Key> overflow_;    // times >= row_base_ + buckets_.size() << shift_
  std::size_t keys_ = 0;         // keys held, cancelled ones included

  std::vector<Slot> slots_;
  std::vector<std::uint32_t> free_slots_;
  std::uint64_t next_seq_ = 0;
  std::size_t live_ = 0;
};

}  // namespace megasim
