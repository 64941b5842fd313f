// The slowest of N GPUs (hw::FleetVariation): the order statistic it rests on, against
// tabulated values, and how it grows with the job.
#include <doctest/doctest.h>

#include <cmath>

#include "hw/device_profile.h"

using namespace megasim;

TEST_CASE("expected largest of n standard normals matches the tables") {
  CHECK(hw::expected_max_of_normals(1) == 0.0);
  // n = 2: 1/sqrt(pi); n = 10, 100, 1000: Harter (1961), Table of expected values of normal
  // order statistics.
  CHECK(hw::expected_max_of_normals(2) == doctest::Approx(1.0 / std::sqrt(std::acos(-1.0))).epsilon(1e-6));
  CHECK(hw::expected_max_of_normals(10) == doctest::Approx(1.53875).epsilon(1e-4));
  CHECK(hw::expected_max_of_normals(100) == doctest::Approx(2.50759).epsilon(1e-4));
  CHECK(hw::expected_max_of_normals(1000) == doctest::Approx(3.24144).epsilon(1e-4));
}

TEST_CASE("the slowest GPU grows slowly with the job, and not at all without a spread") {
  hw::FleetVariation f;
  CHECK(f.slowest_of(12288) == 0.0);
  f.sigma = 0.015;
  const double at_8 = f.slowest_of(8), at_512 = f.slowest_of(512), at_12288 = f.slowest_of(12288);
  CHECK(at_8 > 0.0);
  CHECK(at_8 < at_512);
  CHECK(at_512 < at_12288);
  // Logarithmic growth: 1,536 times the GPUs costs well under twice the slowdown.
  CHECK(at_12288 < 2.0 * at_512);
  CHECK(at_12288 == doctest::Approx(0.015 * hw::expected_max_of_normals(12288)));
}
