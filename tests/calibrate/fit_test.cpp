// The fits recover parameters that generated synthetic data, exactly (noise-free data) and
// within the noise (perturbed data).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "calibrate/fit.h"
#include "engine/error.h"
#include "hw/kernel_cost_model.h"
#include "toy_profile.h"

using namespace megasim;

namespace {

hw::DeviceProfile toy() {
  return test::toy_profile();
}

// One measured collective row.
hw::CollectiveMeasurement measured(hw::CollectiveOp op, int ranks, int nodes, double bytes,
                                   double seconds) {
  hw::CollectiveMeasurement m;
  m.op = op;
  m.ranks = ranks;
  m.nodes = nodes;
  m.size = Bytes(bytes);
  m.time = Time::from_seconds(seconds);
  return m;
}

// Deterministic ±amplitude perturbation, so the test needs no RNG.
double wobble(std::size_t i, double amplitude) { return 1.0 + amplitude * std::sin(1.7 * i); }

}  // namespace

TEST_CASE("alpha-beta fit recovers latency and bus bandwidth") {
  // all-reduce on 8 ranks: bus factor 2·7/8 = 1.75; alpha 10 us, bus 100 GB/s.
  std::vector<hw::CollectiveMeasurement> rows;
  for (int e = 10; e <= 30; ++e) {
    const double bytes = std::ldexp(1.0, e);
    rows.push_back(
        measured(hw::CollectiveOp::kAllReduce, 8, 1, bytes, 10e-6 + 1.75 * bytes / 100e9));
  }
  const auto fits = calibrate::fit_collectives(rows);
  REQUIRE(fits.size() == 1);
  CHECK(fits[0].alpha.to_us() == doctest::Approx(10.0).epsilon(1e-3));
  CHECK(fits[0].bus_bandwidth.value() == doctest::Approx(100e9).epsilon(1e-4));
  CHECK(fits[0].rms_relative_residual < 1e-4);
  CHECK(fits[0].points == 21);
}

TEST_CASE("alpha-beta fit keeps groups apart and needs two sizes") {
  std::vector<hw::CollectiveMeasurement> rows;
  for (int ranks : {4, 8}) {
    for (double s : {1e6, 1e8}) {
      // (n-1)/n · S at 50 GB/s plus 5 us.
      rows.push_back(measured(hw::CollectiveOp::kAllGather, ranks, 1, s,
                              5e-6 + (ranks - 1.0) / ranks * s / 50e9));
    }
  }
  rows.push_back(rows[0]);
  rows.back().op = hw::CollectiveOp::kSendRecv;  // one size only: no fit
  const auto fits = calibrate::fit_collectives(rows);
  REQUIRE(fits.size() == 2);
  for (const auto& f : fits) {
    CHECK(f.bus_bandwidth.value() == doctest::Approx(50e9).epsilon(1e-4));
    CHECK(f.alpha.to_us() == doctest::Approx(5.0).epsilon(1e-3));
  }
  // `calibrate fit` says which shape it could not fit, and why.
  hw::DeviceProfile p = toy();
  p.collective_table = rows;
  const auto report = calibrate::refit_profile(p);
  CHECK(std::count_if(report.begin(), report.end(), [](const std::string& l) {
          return l.find("sendrecv 4 ranks / 1 nodes: no alpha-beta fit (1 message size") == 0;
        }) == 1);
}

TEST_CASE("gemm fit recovers per-class efficiency and launch overhead") {
  hw::DeviceProfile truth = toy();
  truth.gemm.classes = {{Flops(1e9), 0.45}, {Flops(30e9), 0.7}, {Flops(1e30), 0.88}};
  truth.gemm.launch_overhead = Time::from_us(3.0);
  const hw::KernelCostModel model(truth);
  std::vector<hw::GemmMeasurement> rows;
  for (std::int64_t m : {256, 512, 1024, 2048, 4096}) {
    for (std::int64_t n : {512, 1536, 4096}) {
      for (std::int64_t k : {512, 2048, 8192}) {
        const hw::GemmShape g{m, n, k, 1, hw::DType::kBf16};
        rows.push_back({g, model.model_gemm_time(g)});
      }
    }
  }
  const auto fit = calibrate::fit_gemm(toy(), rows);
  REQUIRE(fit.params.classes.size() == 3);
  CHECK(fit.params.classes[0].efficiency == doctest::Approx(0.45).epsilon(1e-3).scale(0));
  CHECK(fit.params.classes[1].efficiency == doctest::Approx(0.70).epsilon(1e-3).scale(0));
  CHECK(fit.params.classes[2].efficiency == doctest::Approx(0.88).epsilon(1e-3).scale(0));
  CHECK(fit.params.launch_overhead.to_us() == doctest::Approx(3.0).epsilon(1e-2));
  CHECK(fit.params.fitted);
  CHECK(fit.quality.rms_relative_residual < 1e-3);

  // ±3 % noise: the efficiencies stay within a few percent and the residual shows the noise.
  for (std::size_t i = 0; i < rows.size(); ++i) {
    rows[i].time = Time::from_seconds(rows[i].time.to_seconds() * wobble(i, 0.03));
  }
  const auto noisy = calibrate::fit_gemm(toy(), rows);
  CHECK(noisy.params.classes[2].efficiency == doctest::Approx(0.88).epsilon(0.03).scale(0));
  CHECK(noisy.quality.rms_relative_residual > 0.005);
  CHECK(noisy.quality.rms_relative_residual < 0.03);
}

TEST_CASE("gemm fit recovers k_half with the efficiencies, and holds it with one k") {
  hw::DeviceProfile truth = toy();
  truth.gemm.classes = {{Flops(1e9), 0.45}, {Flops(30e9), 0.7}, {Flops(1e30), 0.88}};
  truth.gemm.launch_overhead = Time::from_us(3.0);
  truth.gemm.k_half = 384.0;
  const hw::KernelCostModel model(truth);
  std::vector<hw::GemmMeasurement> rows;
  for (std::int64_t m : {256, 1024, 4096}) {
    for (std::int64_t n : {512, 4096}) {
      for (std::int64_t k : {256, 1024, 4096, 8192}) {
        const hw::GemmShape g{m, n, k, 1, hw::DType::kBf16};
        rows.push_back({g, model.model_gemm_time(g)});
      }
    }
  }
  hw::DeviceProfile base = toy();
  base.gemm.k_half = 64.0;  // the base's figure is not what the data say
  const auto fit = calibrate::fit_gemm(base, rows);
  CHECK(fit.k_half_fitted);
  CHECK(fit.params.k_half == doctest::Approx(384.0).epsilon(1e-2));
  CHECK(fit.params.classes[2].efficiency == doctest::Approx(0.88).epsilon(1e-3));
  CHECK(fit.params.launch_overhead.to_us() == doctest::Approx(3.0).epsilon(1e-2));
  CHECK(fit.quality.rms_relative_residual < 1e-3);

  // One reduction length cannot tell k_half from the efficiencies: the base's is held.
  std::vector<hw::GemmMeasurement> one_k;
  for (const auto& r : rows) {
    if (r.shape.k == 4096) one_k.push_back(r);
  }
  const auto held = calibrate::fit_gemm(base, one_k);
  CHECK_FALSE(held.k_half_fitted);
  CHECK(held.params.k_half == 64.0);

  // One k a class, a different one in each: the classes' efficiencies absorb the factor, and
  // k_half is held, not picked from a flat residual.
  std::vector<hw::GemmMeasurement> k_per_class;
  for (const auto& r : rows) {
    const double f = r.shape.flops().value();
    if ((f <= 1e9 && r.shape.k == 256) || (f > 1e9 && f <= 30e9 && r.shape.k == 1024) ||
        (f > 30e9 && r.shape.k == 8192)) {
      k_per_class.push_back(r);
    }
  }
  const auto confounded = calibrate::fit_gemm(base, k_per_class);
  CHECK_FALSE(confounded.k_half_fitted);
  CHECK(confounded.params.k_half == 64.0);
}

TEST_CASE("gemm fit counts shapes, not rows") {
  hw::DeviceProfile truth = toy();
  truth.gemm.classes = {{Flops(1e30), 0.8}};
  const hw::KernelCostModel model(truth);
  const hw::GemmShape g{4096, 4096, 4096, 1, hw::DType::kBf16};
  const std::vector<hw::GemmMeasurement> rows(3, hw::GemmMeasurement{g, model.model_gemm_time(g)});
  hw::DeviceProfile base = toy();
  base.gemm.classes = {{Flops(1e30), 0.5}};
  CHECK_THROWS_WITH_AS(calibrate::fit_gemm(base, rows), doctest::Contains("2 different shapes"),
                       InputError);
}

TEST_CASE("gemm fit refuses a profile whose peak is too low for the data") {
  hw::DeviceProfile truth = toy();
  truth.gemm.classes = {{Flops(1e30), 0.9}};
  const hw::KernelCostModel model(truth);
  std::vector<hw::GemmMeasurement> rows;
  for (std::int64_t m : {1024, 2048, 4096}) {
    const hw::GemmShape g{m, 4096, 4096, 1, hw::DType::kBf16};
    rows.push_back({g, model.model_gemm_time(g)});
  }
  hw::DeviceProfile slow = toy();
  slow.gemm.classes = {{Flops(1e30), 0.5}};
  slow.peak[hw::DType::kBf16] = tflop_per_s(50.0);  // data run at 90 TFLOP/s: 180 % of it
  CHECK_THROWS_WITH_AS(calibrate::fit_gemm(slow, rows), doctest::Contains("peak_tflops"),
                       InputError);
}

TEST_CASE("memory fit recovers bandwidth efficiency and overhead") {
  const hw::DeviceProfile p = toy();
  std::vector<hw::MemoryMeasurement> rows;
  for (int e = 16; e <= 32; e += 2) {
    const double bytes = std::ldexp(1.0, e);
    // 2 us + bytes at 80 % of 1 TB/s.
    rows.push_back({hw::MemoryKernel::kCopy, Bytes(bytes),
                    Time::from_seconds(2e-6 + bytes / 0.8e12)});
  }
  const auto fit = calibrate::fit_memory(p, rows);
  CHECK(fit.params.bandwidth_efficiency == doctest::Approx(0.8).epsilon(1e-4));
  CHECK(fit.params.launch_overhead.to_us() == doctest::Approx(2.0).epsilon(1e-2));
}

TEST_CASE("refit marks models fitted so costs report fitted") {
  hw::DeviceProfile truth = toy();
  truth.gemm.classes = {{Flops(1e9), 0.5}, {Flops(30e9), 0.6}, {Flops(1e30), 0.8}};
  const hw::KernelCostModel model(truth);
  hw::DeviceProfile p = toy();
  for (std::int64_t m : {128, 512, 2048, 8192}) {
    for (std::int64_t k : {256, 4096}) {
      const hw::GemmShape g{m, 2048, k, 1, hw::DType::kBf16};
      p.gemm_table.push_back({g, model.model_gemm_time(g)});
    }
  }
  const auto report = calibrate::refit_profile(p);
  REQUIRE(report.size() == 1);
  CHECK(report[0].find("gemm:") == 0);
  p.gemm_table.clear();
  const hw::KernelCostModel refit(p);
  const hw::GemmShape q{3000, 3000, 3000, 1, hw::DType::kBf16};
  CHECK(refit.gemm(q).source == hw::CostSource::kFitted);
  CHECK(refit.gemm(q).time.to_seconds() ==
        doctest::Approx(model.gemm(q).time.to_seconds()).epsilon(1e-3).scale(0));
}

TEST_CASE("refit with a failures list keeps the other models when one cannot be fitted") {
  // Memory rows faster than the profile's HBM (an L2-resident row, a wrong hbm_gbps): the
  // memory fit refuses them. The GPU tool and `calibrate fit` must still keep the GEMM fit;
  // without a list the refit refuses the whole profile, naming the reason.
  hw::DeviceProfile truth = toy();
  const hw::KernelCostModel model(truth);
  hw::DeviceProfile p = toy();
  for (std::int64_t m : {128, 512, 2048, 8192}) {
    const hw::GemmShape g{m, 2048, 4096, 1, hw::DType::kBf16};
    p.gemm_table.push_back({g, model.model_gemm_time(g)});
  }
  for (int e = 20; e <= 30; e += 2) {
    const double bytes = std::ldexp(1.0, e);
    p.memory_table.push_back({hw::MemoryKernel::kCopy, Bytes(bytes),
                              Time::from_seconds(1e-6 + bytes / 2e12)});  // twice the HBM
  }
  hw::DeviceProfile strict = p;
  CHECK_THROWS_WITH_AS(calibrate::refit_profile(strict),
                       doctest::Contains("memory fit: kernels reach"), InputError);
  std::vector<std::string> failed;
  const auto report = calibrate::refit_profile(p, &failed);
  REQUIRE(report.size() == 1);
  CHECK(report[0].rfind("gemm:", 0) == 0);
  REQUIRE(failed.size() == 1);
  CHECK(failed[0].find("memory fit: kernels reach 200.0 %") != std::string::npos);
  CHECK_FALSE(p.memory_model.fitted);
}

namespace {

// Fused causal attention rows, head dim 128, over 8–32 heads and 1k–4k tokens, both passes,
// timed by `truth`'s model.
std::vector<hw::AttentionMeasurement> attention_rows(const hw::DeviceProfile& truth) {
  const hw::KernelCostModel model(truth);
  std::vector<hw::AttentionMeasurement> rows;
  for (const bool backward : {false, true}) {
    for (std::int64_t heads : {8, 16, 32}) {
      for (std::int64_t seq : {1024, 2048, 4096}) {
        hw::AttentionShape a;
        a.heads = a.kv_heads = heads;
        a.seq = seq;
        a.head_dim = 128;
        a.backward = backward;
        rows.push_back({a, model.attention(a).time});
      }
    }
  }
  return rows;
}

hw::DeviceProfile attention_truth() {
  hw::DeviceProfile truth = toy();
  truth.gemm.launch_overhead = Time::from_us(3.0);
  truth.attention.fused_forward_efficiency = 0.55;
  truth.attention.fused_backward_efficiency = 0.40;
  return truth;
}

}  // namespace

TEST_CASE("attention fit recovers the fused forward and backward efficiencies") {
  const hw::DeviceProfile truth = attention_truth();
  auto rows = attention_rows(truth);
  // The base states other efficiencies; the overhead is the (already fitted) GEMM one.
  hw::DeviceProfile base = toy();
  base.gemm.launch_overhead = truth.gemm.launch_overhead;
  const auto fit = calibrate::fit_attention(base, rows);
  CHECK(fit.params.fused_forward_efficiency == doctest::Approx(0.55).epsilon(1e-4).scale(0));
  CHECK(fit.params.fused_backward_efficiency == doctest::Approx(0.40).epsilon(1e-4).scale(0));
  CHECK(fit.forward.points == 9);
  CHECK(fit.backward.points == 9);
  CHECK(fit.forward.rms_relative_residual < 1e-4);
  CHECK(fit.params.fitted);

  // ±3 % noise: within a few percent, and the residual shows the noise.
  for (std::size_t i = 0; i < rows.size(); ++i) {
    rows[i].time = Time::from_seconds(rows[i].time.to_seconds() * wobble(i, 0.03));
  }
  const auto noisy = calibrate::fit_attention(base, rows);
  CHECK(noisy.params.fused_forward_efficiency == doctest::Approx(0.55).epsilon(0.03).scale(0));
  CHECK(noisy.params.fused_backward_efficiency == doctest::Approx(0.40).epsilon(0.03).scale(0));
  CHECK(noisy.backward.rms_relative_residual > 0.005);
  CHECK(noisy.backward.rms_relative_residual < 0.03);
}

TEST_CASE("attention fit keeps a pass without rows and refuses more than the peak") {
  const hw::DeviceProfile truth = attention_truth();
  std::vector<hw::AttentionMeasurement> forward_only;
  for (const auto& r : attention_rows(truth)) {
    if (!r.shape.backward) forward_only.push_back(r);
  }
  hw::DeviceProfile base = toy();
  base.gemm.launch_overhead = truth.gemm.launch_overhead;
  base.attention.fused_backward_efficiency = 0.3;
  const auto fit = calibrate::fit_attention(base, forward_only);
  CHECK(fit.backward.points == 0);
  CHECK(fit.params.fused_backward_efficiency == 0.3);
  CHECK(fit.params.fused_forward_efficiency == doctest::Approx(0.55).epsilon(1e-4));

  hw::DeviceProfile slow = base;
  slow.peak[hw::DType::kBf16] = tflop_per_s(50.0);  // data ran at 55 TFLOP/s: 110 % of it
  CHECK_THROWS_WITH_AS(calibrate::fit_attention(slow, forward_only),
                       doctest::Contains("peak_tflops"), InputError);
}

TEST_CASE("refit turns measured attention rows into fitted, measured-sourced efficiencies") {
  const hw::DeviceProfile truth = attention_truth();
  hw::DeviceProfile p = toy();
  p.gemm.launch_overhead = truth.gemm.launch_overhead;
  p.attention_table = attention_rows(truth);
  const auto report = calibrate::refit_profile(p);
  REQUIRE(report.size() == 1);
  CHECK(report[0].find("attention:") == 0);
  CHECK(p.attention.fitted);
  CHECK(p.attention.source.find("measured") == 0);
  CHECK(p.attention.fused_forward_efficiency == doctest::Approx(0.55).epsilon(1e-4));

  const hw::KernelCostModel refit(p);
  const hw::KernelCostModel model(truth);
  hw::AttentionShape inside;  // between measured rows: priced from the table
  inside.heads = inside.kv_heads = 24;
  inside.seq = 3072;
  inside.head_dim = 128;
  CHECK(refit.attention(inside).source == hw::CostSource::kMeasured);
  hw::AttentionShape beyond = inside;  // beyond them: the fitted model
  beyond.heads = beyond.kv_heads = 64;
  beyond.backward = true;
  CHECK(refit.attention(beyond).source == hw::CostSource::kFitted);
  CHECK(refit.attention(beyond).time.to_seconds() ==
        doctest::Approx(model.attention(beyond).time.to_seconds()).epsilon(1e-4).scale(0));
}

namespace {
// Readings of a GPU that draws exactly 60 W idle, 400 W in GEMMs, 300 W memory-bound and
// 150 W communicating: each activity alone, and duty-cycled at 50 % and 25 % with idle.
std::vector<hw::PowerMeasurement> power_readings(bool communication) {
  constexpr double kIdle = 60, kGemm = 400, kMemory = 300, kComm = 150;
  std::vector<hw::PowerMeasurement> rows;
  const auto add = [&](double g, double m, double c) {
    const double idle = 1.0 - g - m - c;
    rows.push_back({g, m, c, Watts(g * kGemm + m * kMemory + c * kComm + idle * kIdle)});
  };
  add(0, 0, 0);
  for (double duty : {1.0, 0.5, 0.25}) {
    add(duty, 0, 0);
    add(0, duty, 0);
    if (communication) add(0, 0, duty);
  }
  return rows;
}
}  // namespace

TEST_CASE("power fit recovers the watts of each activity from pure and duty-cycled phases") {
  hw::DeviceProfile p = toy();
  p.power.tdp = Watts(500);
  auto fit = calibrate::fit_power(p, power_readings(true));
  CHECK(fit.params.idle.value() == doctest::Approx(60));
  CHECK(fit.params.gemm.value() == doctest::Approx(400));
  CHECK(fit.params.memory.value() == doctest::Approx(300));
  CHECK(fit.params.communication.value() == doctest::Approx(150));
  CHECK(fit.quality.points == 10);
  CHECK(fit.quality.rms_relative_residual < 1e-9);
  CHECK(fit.kept.empty());

  // ±2 % noise on every reading: each activity within 3 %, the residual of the noise's order.
  auto noisy = power_readings(true);
  for (std::size_t i = 0; i < noisy.size(); ++i) noisy[i].watts = noisy[i].watts * wobble(i, 0.02);
  fit = calibrate::fit_power(p, noisy);
  CHECK(fit.params.gemm.value() == doctest::Approx(400).epsilon(0.03));
  CHECK(fit.params.idle.value() == doctest::Approx(60).epsilon(0.03));
  CHECK(fit.quality.rms_relative_residual > 0.001);
  CHECK(fit.quality.rms_relative_residual < 0.03);
}

TEST_CASE("power fit keeps what no reading covers and refuses readings that do not separate") {
  hw::DeviceProfile p = toy();
  p.power.tdp = Watts(500);
  p.power.communication = Watts(123);
  // One GPU: no communication phase, so its figure stays the base profile's.
  const auto fit = calibrate::fit_power(p, power_readings(false));
  REQUIRE(fit.kept.size() == 1);
  CHECK(fit.kept[0] == hw::Activity::kCommunication);
  CHECK(fit.params.communication == Watts(123));
  CHECK(fit.params.gemm.value() == doctest::Approx(400));
  // Half GEMM, half idle, and nothing else: GEMM and idle power cannot be told apart.
  CHECK_THROWS_AS(calibrate::fit_power(p, {{0.5, 0, 0, Watts(230)}}), InputError);
}

TEST_CASE("refit turns power readings into a fitted power profile, capped at the limit") {
  hw::DeviceProfile p = toy();
  p.power.tdp = Watts(350);  // below the 400 W the GEMM readings imply
  p.power_table = power_readings(true);
  const auto report = calibrate::refit_profile(p);
  CHECK(p.power.gemm == Watts(350));
  CHECK(p.power.idle.value() == doctest::Approx(60).epsilon(0.05));
  CHECK(p.power.source.find("fitted by megasim calibrate fit to 10 board-power readings") == 0);
  bool reported = false;
  for (const auto& line : report) reported |= line.rfind("power: 10 readings", 0) == 0;
  CHECK(reported);

  // The tool's description of its phases stays after the fit's, once, however often refit.
  p.power.source = "measured with NVML on GPU 0: phases";
  calibrate::refit_profile(p);
  calibrate::refit_profile(p);
  const std::string& src = p.power.source;
  CHECK(src.find("fitted by megasim calibrate fit") == 0);
  CHECK(src.find(" Readings: measured with NVML on GPU 0: phases") != std::string::npos);
  CHECK(src.find("Readings:") == src.rfind("Readings:"));
}
