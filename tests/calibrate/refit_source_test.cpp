// Refitting a profile that a fit already wrote: what an earlier fit set is kept without its
// source text nested in the new one (calibrate/fit.cpp).
#include <cmath>

#include <doctest/doctest.h>

#include <functional>
#include <string>

#include "calibrate/fit.h"
#include "hw/kernel_cost_model.h"
#include "io/device_profile_loader.h"

using namespace megasim;

TEST_CASE("a refit of a fitted profile writes the same GEMM source, not the last one nested") {
  // Rows of small GEMMs only: the largest class keeps its efficiency. The first fit quotes the
  // base profile's source; a second fit says the efficiency was held, and a third writes what
  // the second did (the source grew with each refit: 620 -> 808 -> 996 characters).
  hw::DeviceProfile p = io::load_device_profile(std::string(MEGASIM_SOURCE_DIR) +
                                                "/calibrate/profiles/a100-sxm4-80gb.json")
                            .profile;
  p.gemm.source = "the base profile's figure";
  const hw::KernelCostModel truth(p);
  for (std::int64_t m : {128, 256, 512}) {
    for (std::int64_t k : {256, 1024}) {
      const hw::GemmShape g{m, 1024, k, 1, hw::DType::kBf16};
      p.gemm_table.push_back({g, truth.model_gemm_time(g) * 1.1});
    }
  }
  calibrate::refit_profile(p);
  CHECK(p.gemm.source.find("keeps the base profile's efficiency (the base profile's figure)") !=
        std::string::npos);
  calibrate::refit_profile(p);
  const std::string second = p.gemm.source;
  CHECK(second.find("keeps the efficiency it held before this fit") != std::string::npos);
  calibrate::refit_profile(p);
  CHECK(p.gemm.source == second);
}

TEST_CASE("the shipped measured H200 profile is what today's fit makes of its own tables") {
  // calibrate/profiles/h200-sxm-141gb-measured.json holds the tables measured on 2026-12-04 and
  // the constants `megasim calibrate fit` drew from them. A change to a fit that moves those
  // constants fails here: the profile is then refitted (`megasim calibrate fit`) and committed
  // with it, never left quoting a fit the code no longer makes.
  const auto loaded = io::load_device_profile(std::string(MEGASIM_SOURCE_DIR) +
                                              "/calibrate/profiles/h200-sxm-141gb-measured.json");
  REQUIRE(loaded.profile.measurement.has_value());
  hw::DeviceProfile refitted = loaded.profile;
  int fitted = 0;
  calibrate::refit_profile(refitted, nullptr, &fitted);
  CHECK(fitted == 4);  // GEMM, attention, memory-bound, power: one GPU, no collectives
  // Numbers to a relative 1e-9 (another compiler's rounding may move the last bits), the rest
  // exactly.
  const std::function<void(const io::Json&, const io::Json&, const std::string&)> same =
      [&](const io::Json& a, const io::Json& b, const std::string& path) {
        INFO(path);
        if (a.is_number() && b.is_number()) {
          // Relative to the value itself (Approx's epsilon is relative to 1 + the value).
          const double x = a.get<double>(), y = b.get<double>();
          CHECK(std::fabs(y - x) <= 1e-9 * std::fabs(x));
        } else if (a.is_structured() && a.type() == b.type() && a.size() == b.size()) {
          if (a.is_object()) {
            for (const auto& [key, value] : a.items()) {
              REQUIRE(b.contains(key));
              same(value, b.at(key), path + "." + key);
            }
          } else {
            for (std::size_t i = 0; i < a.size(); ++i) {
              same(a[i], b[i], path + "[" + std::to_string(i) + "]");
            }
          }
        } else {
          CHECK(a == b);
        }
      };
  same(io::device_profile_to_json(loaded.profile), io::device_profile_to_json(refitted), "$");
}

TEST_CASE(
    "a refit of an edited measured profile fits at the measured figures and keeps its what-if") {
  // Half the measured H200's peaks, refitted: the fit runs at the figures the tables were
  // measured at (measured_with), so the efficiencies are the unedited profile's, the edit stays
  // and the profile written loads. A refit at the edited peaks could not be written: its rows
  // were faster than them (a reviewer's run, 2026-12-07).
  const auto file =
      std::string(MEGASIM_SOURCE_DIR) + "/calibrate/profiles/h200-sxm-141gb-measured.json";
  hw::DeviceProfile measured = io::load_device_profile(file).profile;
  REQUIRE(measured.measured_with.has_value());
  hw::DeviceProfile slow = measured;
  for (auto& [t, v] : slow.peak) v = v * 0.5;
  calibrate::refit_profile(measured);
  calibrate::refit_profile(slow);
  CHECK(slow.figures() != measured.figures());
  CHECK(slow.peak.at(hw::DType::kBf16).value() == 0.5 * measured.peak.at(hw::DType::kBf16).value());
  CHECK(*slow.measured_with == *measured.measured_with);
  CHECK(slow.gemm.k_half == measured.gemm.k_half);
  CHECK(slow.attention.fused_forward_efficiency == measured.attention.fused_forward_efficiency);
  const hw::DeviceProfile back =
      io::parse_device_profile(io::device_profile_to_json(slow), "slow.json").profile;
  CHECK(back.figures() == slow.figures());
  // The what-if prices as before the refit: its GEMM rows take twice their measured time
  // where the model is compute-bound, and never less than it.
  const hw::KernelCostModel half(back);
  for (const auto& r : measured.gemm_table) CHECK(half.gemm(r.shape).time >= r.time);
}
