#include "engine/event_queue.h"

#include <algorithm>
#include <cassert>
#include <utility>

namespace megasim {
namespace {
constexpr std::size_t kArity = 4;
// Compaction is worth its O(n) pass only once the heap holds this many cancelled keys.
constexpr std::size_t kMinStaleToCompact = 1024;
}  // namespace

EventQueue::EventQueue() { grow(); }

void EventQueue::grow() {
  const std::size_t new_capacity = capacity_ == 0 ? 1021 : capacity_ * 2 + kPad;
  const std::size_t lines = (new_capacity + kPad + 3) / 4;
  std::unique_ptr<Line[]> bigger(new Line[lines]);
  Key* new_keys = &bigger[0].k[0];
  if (size_) std::copy(keys_ + kPad, keys_ + kPad + size_, new_keys + kPad);
  storage_ = std::move(bigger);
  keys_ = new_keys;
  capacity_ = lines * 4 - kPad;
}

std::uint32_t EventQueue::acquire_slot() {
  if (!free_slots_.empty()) {
    const std::uint32_t s = free_slots_.back();
    free_slots_.pop_back();
    return s;
  }
  assert(slots_.size() < kSlotMask && "more than 2^24 events pending");
  slots_.emplace_back();
  return static_cast<std::uint32_t>(slots_.size() - 1);
}

void EventQueue::free_slot(std::uint32_t slot) {
  Slot& s = slots_[slot];
  s.seq = EventId::kNone;
  free_slots_.push_back(slot);
}

EventId EventQueue::schedule(Time at, Callback callback) {
  const std::uint32_t slot = acquire_slot();
  const std::uint64_t seq = next_seq_++;
  assert(seq < (std::uint64_t{1} << (64 - kSlotBits)) && "event sequence space exhausted");
  Slot& s = slots_[slot];
  s.callback = std::move(callback);
  s.seq = seq;
  s.pending = true;
  ++live_;
  push_key(Key{at.ns(), seq << kSlotBits | slot});
  return EventId{seq, slot};
}

bool EventQueue::pending(EventId id) const {
  return id.valid() && id.slot < slots_.size() && slots_[id.slot].seq == id.seq &&
         slots_[id.slot].pending;
}

bool EventQueue::cancel(EventId id) {
  if (!pending(id)) return false;
  Slot& s = slots_[id.slot];
  s.pending = false;
  s.callback.reset();
  --live_;
  // The key stays in the heap and frees the slot when it surfaces (or at compaction).
  const std::size_t stale = size_ - live_;
  if (stale >= kMinStaleToCompact && stale > live_) compact();
  return true;
}

EventId EventQueue::reschedule(EventId id, Time at) {
  if (!pending(id)) return EventId{};
  Callback cb = std::move(slots_[id.slot].callback);
  cancel(id);
  return schedule(at, std::move(cb));
}

Time EventQueue::next_time() {
  drop_cancelled_top();
  return size_ == 0 ? Time::max() : Time::from_ns(key(0).time);
}

Time EventQueue::pop(Callback& out) {
  drop_cancelled_top();
  assert(size_ > 0 && "pop on an empty event queue");
  const Key top = key(0);
  pop_key();
  const auto slot = static_cast<std::uint32_t>(top.order & kSlotMask);
  Slot& s = slots_[slot];
  out = std::move(s.callback);
  s.pending = false;
  --live_;
  free_slot(slot);
  return Time::from_ns(top.time);
}

void EventQueue::drop_cancelled_top() {
  while (size_ > 0) {
    const auto slot = static_cast<std::uint32_t>(key(0).order & kSlotMask);
    if (slots_[slot].pending) return;
    pop_key();
    free_slot(slot);
  }
}

void EventQueue::push_key(Key k) {
  if (size_ == capacity_) grow();
  std::size_t i = size_++;
  while (i > 0) {
    const std::size_t parent = (i - 1) / kArity;
    if (!(k < key(parent))) break;
    key(i) = key(parent);
    i = parent;
  }
  key(i) = k;
}

void EventQueue::pop_key() {
  const Key last = key(--size_);
  const std::size_t n = size_;
  if (n == 0) return;
  std::size_t i = 0;
  for (;;) {
    const std::size_t first = i * kArity + 1;
    if (first >= n) break;
    std::size_t best = first;
    if (first + kArity <= n) {
      // Full group of four: one cache line.
      if (key(first + 1) < key(best)) best = first + 1;
      if (key(first + 2) < key(best)) best = first + 2;
      if (key(first + 3) < key(best)) best = first + 3;
    } else {
      for (std::size_t c = first + 1; c < n; ++c) {
        if (key(c) < key(best)) best = c;
      }
    }
    if (!(key(best) < last)) break;
    key(i) = key(best);
    i = best;
  }
  key(i) = last;
}

void EventQueue::compact() {
  std::size_t kept = 0;
  for (std::size_t i = 0; i < size_; ++i) {
    const Key k = key(i);
    const auto slot = static_cast<std::uint32_t>(k.order & kSlotMask);
    if (slots_[slot].pending) {
      key(kept++) = k;
    } else {
      free_slot(slot);
    }
  }
  size_ = 0;
  std::vector<Key> live(keys_ + kPad, keys_ + kPad + kept);
  for (const Key& k : live) push_key(k);
}

}  // namespace megasim
