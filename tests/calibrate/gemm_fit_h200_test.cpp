// The GEMM fit on timings shaped like a real Hopper's, not made by the model it fits: cuBLAS
// splits k and picks small tiles for small GEMMs, which the wave model (no split-K, tiles of
// 128 x 128 and up) cannot follow. Until 2026-12-03 a --quick table (one GEMM of at most
// 1 GFLOP, the 512^3) had the fit put that class at -46 % of the peak and refuse the whole GEMM
// fit. Also the bounded least squares under it, on systems solved by hand.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "calibrate/fit.h"
#include "calibrate/least_squares.h"
#include "hw/kernel_cost_model.h"
#include "io/device_profile_loader.h"

using namespace megasim;

namespace {

hw::DeviceProfile h200() {
  return io::load_device_profile(std::filesystem::path(MEGASIM_SOURCE_DIR) /
                                 "calibrate/profiles/h200-sxm-141gb.json")
      .profile;
}

// A cuBLAS-like bf16 GEMM on an H200 (989 TFLOP/s dense): 6 us fixed, and a rate rising
// smoothly with the work (split-K: no wave steps) from about 15 % of the peak at 0.3 GFLOP to
// 72 % for large GEMMs (the H100's best measured is 80 %, Bekman's MAMF): 512^3 in 7.8 us,
// 2048^3 in 30 us, 8192 x 8192 x 2048 in 392 us. `i` wobbles it by up to 3 %, as medians do.
Time hopper_time(const hw::GemmShape& g, std::size_t i) {
  const double f = g.flops().value();
  const double s = 6e-6 + f / (989e12 * 0.72) * (1.0 + 4.0 * std::exp(-f / 3e9));
  return Time::from_seconds(s * (1.0 + 0.03 * std::sin(1.7 * static_cast<double>(i))));
}

// Transformer layers at 2048 and 4096 tokens: GPT-3 175B and Llama-2 70B on TP 8 ((n, k)).
const std::vector<std::pair<std::int64_t, std::int64_t>> kLayers = {
    {4608, 12288}, {12288, 1536}, {6144, 12288}, {12288, 6144},
    {1280, 8192},  {8192, 1024},  {3584, 8192},  {8192, 3584}};

// megasim-calibrate-gpu's --quick bf16 rows over `sizes`: TN cubes up to 8192 x 8192 x 2048,
// the layers and unfused attention's batched products, timed by hopper_time.
std::vector<hw::GemmMeasurement> quick_rows(const std::vector<std::int64_t>& sizes) {
  std::vector<hw::GemmShape> shapes;
  const hw::DType t = hw::DType::kBf16;
  for (const std::int64_t m : sizes) {
    for (const std::int64_t n : sizes) {
      for (const std::int64_t k : sizes) {
        if (m * n * k <= std::int64_t{8192} * 8192 * 2048) shapes.push_back({m, n, k, 1, t, true});
      }
    }
  }
  for (const std::int64_t tokens : {2048, 4096}) {
    for (const auto& [n, k] : kLayers) shapes.push_back({tokens, n, k, 1, t, true});
  }
  for (const std::int64_t bh : {16, 32}) {
    shapes.push_back({2048, 2048, 128, bh, t, false, true});
    shapes.push_back({2048, 128, 2048, bh, t, false, false});
    shapes.push_back({2048, 128, 2048, bh, t, true, false});
  }
  std::vector<hw::GemmMeasurement> rows;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    rows.push_back({shapes[i], hopper_time(shapes[i], i)});
  }
  return rows;
}

}  // namespace

TEST_CASE("bounded least squares holds a variable at its bound, and only when it must") {
  // Rows (1, 0), (0, 1), (1, 1) against 1: unbounded x = (2/3, 2/3), residuals (-1/3, -1/3,
  // 1/3). With x1 >= 1, x1 = 1 and (x0 - 1)^2 + x0^2 is least at x0 = 1/2: residuals
  // (-1/2, 0, 1/2), rms sqrt(1/6).
  Eigen::MatrixXd a(3, 2);
  a << 1, 0, 0, 1, 1, 1;
  const auto [free, free_rms, free_converged] =
      calibrate::bounded_least_squares(a, Eigen::Vector2d(0.0, 0.5));
  CHECK(free_converged);
  CHECK(free(0) == doctest::Approx(2.0 / 3.0));
  CHECK(free(1) == doctest::Approx(2.0 / 3.0));
  CHECK(free_rms == doctest::Approx(1.0 / 3.0));
  const auto [held, held_rms, held_converged] =
      calibrate::bounded_least_squares(a, Eigen::Vector2d(0.0, 1.0));
  CHECK(held_converged);
  CHECK(held(0) == doctest::Approx(0.5));
  CHECK(held(1) == 1.0);
  CHECK(held_rms == doctest::Approx(std::sqrt(1.0 / 6.0)));
  // Columns of very different scale (1e6 beside 1, as an overhead's 1/t beside a ratio): rows
  // (1e6, 1), (1e6, 3) against 1 want x = (1e-6, 0); with x1 >= 1/3 the best is x0 = 1/3 * 1e-6
  // (residuals -1/3, 1/3).
  Eigen::MatrixXd b(2, 2);
  b << 1e6, 1, 1e6, 3;
  const auto [scaled, scaled_rms, scaled_converged] =
      calibrate::bounded_least_squares(b, Eigen::Vector2d(0, 1.0 / 3));
  CHECK(scaled(0) == doctest::Approx(1e-6 / 3.0).epsilon(1e-4).scale(0));
  CHECK(scaled(1) == doctest::Approx(1.0 / 3.0));
  CHECK(scaled_rms == doctest::Approx(1.0 / 3.0));
  CHECK(scaled_converged);
}

TEST_CASE("bounded least squares stopped by its step cap says it did not converge") {
  // The first example: two outer steps free both columns and reach the optimum; one step frees
  // only one, with the other still lowering the residual, and the fit says so.
  Eigen::MatrixXd a(3, 2);
  a << 1, 0, 0, 1, 1, 1;
  const auto whole = calibrate::bounded_least_squares(a, Eigen::Vector2d(0.0, 0.5), 2);
  CHECK(whole.converged);
  CHECK(whole.x(0) == doctest::Approx(2.0 / 3.0));
  const auto cut = calibrate::bounded_least_squares(a, Eigen::Vector2d(0.0, 0.5), 1);
  CHECK(!cut.converged);
  CHECK(cut.rms > whole.rms);
  CHECK(!calibrate::bounded_least_squares(a, Eigen::Vector2d(0.0, 0.5), 0).converged);
}

TEST_CASE("gemm fit on Hopper-like timings: --quick's one small GEMM, and the grid of today") {
  const hw::DeviceProfile base = h200();
  for (const auto& sizes : {std::vector<std::int64_t>{512, 2048, 8192},
                            std::vector<std::int64_t>{256, 512, 1024, 2048, 8192}}) {
    CAPTURE(sizes.size());
    const auto rows = quick_rows(sizes);
    const calibrate::GemmFit fit = calibrate::fit_gemm(base, rows);
    // Physical figures: an overhead below the smallest GEMM's time and every efficiency within
    // (0, 1].
    const auto fastest = std::min_element(
        rows.begin(), rows.end(), [](const auto& x, const auto& y) { return x.time < y.time; });
    CHECK(fit.params.launch_overhead >= Time::zero());
    CHECK(fit.params.launch_overhead < fastest->time);
    for (const auto& c : fit.params.classes) {
      CHECK(c.efficiency > 0.05);
      CHECK(c.efficiency <= 1.0);
    }
    // Large GEMMs run at 72 % of the peak, plus the waves' quantisation (3 % at 8192^2 x 2048).
    CHECK(fit.params.classes[2].efficiency == doctest::Approx(0.76).epsilon(0.06).scale(0));
    // Rows faster than the wave model at the peak (512 x 512 x 8192: 17 us where one wave of
    // sixteen 128 x 128 tiles takes 36 us) are left out, not fitted to an efficiency over 100 %.
    CHECK(fit.beyond_waves >= 4);
    // The fitted model alone (no table) prices the layers it kept within 20 % (4096 x 1280 x
    // 8192: two waves of 160 tiles on 132 SMs, where cuBLAS's stream-K is not quantised), 8 % rms.
    hw::DeviceProfile fitted = base;
    fitted.gemm = fit.params;
    const hw::KernelCostModel model(fitted);
    double sum = 0.0;
    int layers = 0;
    for (const auto& r : rows) {
      const bool layer = std::any_of(kLayers.begin(), kLayers.end(),
                                     [&](const auto& l) {
                                       return r.shape.n == l.first && r.shape.k == l.second;
                                     }) &&
                         (r.shape.m == 2048 || r.shape.m == 4096);
      if (!layer || r.time < model.model_gemm_compute_time(r.shape, 1.0)) continue;
      const double e = model.gemm(r.shape).time.to_seconds() / r.time.to_seconds() - 1.0;
      CAPTURE(hw::describe(r.shape));
      CHECK(std::abs(e) < 0.2);
      sum += e * e;
      ++layers;
    }
    CHECK(layers >= 12);
    CHECK(std::sqrt(sum / layers) < 0.08);
  }
}

TEST_CASE("a size class of one shape is fitted with its neighbour, and the source says so") {
  hw::DeviceProfile p = h200();
  p.kind = hw::ProfileKind::kMeasured;
  p.gemm_table = quick_rows({512, 2048, 8192});  // at most 1 GFLOP: 512^3 alone
  const calibrate::GemmFit fit = calibrate::fit_gemm(p, p.gemm_table);
  REQUIRE(fit.groups.size() == 2);
  CHECK(fit.groups[0] == std::vector<std::size_t>{0, 1});
  CHECK(fit.groups[1] == std::vector<std::size_t>{2});
  CHECK(fit.points_per_class[0] == 1);
  CHECK(fit.params.classes[0].efficiency == fit.params.classes[1].efficiency);
  const auto report = calibrate::refit_profile(p);
  REQUIRE(report.size() == 1);
  CHECK(report[0].find("size classes 0 and 1 fitted as one") != std::string::npos);
  CHECK(p.gemm.source.find("size classes 0 and 1 fitted as one") != std::string::npos);
  CHECK(p.gemm.source.find("faster than the wave model allows at the peak") != std::string::npos);
}
