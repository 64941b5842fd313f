// refit_profile's order and floors: the memory model is fitted before the GEMMs, whose rows
// are chosen by it, and a fit the loader could not read back is refused without losing the
// others (a reviewer's finds, 2026-12-05).
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "calibrate/fit.h"
#include "engine/error.h"
#include "hw/kernel_cost_model.h"
#include "toy_profile.h"

using namespace megasim;

namespace {

// GEMM rows over the three classes (compute-bound at any memory efficiency down to 0.5), and
// rows of 512 × 512 × 176–208 (whole waves of the toy's 8 SMs) whose bytes take about 0.9 of
// their compute time at the peak at the base profile's memory efficiency of 1.0 (kept by the
// GEMM fit) and 1.8 at 0.5, where they are bandwidth-bound even beside class 0's 1/0.6 (left
// out).
std::vector<hw::GemmMeasurement> gemm_rows(const hw::KernelCostModel& truth) {
  std::vector<hw::GemmMeasurement> rows;
  for (std::int64_t m : {512, 1024, 2048, 4096}) {
    for (std::int64_t n : {1536, 4096}) {
      for (std::int64_t k : {512, 2048, 8192}) {
        const hw::GemmShape g{m, n, k, 1, hw::DType::kBf16};
        rows.push_back({g, truth.model_gemm_time(g)});
      }
    }
  }
  // Class 0 (up to 1 GFLOP) compute-bound at 0.5 too: bytes under half the compute time.
  for (const auto& [m, n, k] : {std::array<std::int64_t, 3>{768, 768, 768},
                                {640, 768, 768},
                                {768, 640, 768},
                                {704, 704, 704},
                                {640, 640, 1024}}) {
    const hw::GemmShape g{m, n, k, 1, hw::DType::kBf16};
    rows.push_back({g, truth.model_gemm_time(g)});
  }
  for (std::int64_t k : {176, 192, 208}) {
    const hw::GemmShape g{512, 512, k, 1, hw::DType::kBf16};
    rows.push_back({g, truth.model_gemm_time(g)});
  }
  return rows;
}

std::vector<hw::MemoryMeasurement> memory_rows(double efficiency) {
  std::vector<hw::MemoryMeasurement> rows;
  for (int e = 16; e <= 30; e += 2) {
    const double bytes = std::ldexp(1.0, e);
    rows.push_back(
        {hw::MemoryKernel::kCopy, Bytes(bytes), Time::from_seconds(bytes / (efficiency * 1e12))});
  }
  return rows;
}

}  // namespace

TEST_CASE(
    "refit: the memory model is fitted first, so the GEMM fit leaves out bandwidth-bound rows") {
  hw::DeviceProfile truth = test::toy_profile();
  truth.gemm.classes = {{Flops(1e9), 0.6}, {Flops(30e9), 0.7}, {Flops(1e30), 0.8}};
  truth.memory_model.bandwidth_efficiency = 0.5;
  const hw::KernelCostModel model(truth);
  hw::DeviceProfile p = test::toy_profile();  // memory efficiency 1.0 until fitted
  p.gemm_table = gemm_rows(model);
  p.memory_table = memory_rows(0.5);
  calibrate::refit_profile(p);
  CHECK(std::abs(p.memory_model.bandwidth_efficiency - 0.5) < 1e-3);
  // With the GEMMs fitted first, the 512 × 512 rows (bandwidth-bound) were read as class 0 rows.
  for (std::size_t c = 0; c < 3; ++c) {
    CAPTURE(c);
    CHECK(std::abs(p.gemm.classes[c].efficiency - truth.gemm.classes[c].efficiency) < 1e-3);
  }
  // Fitted again, the same figures: the fit reads its own memory model.
  const hw::DeviceProfile once = p;
  calibrate::refit_profile(p);
  for (std::size_t c = 0; c < 3; ++c) {
    CHECK(p.gemm.classes[c].efficiency == once.gemm.classes[c].efficiency);
  }
}

TEST_CASE("refit: a GEMM or memory efficiency under the loader's 1 % is refused, the others kept") {
  hw::DeviceProfile truth = test::toy_profile();
  truth.gemm.classes = {{Flops(1e9), 0.005}, {Flops(30e9), 0.005}, {Flops(1e30), 0.005}};
  hw::DeviceProfile p = test::toy_profile();
  p.gemm_table = gemm_rows(hw::KernelCostModel(truth));
  p.memory_table = memory_rows(0.7);
  std::vector<std::string> failed;
  calibrate::refit_profile(p, &failed);
  REQUIRE(failed.size() == 1);
  CHECK(failed[0].find("GEMM fit: size class") != std::string::npos);
  CHECK(p.memory_model.fitted);
  CHECK(std::abs(p.memory_model.bandwidth_efficiency - 0.7) < 1e-3);
  CHECK_FALSE(p.gemm.fitted);

  hw::DeviceProfile slow = test::toy_profile();
  slow.memory_table = memory_rows(0.005);
  CHECK_THROWS_WITH_AS(calibrate::fit_memory(slow, slow.memory_table),
                       doctest::Contains("memory fit: kernels reach 0.5 %"), InputError);
}

TEST_CASE("refit: the power line names the activities no reading covers, kept from the input") {
  hw::DeviceProfile p = test::toy_profile();
  p.power.tdp = Watts(500);
  p.power_table = {{0.0, 0.0, 0.0, Watts(60)}, {0.0, 0.0, 0.0, Watts(62)}};  // idle alone
  const auto report = calibrate::refit_profile(p);
  REQUIRE(report.size() == 1);
  CHECK(report[0].find("(gemm, memory, communication kept from the input: no reading covers it)") !=
        std::string::npos);
}
