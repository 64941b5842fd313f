#include <doctest/doctest.h>

#include <stdexcept>

#include "engine/time.h"
#include "engine/units.h"

using megasim::Time;

TEST_CASE("time: conversions round to the nearest nanosecond once") {
  CHECK(Time::from_seconds(1.0).ns() == 1'000'000'000);
  CHECK(Time::from_us(1.5).ns() == 1500);
  CHECK(Time::from_seconds(0.4e-9).ns() == 0);  // 0.4 ns rounds down
  CHECK(Time::from_seconds(0.6e-9).ns() == 1);  // 0.6 ns rounds up
  CHECK(Time::from_seconds(-0.6e-9).ns() == -1);
  CHECK(Time::from_ms(2.0).to_us() == doctest::Approx(2000.0));
  CHECK(Time::from_hours(1.0).to_seconds() == doctest::Approx(3600.0));
}

TEST_CASE("time: values outside the clock range are refused and not wrapped") {
  CHECK_THROWS_AS(Time::from_seconds(1e300), std::range_error);
  CHECK_THROWS_AS(Time::from_seconds(-1e300), std::range_error);
  CHECK_THROWS_AS(Time::from_seconds(0.0 / 0.0 * 0.0 + __builtin_nan("")), std::range_error);
  // 292 years fit.
  CHECK(Time::from_hours(24.0 * 365 * 292).to_days() == doctest::Approx(365.0 * 292));
}

TEST_CASE("time: a real count of nanoseconds rounds to the nearest or up, inside the range") {
  CHECK(Time::from_ns_rounded(2.5).ns() == 3);  // half away from zero, as std::llround
  CHECK(Time::from_ns_rounded(-2.5).ns() == -3);
  CHECK(Time::from_ns_rounded(2.49).ns() == 2);
  CHECK(Time::from_ns_up(2.01).ns() == 3);
  CHECK(Time::from_ns_up(2.0).ns() == 2);
  CHECK(Time::from_ns_up(-2.5).ns() == -2);
  // A flow's finish or a pass's time left past the clock was cast unchecked (undefined
  // behaviour) until 2026-12-05; now refused as from_seconds refuses it.
  CHECK_THROWS_AS(Time::from_ns_up(1e19), std::range_error);
  CHECK_THROWS_AS(Time::from_ns_rounded(-1e19), std::range_error);
  CHECK_THROWS_AS(Time::from_ns_up(__builtin_nan("")), std::range_error);
  CHECK_THROWS_AS(Time::from_ns_rounded(__builtin_inf()), std::range_error);
}

TEST_CASE("time: arithmetic and ordering") {
  const Time a = Time::from_ns(10), b = Time::from_ns(25);
  CHECK((a + b).ns() == 35);
  CHECK((b - a).ns() == 15);
  CHECK(a < b);
  CHECK((a * 3).ns() == 30);
}

TEST_CASE("time: scaling by a real factor rounds to the nearest nanosecond once") {
  const Time t = Time::from_ns(10);
  CHECK((t * 1.5).ns() == 15);
  CHECK((t * 0.04).ns() == 0);   // 0.4 ns rounds down
  CHECK((t * 0.06).ns() == 1);   // 0.6 ns rounds up
  CHECK((t * 0.26).ns() == 3);
  CHECK((t * -0.26).ns() == -3);
  CHECK((t / 3.0).ns() == 3);
  CHECK((t / 1.6).ns() == 6);
  // The same nanosecond as the seconds round trip it replaced, for every product.
  for (std::int64_t ns : {1LL, 7LL, 999LL, 123'456'789LL, 12'530'266'552LL}) {
    for (double k : {1.0 / 6.0, 0.1, 1.05, 1.5, 2.0 / 3.0, 3.7}) {
      const Time x = Time::from_ns(ns);
      CHECK((x * k) == Time::from_seconds(x.to_seconds() * k));
    }
  }
  CHECK((t * std::int64_t{3}).ns() == 30);  // an integer count stays exact
  CHECK_THROWS_AS(Time::from_seconds(1e9) * 1e12, std::range_error);
}

TEST_CASE("units: transfer time of 1 GB at 100 Gbit/s is 80 ms") {
  using namespace megasim;
  CHECK(transfer_time(Bytes(1e9), gbit_per_s(100)).ns() == 80'000'000);
  CHECK(compute_time(Flops(312e12), tflop_per_s(312)).ns() == 1'000'000'000);
}
