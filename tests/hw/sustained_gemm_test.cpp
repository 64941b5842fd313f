// The GEMM rate a board held at its power limit leaves (hw::SustainedGemm): the curve between
// its measured points, which shipped profiles carry it, and its round trip through the writer
// (the loader's refusals: device_profile_loader_test.cpp).
#include <doctest/doctest.h>

#include <string>

#include "hw/device_profile.h"
#include "io/device_profile_loader.h"

using namespace megasim;

TEST_CASE("sustained GEMM rate: linear from (0, 1) through the points, flat beyond the last") {
  hw::SustainedGemm s;
  CHECK(s.rate(0.7) == 1.0);  // no points: never measured, no slowdown
  CHECK(s.slowdown(1.0) == 0.0);
  s.points = {{0.3, 0.979}, {0.5, 0.934}, {1.0, 0.845}};
  CHECK(s.rate(0.0) == 1.0);
  CHECK(s.rate(0.15) == doctest::Approx(1.0 - 0.5 * 0.021));
  CHECK(s.rate(0.3) == doctest::Approx(0.979));
  CHECK(s.rate(0.4) == doctest::Approx((0.979 + 0.934) / 2));
  CHECK(s.rate(1.0) == doctest::Approx(0.845));
  CHECK(s.rate(1.5) == doctest::Approx(0.845));
  CHECK(s.slowdown(1.0) == doctest::Approx(1.0 / 0.845 - 1.0));
  // The larger the GEMMs' share, the slower they run.
  double last = 1.0;
  for (double share = 0.0; share <= 1.0; share += 0.05) {
    CHECK(s.rate(share) <= last);
    last = s.rate(share);
  }
}

TEST_CASE("sustained GEMM: the measured H200 profile carries its curve, datasheet ones none") {
  const auto measured = io::load_device_profile(std::string(MEGASIM_SOURCE_DIR) +
                                                "/calibrate/profiles/h200-sxm-141gb-measured.json")
                            .profile;
  REQUIRE(measured.sustained_gemm.points.size() == 4);
  CHECK(measured.sustained_gemm.rate(1.0) == doctest::Approx(0.845));
  CHECK(measured.sustained_gemm.source.find("sustained-duty.json") != std::string::npos);
  // The datasheet profiles' GEMM efficiencies come from MAMF sweeps run under continuous load
  // (README: the power-cap term): a curve on top would count the power limit twice.
  for (const char* name : {"h200-sxm-141gb", "h100-sxm5-80gb", "a100-sxm4-80gb"}) {
    CAPTURE(name);
    CHECK(io::load_device_profile(std::string(MEGASIM_SOURCE_DIR) + "/calibrate/profiles/" + name +
                                  ".json")
              .profile.sustained_gemm.points.empty());
  }
}

TEST_CASE("sustained GEMM: the section survives a profile written out and read again") {
  // calibrate fit and import write the profile they read: the curve must come through.
  const auto p = io::load_device_profile(std::string(MEGASIM_SOURCE_DIR) +
                                         "/calibrate/profiles/h200-sxm-141gb-measured.json")
                     .profile;
  const auto again = io::parse_device_profile(io::device_profile_to_json(p), "again").profile;
  REQUIRE(again.sustained_gemm.points.size() == p.sustained_gemm.points.size());
  for (std::size_t i = 0; i < p.sustained_gemm.points.size(); ++i) {
    CHECK(again.sustained_gemm.points[i].gemm_share == p.sustained_gemm.points[i].gemm_share);
    CHECK(again.sustained_gemm.points[i].rate == p.sustained_gemm.points[i].rate);
  }
  CHECK(again.sustained_gemm.source == p.sustained_gemm.source);
}
