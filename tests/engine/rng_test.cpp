#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "engine/rng.h"

using megasim::Rng;

TEST_CASE("rng: the xoshiro256 stream is pinned for a seed") {
  // Seed 1 through splitmix64, then xoshiro256** (Blackman and Vigna): the first outputs, as
  // an independent transcription of the published algorithms (Python, arbitrary-precision
  // integers masked to 64 bits) gives them. A change here changes every seeded result.
  Rng r(1);
  CHECK(r.next_u64() == 0xb3f2af6d0fc710c5ull);
  CHECK(r.next_u64() == 0x853b559647364ceaull);
  CHECK(r.next_u64() == 0x92f89756082a4514ull);
  // Distributions are ours, so they are pinned too: the top 53 bits over 2^53, then
  // -mean·log1p(-u).
  Rng q(12345);
  CHECK(q.uniform() == 0.74380816315658937);
  CHECK(q.exponential(2.0) == 0.27862881471181217);
}

TEST_CASE("rng: uniform lies in the unit interval with mean 1/2 and variance 1/12") {
  Rng r(3);
  const int n = 200000;
  double sum = 0, sq = 0;
  for (int i = 0; i < n; ++i) {
    const double u = r.uniform();
    REQUIRE(u >= 0.0);
    REQUIRE(u < 1.0);
    sum += u;
    sq += u * u;
  }
  const double mean = sum / n;
  CHECK(mean == doctest::Approx(0.5).epsilon(0.01).scale(0));
  CHECK(sq / n - mean * mean == doctest::Approx(1.0 / 12).epsilon(0.02).scale(0));
}

TEST_CASE("rng: below(n) is unbiased over a small range") {
  Rng r(5);
  std::vector<int> counts(7, 0);
  const int n = 70000;
  for (int i = 0; i < n; ++i) ++counts[r.below(7)];
  for (int c : counts) CHECK(c == doctest::Approx(10000).epsilon(0.05));
}

TEST_CASE("rng: exponential and normal and poisson moments") {
  Rng r(11);
  const int n = 200000;
  double se = 0, sn = 0, sn2 = 0, sp = 0, sp_big = 0;
  for (int i = 0; i < n; ++i) {
    se += r.exponential(3.0);
    const double z = r.normal();
    sn += z;
    sn2 += z * z;
    sp += static_cast<double>(r.poisson(4.0));
    sp_big += static_cast<double>(r.poisson(200.0));
  }
  CHECK(se / n == doctest::Approx(3.0).epsilon(0.02));
  CHECK(std::fabs(sn / n) < 0.01);
  CHECK(sn2 / n == doctest::Approx(1.0).epsilon(0.02));
  CHECK(sp / n == doctest::Approx(4.0).epsilon(0.02));
  CHECK(sp_big / n == doctest::Approx(200.0).epsilon(0.01));
}

TEST_CASE("rng: split streams differ from the parent") {
  Rng r(9);
  Rng child = r.split();
  CHECK(child.next_u64() != r.next_u64());
}
