// ZeRO-3 / FSDP passes timed by hand (step/sharded_pass.h). Units: microseconds.
#include <doctest/doctest.h>

#include <utility>
#include <vector>

#include "step/sharded_pass.h"

using megasim::Time;
using megasim::step::ShardedSegment;
using megasim::step::sharded_pass_time;
using Kind = ShardedSegment::Kind;

namespace {

Time us(double v) {
  return Time::from_us(v);
}

// A forward pass of three layers: gather 4, compute 10, each.
std::vector<ShardedSegment> forward() {
  std::vector<ShardedSegment> s;
  for (int l = 0; l < 3; ++l) {
    s.push_back({Kind::kGather, us(4), us(0), us(0), {}});
    s.push_back({Kind::kCompute, us(10), us(0), us(0), {}});
  }
  return s;
}

}  // namespace

TEST_CASE("sharded pass: no prefetch puts every gather in line with compute") {
  // 3 × (4 + 10) = 42, of which 12 waiting for gathers, none hidden.
  const auto t = sharded_pass_time(forward(), 0, false);
  CHECK(t.total == us(42));
  CHECK(t.compute == us(30));
  CHECK(t.dp_exposed == us(12));
  CHECK(t.dp_hidden == us(0));
}

TEST_CASE("sharded pass: one layer of prefetch hides the gathers behind the previous layer") {
  // Gather 0 at 0–4 (exposed); compute 0 at 4–14, gather 1 issued at 4, 4–8; compute 1 at
  // 14–24, gather 2 at 14–18; compute 2 at 24–34. Exposed 4, hidden 8.
  const auto t = sharded_pass_time(forward(), 1, false);
  CHECK(t.total == us(34));
  CHECK(t.dp_exposed == us(4));
  CHECK(t.dp_hidden == us(8));
}

TEST_CASE("sharded pass: its timeline keeps where the compute, the collectives and the host ran") {
  // The prefetched forward above, each gather issued with 1 of host time first and tagged with
  // its layer: host 0–1, gather 0 1–5; compute 0 queued once the host has issued gather 1
  // (host 5–6, gather 6–10): 6–16; compute 1 after gather 2's issue (host 16–17, 17–21):
  // 17–27; compute 2 27–37. Compute spans that touch are one; gathers of different layers are
  // not merged.
  auto s = forward();
  int layer = 0;
  for (auto& seg : s) {
    if (seg.kind != Kind::kGather) continue;
    seg.host = us(1);
    seg.layer = layer++;
    seg.bytes = megasim::Bytes(1000.0);
  }
  megasim::step::ShardedTimeline timeline;
  const auto t = sharded_pass_time(s, 1, false, 0, 1.0, false, &timeline);
  CHECK(t.total == us(37));
  CHECK(timeline.total == us(37));
  REQUIRE(timeline.compute.size() == 2);
  CHECK(timeline.compute[0] == std::pair{us(6), us(16)});
  CHECK(timeline.compute[1] == std::pair{us(17), us(37)});
  REQUIRE(timeline.dp.size() == 3);
  for (int l = 0; l < 3; ++l) {
    const auto& d = timeline.dp[static_cast<std::size_t>(l)];
    CHECK(d.work == megasim::step::DpWork::kAllGather);
    CHECK(d.layer == l);
    CHECK(d.bytes.value() == 1000.0);
    CHECK(d.calls == 1);
    CHECK(d.end - d.start == us(4));
  }
  CHECK(timeline.dp[1].start == us(6));
  REQUIRE(timeline.host.size() == 3);
  CHECK(timeline.host[1] == std::pair{us(5), us(6)});
  CHECK(timeline.host[2] == std::pair{us(16), us(17)});
  // Without a timeline the same pass takes the same time.
  CHECK(sharded_pass_time(s, 1, false).total == t.total);
}

TEST_CASE("sharded pass: gathers longer than compute set the pace") {
  // Gathers of 15 beside compute of 10, prefetch 1: gather 0 0–15, compute 0 15–25, gather 1
  // 15–30, compute 1 30–40, gather 2 30–45, compute 2 45–55. 55 = 3 × 15 + 10.
  auto s = forward();
  for (auto& seg : s) {
    if (seg.kind == Kind::kGather) seg.time = us(15);
  }
  const auto t = sharded_pass_time(s, 1, false);
  CHECK(t.total == us(55));
  CHECK(t.dp_exposed == us(25));
  CHECK(t.dp_hidden == us(20));
}

TEST_CASE("sharded pass: a blocking reduce holds the host, a free one runs beside compute") {
  // Backward of three layers: compute 10 then a reduce-scatter of 12 (gathers left out).
  std::vector<ShardedSegment> s;
  for (int l = 0; l < 3; ++l) {
    s.push_back({Kind::kCompute, us(10), us(0), us(0), {}});
    s.push_back({Kind::kScatter, us(12), us(0), us(0), {}});
  }
  // Free: scatters at 10–22, 22–34, 34–46; compute 0–10, 10–20, 20–30. Total 46.
  CHECK(sharded_pass_time(s, 1, false).total == us(46));
  // Blocking: scatter 0 10–22; scatter 1 issued when compute 1 ends (20) and scatter 0 is done
  // (22): 22–34, and the host, waiting for scatter 0 until 22, queues compute 2 at 22: 22–32;
  // scatter 2 issued at max(32, 34) = 34: 34–46. Total 46 again, but compute 2 starts later.
  const auto b = sharded_pass_time(s, 1, true);
  CHECK(b.total == us(46));
  CHECK(b.compute == us(30));
  // In line (prefetch 0): 3 × (10 + 12) = 66.
  CHECK(sharded_pass_time(s, 0, false).total == us(66));

  SUBCASE("the held host shows once the last layer's compute is long") {
    // Compute 2 of 50: free, it runs 20–70 and scatter 2 70–82; blocking, it is queued at 22
    // (the host held by scatter 0), runs 22–72, and scatter 2 runs 72–84.
    s[4].time = us(50);
    CHECK(sharded_pass_time(s, 1, false).total == us(82));
    CHECK(sharded_pass_time(s, 1, true).total == us(84));
  }
}

TEST_CASE("sharded pass: the host time of issuing a gather holds the compute it has not queued") {
  // The three-layer forward, each gather taking the host 3 to issue.
  auto s = forward();
  for (auto& seg : s) {
    if (seg.kind == Kind::kGather) seg.host = us(3);
  }
  // In line: 3 × (3 + 4 + 10) = 51; the host time is DP time, all exposed.
  const auto line = sharded_pass_time(s, 0, false);
  CHECK(line.total == us(51));
  CHECK(line.dp_exposed == us(21));
  CHECK(line.dp_hidden == us(0));
  // Prefetch 1: gather 0 issued 0–3, runs 3–7; compute 0 could start at 7 but the host first
  // issues gather 1 (7–10, runs 10–14), so compute 0 runs 10–20; at 20 the host issues gather 2
  // (20–23, runs 23–27), compute 1 runs 23–33; compute 2 runs 33–43. Exposed 13 = 3 × 3 of
  // host time and gather 0's 4; hidden 8 (gathers 1 and 2).
  const auto ahead = sharded_pass_time(s, 1, false);
  CHECK(ahead.total == us(43));
  CHECK(ahead.dp_exposed == us(13));
  CHECK(ahead.dp_hidden == us(8));
}

TEST_CASE("sharded pass: a gather's per-rank copy loop runs beside it and holds the host") {
  // The three-layer forward, prefetch 1; each gather takes the host 1 before its launch and 6
  // after it (the library's copies out of the flat buffer, beside the 4 of the collective).
  auto s = forward();
  for (auto& seg : s) {
    if (seg.kind != Kind::kGather) continue;
    seg.host = us(1);
    seg.host_tail = us(6);
  }
  // Gather 0: host 0–1, collective 1–5, loop 1–7: in at 7. The host issues gather 1 at 7: 7–8,
  // collective 8–12, loop 8–14; compute 0 runs 14–24. Gather 2 at 24: 24–25, 25–29, loop
  // 25–31; compute 1 31–41; compute 2 41–51 (gather 2 in at 31).
  const auto t = sharded_pass_time(s, 1, false);
  CHECK(t.total == us(51));
  CHECK(t.dp_exposed == us(21));
  // The same with the loop before the launch, the collective no longer beside it: gather 0 in
  // at 7 + 4 = 11; the host issues gather 1 11–18 (collective 18–22), compute 0 18–28; gather 2
  // issued at 28: host 28–35, collective 35–39; compute 1 35–45; compute 2 45–55.
  for (auto& seg : s) {
    if (seg.kind != Kind::kGather) continue;
    seg.host = us(7);
    seg.host_tail = us(0);
  }
  CHECK(sharded_pass_time(s, 1, false).total == us(55));
}

TEST_CASE("sharded pass: a reduce-scatter's host time holds the compute the host queues next") {
  // Backward of three layers: compute 10, then a scatter of 12 whose inputs take the host 5.
  std::vector<ShardedSegment> s;
  for (int l = 0; l < 3; ++l) {
    s.push_back({Kind::kCompute, us(10), us(0), us(0), {}});
    s.push_back({Kind::kScatter, us(12), us(5), us(0), {}});
  }
  // Blocking: scatter 0's host 10–15, runs 15–27; compute 1 queued at 15: 15–25. Scatter 1
  // issued at max(25, 27) = 27: host 27–32, runs 32–44; compute 2 queued at 32 (the host
  // waited for scatter 0 till 27, then built scatter 1's inputs): 32–42. Scatter 2 issued at
  // max(42, 44) = 44: host 44–49, runs 49–61.
  const auto b = sharded_pass_time(s, 1, true);
  CHECK(b.total == us(61));
  CHECK(b.dp_exposed == us(31));
  // Not blocking: the host still builds each scatter's inputs before it queues more compute.
  // Scatter 0: host 10–15, runs 15–27; compute 1 15–25; scatter 1 host 25–30, runs 30–42;
  // compute 2 30–40; scatter 2 host 40–45, runs 45–57.
  CHECK(sharded_pass_time(s, 1, false).total == us(57));
}

namespace {

// A scatter segment of the given tensors, its time and host the sums, as pricing builds it.
ShardedSegment scatter(const std::vector<ShardedSegment::Tensor>& tensors) {
  ShardedSegment s{Kind::kScatter, us(0), us(0), us(0), tensors};
  for (const auto& t : tensors) {
    s.time += t.time;
    s.host += t.host;
  }
  return s;
}

}  // namespace

TEST_CASE(
    "sharded pass: within a reduce bucket the next tensor's host loop runs beside a collective") {
  // The last layer's backward: compute 10, then two gradients of 100 elements each reduced
  // in one bucket (500 elements): tensor 1 host 5 then collective 8, tensor 2 host 5 then 6.
  std::vector<ShardedSegment> s{{Kind::kCompute, us(10), us(0), us(0), {}},
                                scatter({{us(8), us(5), 100, us(0), us(0), us(0), us(0)}, {us(6), us(5), 100, us(0), us(0), us(0), us(0)}})};
  // Tensor 1: host 10–15, collective 15–23; tensor 2: host 15–20 (beside collective 1), its
  // collective at max(20, 23) = 23: 23–29. Total 10 + host1 + max(coll1, host2) + coll2 =
  // 10 + 5 + max(8, 5) + 6 = 29.
  CHECK(sharded_pass_time(s, 1, true, 500).total == us(29));
  // Without a bucket size the segment is one reduction, every host loop first: 10 + 10 + 14.
  CHECK(sharded_pass_time(s, 1, true).total == us(34));
  // A host loop longer than the collective before it sets the pace: host 2 of 10 gives
  // 10 + 5 + max(8, 10) + 6 = 31.
  s[1] = scatter({{us(8), us(5), 100, us(0), us(0), us(0), us(0)}, {us(6), us(10), 100, us(0), us(0), us(0), us(0)}});
  CHECK(sharded_pass_time(s, 1, true, 500).total == us(31));
}

TEST_CASE("sharded pass: between reduce buckets a blocking reduce holds the host") {
  // Backward: compute 10, the same two gradients (100 elements each), then the next layer's
  // compute 10. A bucket of 150 elements takes one of them: tensor 2 opens a second bucket.
  std::vector<ShardedSegment> s{{Kind::kCompute, us(10), us(0), us(0), {}},
                                scatter({{us(8), us(5), 100, us(0), us(0), us(0), us(0)}, {us(6), us(5), 100, us(0), us(0), us(0), us(0)}}),
                                {Kind::kCompute, us(10), us(0), us(0), {}}};
  // Bucket 1: host 10–15, collective 15–23. Bucket 2: the host waits for it (till 23), host
  // 23–28, collective 28–34; compute 1, queued once the host is free, runs 28–38. Total 38.
  const auto two = sharded_pass_time(s, 1, true, 150);
  CHECK(two.total == us(38));
  CHECK(two.compute == us(20));
  // One bucket of 500: tensor 2's loop 15–20 beside collective 1, its collective 23–29;
  // compute 1 20–30. Total 30.
  CHECK(sharded_pass_time(s, 1, true, 500).total == us(30));
  // Not blocking, the host does not wait between buckets: as one bucket, 30.
  CHECK(sharded_pass_time(s, 1, false, 150).total == us(30));
  // A tensor past the bucket size goes alone into a bucket of its own, which the next one
  // closes: 200 then 10 elements in buckets of 150 are two buckets, 38 as above.
  s[1] = scatter({{us(8), us(5), 200, us(0), us(0), us(0), us(0)}, {us(6), us(5), 10, us(0), us(0), us(0), us(0)}});
  CHECK(sharded_pass_time(s, 1, true, 150).total == us(38));
}

TEST_CASE("sharded pass: within a bucket a tensor's copies wait for the collective on the line") {
  // The bucket above, each tensor's host work 5 ending in a copy loop of 5 that issues copies of
  // 5 on the DP line. Tensor 1: host 10–15, its copies 10–15 beside its loop (the line is free),
  // collective 15–23. Tensor 2: host 15–20, its copies wait for collective 1 (23–28), its
  // collective 28–34. Total 34, not the 29 of copies hidden behind every loop.
  std::vector<ShardedSegment> s{{Kind::kCompute, us(10), us(0), us(0), {}},
                                scatter({{us(8), us(5), 100, us(5), us(5), us(0), us(0)},
                                         {us(6), us(5), 100, us(5), us(5), us(0), us(0)}})};
  CHECK(sharded_pass_time(s, 1, true, 500).total == us(34));
  // Copies longer than the loop: tensor 1's copies 10–17, its collective 17–25; tensor 2's
  // copies 25–32, its collective 32–38.
  s[1] = scatter({{us(8), us(5), 100, us(5), us(7), us(0), us(0)}, {us(6), us(5), 100, us(5), us(7), us(0), us(0)}});
  CHECK(sharded_pass_time(s, 1, true, 500).total == us(38));
}

TEST_CASE("sharded pass: compute beside the DP line runs slower by the interference factor") {
  // Prefetch 1, slowdown 1.5. Gather 0 at 0–4; compute 0 from 4, gather 1 at 4–8 beside it:
  // 4 µs of time do 4/1.5 of its work, the other 10 − 8/3 alone, so it ends at 15⅓. Compute 1
  // likewise beside gather 2 (15⅓–19⅓), ending at 26⅔; compute 2 alone, ending at 36⅔.
  const auto t = sharded_pass_time(forward(), 1, false, 0, 1.5);
  CHECK(t.total.to_us() == doctest::Approx(36.0 + 2.0 / 3.0).epsilon(1e-4));
  CHECK(t.compute.to_us() == doctest::Approx(32.0 + 2.0 / 3.0).epsilon(1e-4));
  CHECK(t.dp_exposed.to_us() == doctest::Approx(4.0).epsilon(1e-3));
  // Without the factor, the same pass as before.
  CHECK(sharded_pass_time(forward(), 1, false, 0, 1.0).total == us(34));
  // Half of each compute segment shielded (TP exchanges, TP-paired GEMMs): the segment is
  // slowed 1 + 0.5 × 0.5 = 1.25 beside the line. Compute 0 does 3.2 of its work in 4–8 and
  // ends at 14.8, compute 1 at 25.6, compute 2 at 35.6.
  auto half = forward();
  for (auto& seg : half) {
    if (seg.kind == Kind::kCompute) seg.shielded = us(5);
  }
  CHECK(sharded_pass_time(half, 1, false, 0, 1.5).total.to_us() ==
        doctest::Approx(35.6).epsilon(1e-4));
}

TEST_CASE("sharded pass: where gathers set the pace, slowed compute ends inside them") {
  // Gathers of 15, slowdown 1.2: each of the first two computes takes 12 beside a gather of
  // 15 and ends inside it, so the pass still ends at 3 × 15 + 10 = 55; compute is 34 of it.
  auto s = forward();
  for (auto& seg : s) {
    if (seg.kind == Kind::kGather) seg.time = us(15);
  }
  const auto t = sharded_pass_time(s, 1, false, 0, 1.2);
  CHECK(t.total == us(55));
  CHECK(t.compute == us(34));
  CHECK(t.dp_exposed == us(21));
  // Slowed twice over, compute outlasts each gather: 15 beside it, then 2.5 alone.
  const auto slow = sharded_pass_time(s, 1, false, 0, 2.0);
  CHECK(slow.total == us(60));
}

TEST_CASE("sharded pass: the reduce buffer's copies hold compute, its division the DP line") {
  // DeepSpeed's contiguous_gradients: the same bucket of two gradients (host 5 and 5,
  // collectives 8 and 6), each first copied into the buffer on the compute stream (2 each),
  // the bucket's division on the DP line at its start. Compute 0–10, copies to 14; the host's
  // loops 14–19 and 19–24.
  auto tensors = [](double divide) {
    return scatter({{us(8), us(5), 100, us(0), us(0), us(2), us(divide)},
                    {us(6), us(5), 100, us(0), us(0), us(2), us(divide)}});
  };
  // A division of 3 (14–17) ends within the first loop: collectives 19–27 and 27–33.
  std::vector<ShardedSegment> s{{Kind::kCompute, us(10), us(0), us(0), {}}, tensors(3)};
  auto t = sharded_pass_time(s, 1, true, 500);
  CHECK(t.total == us(33));
  CHECK(t.compute == us(10));
  // The division is DP work all the same: collectives 14 and host loops 10, copies 4 and the
  // division 3, of which 23 exposed, 8 hidden (5 without the division).
  CHECK(t.dp_exposed == us(23));
  CHECK(t.dp_hidden == us(8));
  // Only the tensor that opens the bucket carries its division: one of 7 (14–21) delays the
  // first collective to 21–29, the second to 29–35.
  s[1] = tensors(7);
  CHECK(sharded_pass_time(s, 1, true, 500).total == us(35));
  // Each tensor in a bucket of its own: two divisions, the second after the host waited for
  // the first bucket (29): division 29–36, host 29–34, collective 36–42.
  CHECK(sharded_pass_time(s, 1, true, 150).total == us(42));
}

TEST_CASE("sharded pass: a fetch that synchronises the device waits for the scatters before it") {
  // Backward of two layers: compute 10, its reduce-scatter 12, the next layer's gather 4
  // (prefetched) and compute 10. Free: gather 1 at 0–4, scatter 0 at 10–22 beside compute 1
  // at 10–20; total 22. DeepSpeed's fetch ends in torch.cuda.synchronize(): compute 1 waits
  // for scatter 0, 22–32.
  std::vector<ShardedSegment> s;
  s.push_back({Kind::kCompute, us(10), us(0), us(0), {}});
  s.push_back({Kind::kScatter, us(12), us(0), us(0), {}});
  s.push_back({Kind::kGather, us(4), us(0), us(0), {}});
  s.push_back({Kind::kCompute, us(10), us(0), us(0), {}});
  CHECK(sharded_pass_time(s, 1, true, 0, 1.0, false).total == us(22));
  const auto synced = sharded_pass_time(s, 1, true, 0, 1.0, true);
  CHECK(synced.total == us(32));
  CHECK(synced.dp_exposed == us(12));
  // A unit with nothing gathered (a norm's persistent parameters) fetches nothing: no wait.
  s[2].time = us(0);
  CHECK(sharded_pass_time(s, 1, true, 0, 1.0, true).total == us(22));
}
