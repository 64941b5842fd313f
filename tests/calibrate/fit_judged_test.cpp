// calibrate fit's report says when a fit's rms judges nothing (no more readings or rows than
// the figures it solves for) and when the memory-bound line misses its rows by more than a
// fifth: each was reported as any other fit until 2026-12-08.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "calibrate/fit.h"
#include "toy_profile.h"

using namespace megasim;

namespace {

std::string line_of(const std::vector<std::string>& report, const std::string& start) {
  const auto it = std::find_if(report.begin(), report.end(),
                               [&](const std::string& l) { return l.rfind(start, 0) == 0; });
  return it == report.end() ? std::string() : *it;
}

constexpr const char* kNothing = "the rms judges nothing";

}  // namespace

TEST_CASE(
    "calibrate fit: a power fit met exactly by too few readings says its rms judges nothing") {
  hw::DeviceProfile p = test::toy_profile();
  p.power.tdp = Watts(500);
  // One idle reading: one activity solved for, met exactly.
  p.power_table = {{0.0, 0.0, 0.0, Watts(60)}};
  std::string line = line_of(calibrate::refit_profile(p), "power:");
  CHECK(line.rfind("power: 1 reading, idle 60 W", 0) == 0);
  CHECK(line.find("rms 0.00 %") != std::string::npos);
  CHECK(line.find(kNothing) != std::string::npos);
  // Idle and a GEMM phase: two readings, two activities, still exact.
  p.power_table.push_back({1.0, 0.0, 0.0, Watts(400)});
  line = line_of(calibrate::refit_profile(p), "power:");
  CHECK(line.find("the 2 activities solved for") != std::string::npos);
  // Capped at a limit under the GEMM reading: two readings still, but not met (a review's
  // find: "met exactly" beside an rms of 8.8 %).
  hw::DeviceProfile capped = p;
  capped.power.tdp = Watts(300);
  line = line_of(calibrate::refit_profile(capped), "power:");
  CHECK(line.find("the rms is only what capping or raising left") != std::string::npos);
  CHECK(line.find("met exactly") == std::string::npos);
  // A third reading of the same two activities leaves a residual to judge by.
  p.power_table.push_back({0.5, 0.0, 0.0, Watts(240)});
  line = line_of(calibrate::refit_profile(p), "power: 3 readings");
  REQUIRE_FALSE(line.empty());
  CHECK(line.find(kNothing) == std::string::npos);
  CHECK(line.find("from one reading alone") == std::string::npos);
  // Idle read three times and GEMM once: GEMM's figure is whatever meets its one reading, which
  // the rms over the idle readings does not judge (the measured H200's case).
  p.power_table = {{0.0, 0.0, 0.0, Watts(59)},
                   {0.0, 0.0, 0.0, Watts(60)},
                   {0.0, 0.0, 0.0, Watts(61)},
                   {1.0, 0.0, 0.0, Watts(400)}};
  line = line_of(calibrate::refit_profile(p), "power: 4 readings");
  REQUIRE_FALSE(line.empty());
  CHECK(line.find("(gemm from one reading alone, which the rms does not judge") !=
        std::string::npos);
}

TEST_CASE("calibrate fit: a memory-bound line missing its rows by more than a fifth is poor") {
  // Copies at half the toy's 1 TB/s and a 2 us launch, and a second kind at a third of that:
  // no one line meets both.
  hw::DeviceProfile p = test::toy_profile();
  for (int e = 20; e <= 30; e += 2) {
    const double bytes = std::ldexp(1.0, e);
    p.memory_table.push_back(
        {hw::MemoryKernel::kCopy, Bytes(bytes), Time::from_seconds(2e-6 + bytes / 0.5e12)});
  }
  hw::DeviceProfile one_kind = p;
  std::string line = line_of(calibrate::refit_profile(one_kind), "memory:");
  REQUIRE_FALSE(line.empty());
  CHECK(line.find("poor") == std::string::npos);
  CHECK(line.find(kNothing) == std::string::npos);
  for (int e = 20; e <= 30; e += 2) {
    const double bytes = std::ldexp(1.0, e);
    p.memory_table.push_back({hw::MemoryKernel::kLayerNorm, Bytes(bytes),
                              Time::from_seconds(2e-6 + 3.0 * bytes / 0.5e12)});
  }
  line = line_of(calibrate::refit_profile(p), "memory:");
  CHECK(line.find("(poor: one line for every kind of kernel misses them") != std::string::npos);
  // One kind whose rows scatter: poor, but not for kinds it does not have.
  hw::DeviceProfile scattered = test::toy_profile();
  for (int e = 20; e <= 30; e += 2) {
    const double bytes = std::ldexp(1.0, e);
    const double slow = e % 4 == 0 ? 3.0 : 1.0;
    scattered.memory_table.push_back(
        {hw::MemoryKernel::kCopy, Bytes(bytes), Time::from_seconds(2e-6 + slow * bytes / 0.5e12)});
  }
  line = line_of(calibrate::refit_profile(scattered), "memory:");
  CHECK(line.find("(poor: the line misses its rows") != std::string::npos);
  // Two rows, the line's two figures: met exactly.
  hw::DeviceProfile two = test::toy_profile();
  two.memory_table = {one_kind.memory_table[0], one_kind.memory_table[5]};
  line = line_of(calibrate::refit_profile(two), "memory: 2 points");
  REQUIRE_FALSE(line.empty());
  CHECK(line.find(kNothing) != std::string::npos);
}
