#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/event_queue.h"
#include "engine/rng.h"

using megasim::Callback;
using megasim::EventId;
using megasim::EventQueue;
using megasim::Time;

namespace {
std::vector<int> drain(EventQueue& q) {
  std::vector<int> order;
  Callback cb;
  while (!q.empty()) {
    q.pop(cb);
    cb();
  }
  return order;
}
}  // namespace

TEST_CASE("event queue: pops in time order") {
  EventQueue q;
  std::vector<int> seen;
  for (int t : {50, 10, 40, 20, 30}) q.schedule(Time::from_ns(t), [&seen, t] { seen.push_back(t); });
  drain(q);
  CHECK(seen == std::vector<int>{10, 20, 30, 40, 50});
}

TEST_CASE("event queue: an event some 2^62 ns away does not hide one scheduled after it") {
  // The row holding a key 9e18 ns away ends past the clock's last value: its horizon wrapped
  // negative, so a key scheduled next went to a spent bucket and never ran (the far one ran
  // first).
  EventQueue q;
  std::vector<std::int64_t> seen;
  const auto at = [&](std::int64_t t) {
    q.schedule(Time::from_ns(t), [&seen, t] { seen.push_back(t); });
  };
  at(1);
  at(9'000'000'000'000'000'000);
  Callback cb;
  q.pop(cb);
  cb();
  CHECK(q.next_time().ns() == 9'000'000'000'000'000'000);  // settles on the far key's bucket
  at(20);
  drain(q);
  CHECK(seen == std::vector<std::int64_t>{1, 20, 9'000'000'000'000'000'000});
}

TEST_CASE("event queue: same-time events run in insertion order (FIFO)") {
  EventQueue q;
  std::vector<int> seen;
  for (int i = 0; i < 100; ++i) q.schedule(Time::from_ns(7), [&seen, i] { seen.push_back(i); });
  q.schedule(Time::from_ns(3), [&seen] { seen.push_back(-1); });
  drain(q);
  REQUIRE(seen.size() == 101);
  CHECK(seen[0] == -1);
  for (int i = 0; i < 100; ++i) CHECK(seen[i + 1] == i);
}

TEST_CASE("event queue: cancel removes exactly the cancelled event") {
  EventQueue q;
  std::vector<int> seen;
  EventId a = q.schedule(Time::from_ns(1), [&seen] { seen.push_back(1); });
  EventId b = q.schedule(Time::from_ns(2), [&seen] { seen.push_back(2); });
  q.schedule(Time::from_ns(3), [&seen] { seen.push_back(3); });
  CHECK(q.cancel(b));
  CHECK_FALSE(q.cancel(b));  // second cancel is a no-op
  CHECK(q.size() == 2);
  CHECK(q.pending(a));
  CHECK_FALSE(q.pending(b));
  drain(q);
  CHECK(seen == std::vector<int>{1, 3});
  CHECK_FALSE(q.cancel(a));  // already ran
}

TEST_CASE("event queue: a stale id does not cancel the event that reused its slot") {
  EventQueue q;
  int ran = 0;
  EventId a = q.schedule(Time::from_ns(1), [] {});
  Callback cb;
  q.pop(cb);  // a ran; its slot is free again
  EventId b = q.schedule(Time::from_ns(2), [&ran] { ++ran; });
  CHECK(b.slot == a.slot);  // slot reused
  CHECK_FALSE(q.cancel(a));
  CHECK_FALSE(q.pending(a));
  CHECK(q.pending(b));
  drain(q);
  CHECK(ran == 1);
}

TEST_CASE("event queue: reschedule moves an event earlier or later") {
  EventQueue q;
  std::vector<int> seen;
  EventId a = q.schedule(Time::from_ns(10), [&seen] { seen.push_back(10); });
  q.schedule(Time::from_ns(20), [&seen] { seen.push_back(20); });
  EventId a2 = q.reschedule(a, Time::from_ns(30));
  CHECK(a2.valid());
  CHECK_FALSE(q.pending(a));
  CHECK(q.next_time() == Time::from_ns(20));
  a2 = q.reschedule(a2, Time::from_ns(5));
  CHECK(q.next_time() == Time::from_ns(5));
  CHECK_FALSE(q.reschedule(a, Time::from_ns(1)).valid());
  drain(q);
  CHECK(seen == std::vector<int>{10, 20});
}

TEST_CASE("event queue: random schedule/cancel agrees with a sorted reference") {
  // Compaction kicks in after 1024 stale keys, so cancel many.
  megasim::Rng rng(42);
  EventQueue q;
  struct Ref { std::int64_t t; int seq; bool live; EventId id; };
  std::vector<Ref> ref;
  std::vector<int> seen;
  for (int i = 0; i < 20000; ++i) {
    const auto t = static_cast<std::int64_t>(rng.below(1000));
    EventId id = q.schedule(Time::from_ns(t), [&seen, i] { seen.push_back(i); });
    ref.push_back({t, i, true, id});
    if (rng.bernoulli(0.6)) {
      auto& victim = ref[rng.below(ref.size())];
      if (victim.live) {
        CHECK(q.cancel(victim.id));
        victim.live = false;
      }
    }
  }
  std::vector<Ref> live;
  for (const auto& r : ref) if (r.live) live.push_back(r);
  std::stable_sort(live.begin(), live.end(), [](const Ref& a, const Ref& b) { return a.t < b.t; });
  CHECK(q.size() == live.size());
  drain(q);
  REQUIRE(seen.size() == live.size());
  for (std::size_t i = 0; i < live.size(); ++i) CHECK(seen[i] == live[i].seq);
}

TEST_CASE("callback: large or non-trivial callables run and are destroyed exactly once") {
  auto counter = std::make_shared<int>(0);
  {
    EventQueue q;
    std::string text(100, 'x');  // forces the heap path
    q.schedule(Time::from_ns(1), [counter, text] { *counter += static_cast<int>(text.size()); });
    EventId cancelled = q.schedule(Time::from_ns(2), [counter] { *counter += 1000; });
    CHECK(counter.use_count() == 3);
    q.cancel(cancelled);
    CHECK(counter.use_count() == 2);  // the cancelled callable is gone at once
    Callback cb;
    q.pop(cb);
    cb();
    cb.reset();
    CHECK(*counter == 100);
    CHECK(counter.use_count() == 1);
    q.schedule(Time::from_ns(3), [counter] {});  // destroyed with the queue, never run
  }
  CHECK(counter.use_count() == 1);
}
