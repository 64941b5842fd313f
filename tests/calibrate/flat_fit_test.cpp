// An alpha-beta fit needs a rate the rows show: times that do not grow measurably with the
// size give none (calibrate/fit.cpp), rather than a bandwidth of rounding noise; an intercept
// the rows would put below zero is held at zero (the bounded solver); and it is fitted on the
// out-of-place rows the measured table answers from.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "calibrate/fit.h"
#include "engine/error.h"

using namespace megasim;

namespace {
// An all-reduce on 8 ranks of one node, `seconds` at `bytes`.
hw::CollectiveMeasurement row(double bytes, double seconds) {
  hw::CollectiveMeasurement m;
  m.op = hw::CollectiveOp::kAllReduce;
  m.ranks = 8;
  m.nodes = 1;
  m.size = Bytes(bytes);
  m.time = Time::from_seconds(seconds);
  return m;
}
}  // namespace

TEST_CASE("alpha-beta fit: flat times give no rate, not one of rounding noise") {
  // A latency-bound log, 8 B to 64 B, its times 30.01 us give or take the printing's last
  // digit: the slope is noise (a whole log printing one time gave 3e13 GB/s, which no profile
  // may hold); here its bandwidth term is 0.03 % of the largest size's time.
  std::vector<hw::CollectiveMeasurement> rows;
  for (int e = 3; e <= 6; ++e) {
    hw::CollectiveMeasurement m;
    m.op = hw::CollectiveOp::kAllReduce;
    m.ranks = 16;
    m.nodes = 2;
    m.size = Bytes(std::ldexp(1.0, e));
    m.time = Time::from_seconds(30.01e-6 + 1e-9 * (e - 3));
    rows.push_back(m);
  }
  CHECK(calibrate::fit_collectives(rows).empty());
}

TEST_CASE("memory fit: flat times are refused, a negative overhead is held at zero") {
  hw::DeviceProfile p;
  p.name = "toy";
  p.hbm_bandwidth = gbyte_per_s(1000.0);
  // A launch-bound table (8 us whatever the size, a little noise) has no bandwidth to fit: the
  // slope is held at zero, not fitted negative, and the fit is refused with a reason.
  std::vector<hw::MemoryMeasurement> flat;
  for (int e = 10; e <= 16; ++e) {
    const double noise = (e % 2 == 0 ? 1.0 : -1.0) * 1e-8 * (17 - e);
    flat.push_back(
        {hw::MemoryKernel::kCopy, Bytes(std::ldexp(1.0, e)), Time::from_seconds(8e-6 + noise)});
  }
  CHECK_THROWS_WITH_AS(calibrate::fit_memory(p, flat), doctest::Contains("does not grow"),
                       InputError);
  // An overhead that would come out negative (time proportional to bytes less a constant) is
  // held at zero and the rate refitted through the origin.
  std::vector<hw::MemoryMeasurement> steep;
  for (int e = 20; e <= 30; e += 2) {
    const double bytes = std::ldexp(1.0, e);
    steep.push_back({hw::MemoryKernel::kCopy, Bytes(bytes),
                     Time::from_seconds(bytes / 0.5e12 * (1.0 - 0.02 * (30 - e) / 10.0))});
  }
  const auto origin = calibrate::fit_memory(p, steep);
  CHECK(origin.params.launch_overhead.to_seconds() == 0.0);
  CHECK(origin.params.bandwidth_efficiency == doctest::Approx(0.5).epsilon(0.03).scale(0));
}

TEST_CASE("alpha-beta fit takes the out-of-place rows, as the measured table answers from them") {
  // The in-place column at 0.7 x the time pulled the bus rate above every out-of-place row's
  // (a reviewer's log, 2026-12-05); a run of in-place rows alone is still fitted on them.
  std::vector<hw::CollectiveMeasurement> rows, in_place_only;
  for (int e = 20; e <= 30; ++e) {
    const double bytes = std::ldexp(1.0, e), t = 10e-6 + 1.75 * bytes / 100e9;
    rows.push_back(row(bytes, t));
    rows.push_back(row(bytes, 0.7 * t));
    rows.back().in_place = true;
    in_place_only.push_back(rows.back());
  }
  const auto fits = calibrate::fit_collectives(rows);
  REQUIRE(fits.size() == 1);
  CHECK(fits[0].bus_bandwidth.value() == doctest::Approx(100e9).epsilon(1e-4));
  CHECK(fits[0].points == 11);
  const auto alone = calibrate::fit_collectives(in_place_only);
  REQUIRE(alone.size() == 1);
  CHECK(alone[0].bus_bandwidth.value() == doctest::Approx(100e9 / 0.7).epsilon(1e-4));
}
