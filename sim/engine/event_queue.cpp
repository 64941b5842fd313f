#include "engine/event_queue.h"

#include <algorithm>
#include <cassert>
#include <utility>

namespace megasim {
namespace {
constexpr std::size_t kArity = 4;
// Compaction is worth its O(n) pass only once the heap holds this many stale keys.
constexpr std::size_t kMinStaleToCompact = 1024;
}  // namespace

std::uint32_t EventQueue::acquire_slot() {
  if (!free_slots_.empty()) {
    const std::uint32_t s = free_slots_.back();
    free_slots_.pop_back();
    return s;
  }
  assert(slots_.size() < EventId::kNone && "event slot pool exhausted");
  slots_.emplace_back();
  return static_cast<std::uint32_t>(slots_.size() - 1);
}

void EventQueue::release_slot(std::uint32_t slot) {
  Slot& s = slots_[slot];
  s.callback = nullptr;
  s.busy = false;
  ++s.generation;
  free_slots_.push_back(slot);
  --live_;
}

bool EventQueue::is_live(const Key& k) const {
  const Slot& s = slots_[k.slot];
  return s.busy && s.generation == k.generation;
}

EventId EventQueue::schedule(Time at, Callback callback) {
  const std::uint32_t slot = acquire_slot();
  Slot& s = slots_[slot];
  s.callback = std::move(callback);
  s.busy = true;
  ++live_;
  push_key(Key{at.ns(), next_seq_++, slot, s.generation});
  return EventId{slot, s.generation};
}

bool EventQueue::pending(EventId id) const {
  return id.valid() && id.slot < slots_.size() && slots_[id.slot].busy &&
         slots_[id.slot].generation == id.generation;
}

bool EventQueue::cancel(EventId id) {
  if (!pending(id)) return false;
  release_slot(id.slot);
  const std::size_t stale = heap_.size() - live_;
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
  drop_stale_top();
  return heap_.empty() ? Time::max() : Time::from_ns(heap_.front().time);
}

Time EventQueue::pop(Callback& out) {
  drop_stale_top();
  assert(!heap_.empty() && "pop on an empty event queue");
  const Key top = heap_.front();
  pop_key();
  out = std::move(slots_[top.slot].callback);
  release_slot(top.slot);
  return Time::from_ns(top.time);
}

void EventQueue::drop_stale_top() {
  while (!heap_.empty() && !is_live(heap_.front())) pop_key();
}

void EventQueue::push_key(const Key& k) {
  std::size_t i = heap_.size();
  heap_.push_back(k);
  while (i > 0) {
    const std::size_t parent = (i - 1) / kArity;
    if (!(k < heap_[parent])) break;
    heap_[i] = heap_[parent];
    i = parent;
  }
  heap_[i] = k;
}

void EventQueue::pop_key() {
  const Key last = heap_.back();
  heap_.pop_back();
  const std::size_t n = heap_.size();
  if (n == 0) return;
  std::size_t i = 0;
  for (;;) {
    const std::size_t first = i * kArity + 1;
    if (first >= n) break;
    const std::size_t end = std::min(first + kArity, n);
    std::size_t best = first;
    for (std::size_t c = first + 1; c < end; ++c) {
      if (heap_[c] < heap_[best]) best = c;
    }
    if (!(heap_[best] < last)) break;
    heap_[i] = heap_[best];
    i = best;
  }
  heap_[i] = last;
}

void EventQueue::compact() {
  std::vector<Key> live;
  live.reserve(live_);
  for (const Key& k : heap_) {
    if (is_live(k)) live.push_back(k);
  }
  heap_.clear();
  for (const Key& k : live) push_key(k);
}

}  // namespace megasim
