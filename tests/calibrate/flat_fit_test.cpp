// An alpha-beta fit needs a rate the rows show: times that do not grow measurably with the
// size give none (calibrate/fit.cpp), rather than a bandwidth of rounding noise.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "calibrate/fit.h"

using namespace megasim;

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
