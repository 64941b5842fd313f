#include "engine/event_queue.h"

#include <algorithm>
#include <cassert>
#include <limits>
#include <utility>

namespace megasim {
namespace {
// Compaction is worth its O(n) pass only once this many keys are cancelled.
constexpr std::size_t kMinStaleToCompact = 1024;
// A new row of buckets gets about this many keys per bucket, within these bounds.
constexpr std::size_t kKeysPerBucket = 256;
constexpr std::size_t kMinBuckets = 16;
constexpr std::size_t kMaxBuckets = 4096;
// How far ahead of the pop position the slots of upcoming keys are prefetched.
constexpr std::size_t kPrefetchDistance = 8;

int ceil_log2(std::uint64_t x) { return x <= 1 ? 0 : 64 - __builtin_clzll(x - 1); }
}  // namespace

EventQueue::EventQueue() : horizon_(std::numeric_limits<std::int64_t>::min()) {}

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
  slots_[slot].seq = EventId::kNone;
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
  insert(Key{at.ns(), seq << kSlotBits | slot});
  return EventId{seq, slot};
}

void EventQueue::insert(const Key& k) {
  ++keys_;
  if (k.time < horizon_) {
    // Usually at or near the back (the clock is close): a short move.
    near_.insert(std::upper_bound(near_.begin(), near_.end(), k, std::greater<Key>()), k);
    return;
  }
  const std::uint64_t offset = static_cast<std::uint64_t>(k.time - row_base_) >> shift_;
  if (k.time >= row_base_ && offset < buckets_.size()) {
    assert(offset >= next_bucket_ && "key scheduled before the last key popped");
    buckets_[offset].push_back(k);
  } else {
    overflow_.push_back(k);
  }
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
  // The key stays and frees the slot when it surfaces (or at compaction).
  const std::size_t stale = keys_ - live_;
  if (stale >= kMinStaleToCompact && stale > live_) compact();
  return true;
}

EventId EventQueue::reschedule(EventId id, Time at) {
  if (!pending(id)) return EventId{};
  Callback cb = std::move(slots_[id.slot].callback);
  cancel(id);
  return schedule(at, std::move(cb));
}

bool EventQueue::settle() {
  for (;;) {
    while (!near_.empty() && !slots_[slot_of(near_.back())].pending) {
      free_slot(slot_of(near_.back()));
      near_.pop_back();
      --keys_;
    }
    if (!near_.empty()) return true;
    while (next_bucket_ < buckets_.size() && buckets_[next_bucket_].empty()) ++next_bucket_;
    if (next_bucket_ < buckets_.size()) {
      near_.swap(buckets_[next_bucket_]);  // near_ was empty: the bucket keeps its capacity
      std::sort(near_.begin(), near_.end(), std::greater<Key>());
      ++next_bucket_;
      // The next bucket's start, saturated: a row reaching past the clock's end (keys some
      // 2^62 ns away) wrapped the horizon negative, and a later key went to a spent bucket.
      const std::uint64_t ahead = static_cast<std::uint64_t>(next_bucket_) << shift_;
      const auto room =
          static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max() - row_base_);
      horizon_ = ahead > room ? std::numeric_limits<std::int64_t>::max()
                              : row_base_ + static_cast<std::int64_t>(ahead);
      continue;
    }
    if (overflow_.empty()) return false;
    rebuild_row();
  }
}

void EventQueue::rebuild_row() {
  std::int64_t lo = overflow_.front().time, hi = lo;
  for (const Key& k : overflow_) {
    lo = std::min(lo, k.time);
    hi = std::max(hi, k.time);
  }
  const std::size_t count =
      std::clamp<std::size_t>(overflow_.size() / kKeysPerBucket, kMinBuckets, kMaxBuckets);
  const std::size_t buckets = std::size_t{1} << ceil_log2(count);
  const auto span = static_cast<std::uint64_t>(hi - lo) + 1;
  shift_ = ceil_log2((span + buckets - 1) / buckets);
  row_base_ = lo;
  horizon_ = lo;
  next_bucket_ = 0;
  for (auto& b : buckets_) b.clear();
  buckets_.resize(buckets);
  std::vector<Key> spill;
  spill.swap(overflow_);
  for (const Key& k : spill) {
    buckets_[static_cast<std::uint64_t>(k.time - lo) >> shift_].push_back(k);
  }
  spill.clear();
  overflow_.swap(spill);  // keep the capacity
}

Time EventQueue::next_time() {
  return settle() ? Time::from_ns(near_.back().time) : Time::max();
}

Time EventQueue::pop(Callback& out) {
  Time when;
  const bool found = pop_until(Time::max(), when, out);
  assert(found && "pop on an empty event queue");
  (void)found;
  return when;
}

bool EventQueue::pop_until(Time limit, Time& when, Callback& out) {
  if (!settle() || near_.back().time > limit.ns()) return false;
  const Key top = near_.back();
  near_.pop_back();
  --keys_;
  if (near_.size() > kPrefetchDistance) {
    __builtin_prefetch(&slots_[slot_of(near_[near_.size() - kPrefetchDistance])]);
  }
  const std::uint32_t slot = slot_of(top);
  Slot& s = slots_[slot];
  out = std::move(s.callback);
  s.pending = false;
  --live_;
  free_slot(slot);
  when = Time::from_ns(top.time);
  return true;
}

void EventQueue::compact() {
  const auto keep = [this](std::vector<Key>& keys) {
    std::size_t kept = 0;
    for (const Key& k : keys) {
      if (slots_[slot_of(k)].pending) {
        keys[kept++] = k;
      } else {
        free_slot(slot_of(k));
      }
    }
    keys.resize(kept);
  };
  keep(near_);  // filtering keeps the order
  for (auto& b : buckets_) keep(b);
  keep(overflow_);
  keys_ = live_;
}

}  // namespace megasim
