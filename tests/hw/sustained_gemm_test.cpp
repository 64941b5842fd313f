// The GEMM rate a board held at its power limit leaves (hw::SustainedGemm): the curve between
// its measured points, and the profile loader's refusals of a curve that cannot be.
#include <doctest/doctest.h>

#include <string>

#include "engine/error.h"
#include "hw/device_profile.h"
#include "io/device_profile_loader.h"
#include "io/json_reader.h"

using namespace megasim;
using io::Json;

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

namespace {

Json profile_with(const Json& points) {
  Json doc = io::parse_json_file(std::string(MEGASIM_SOURCE_DIR) +
                                 "/calibrate/profiles/h200-sxm-141gb.json");
  doc["sustained_gemm"]["points"] = points;
  return doc;
}

std::string refusal(const Json& doc) {
  try {
    io::parse_device_profile(doc, "p.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

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

TEST_CASE("sustained GEMM: a curve that cannot be is refused with its path and numbers") {
  const std::string shares = refusal(profile_with(
      Json::parse(R"([{"gemm_share": 0.5, "rate": 0.9}, {"gemm_share": 0.4, "rate": 0.85}])")));
  CHECK(shares.find("sustained_gemm.points[1].gemm_share") != std::string::npos);
  CHECK(shares.find("0.4 follows 0.5") != std::string::npos);
  const std::string rates = refusal(profile_with(
      Json::parse(R"([{"gemm_share": 0.5, "rate": 0.9}, {"gemm_share": 1.0, "rate": 0.95}])")));
  CHECK(rates.find("sustained_gemm.points[1].rate") != std::string::npos);
  CHECK(rates.find("0.95 at share 1 is above 0.9 at share 0.5") != std::string::npos);
  const std::string none = refusal(profile_with(Json::array()));
  CHECK(none.find("sustained_gemm.points") != std::string::npos);
  const std::string above =
      refusal(profile_with(Json::parse(R"([{"gemm_share": 1.0, "rate": 1.2}])")));
  CHECK(above.find("sustained_gemm.points[0].rate") != std::string::npos);
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
