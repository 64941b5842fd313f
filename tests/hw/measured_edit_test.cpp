// A what-if on a measured profile: its peak, HBM or SMs edited after the measurement. The
// tables' ratios stay taken at the figures they were measured with (`measured_with`), so the
// edit moves every kernel the tables price by the model alone, and a faster GPU is never
// slower (TE's ring pieces were, on the measured H200 profile, until 2026-12-07).
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "engine/error.h"
#include "hw/kernel_cost_model.h"
#include "input_error_of.h"
#include "io/device_profile_loader.h"

using namespace megasim;
using hw::CostSource;
using io::Json;

namespace {

const std::string kMeasured =
    std::string(MEGASIM_SOURCE_DIR) + "/calibrate/profiles/h200-sxm-141gb-measured.json";

// The toy GPU of kernel_cost_model_test.cpp: 100 TFLOP/s bf16 over 4 SMs, one 128x128 tile at
// 50 %, 1 TB/s HBM at 100 %, no launch overhead; measured at 1.5x its model.
hw::DeviceProfile toy_measured() {
  hw::DeviceProfile p;
  p.name = "toy";
  p.kind = hw::ProfileKind::kMeasured;
  p.peak[hw::DType::kBf16] = tflop_per_s(100.0);
  p.hbm_bandwidth = gbyte_per_s(1000.0);
  p.sm_count = 4;
  p.gemm.tiles = {{128, 128}};
  p.gemm.classes = {{Flops(1e30), 0.5}};
  p.memory_model.bandwidth_efficiency = 1.0;
  p.gemm_table.push_back({{256, 256, 1024}, Time::from_ns(4027)});
  p.gemm_table.push_back({{1024, 1024, 1024}, Time::from_ns(64425)});
  p.memory_table.push_back({hw::MemoryKernel::kCopy, Bytes(1e9), Time::from_ms(1.0)});
  p.memory_table.push_back({hw::MemoryKernel::kCopy, Bytes(4e9), Time::from_ms(4.0)});
  p.measured_with = p.figures();
  return p;
}

hw::GemmShape bf16(std::int64_t m, std::int64_t n, std::int64_t k) {
  return {m, n, k};
}

std::string error_of(const Json& doc) {
  return test::input_error_of([&] { io::parse_device_profile(doc, "test.json"); });
}

}  // namespace

TEST_CASE("an edited measured profile moves its rows and the shapes between them by the model") {
  const hw::DeviceProfile p = toy_measured();
  hw::DeviceProfile fast = p;
  fast.peak[hw::DType::kBf16] = tflop_per_s(200.0);
  const hw::KernelCostModel at(p), edited(fast);
  // Unedited: the rows' own times, as a profile without `measured_with` gives them.
  CHECK(at.gemm(bf16(256, 256, 1024)).time.ns() == 4027);
  hw::DeviceProfile legacy = p;
  legacy.measured_with.reset();
  CHECK(hw::KernelCostModel(legacy).gemm(bf16(512, 512, 1024)).time ==
        at.gemm(bf16(512, 512, 1024)).time);
  // Twice the peak halves the compute-bound model (the 256² GEMM's 1.18 MB at 1 TB/s stays
  // under its 1342 ns), so the measured row and the 512² shape between the rows (16106 ns at
  // 1.5x its model) halve; both stay measured.
  const auto row = edited.gemm(bf16(256, 256, 1024));
  CHECK(row.source == CostSource::kMeasured);
  CHECK(std::abs(row.time.ns() - 2013.5) <= 1.0);
  CHECK(std::abs(edited.gemm(bf16(512, 512, 1024)).time.ns() - 16106 / 2.0) <= 2.0);
  // Without `measured_with` the edit re-forms the ratios against the edited model: the row
  // keeps its time (what a profile written before 2026-12-07 still does).
  legacy.peak[hw::DType::kBf16] = tflop_per_s(200.0);
  CHECK(hw::KernelCostModel(legacy).gemm(bf16(256, 256, 1024)).time.ns() == 4027);
}

TEST_CASE("an edited HBM bandwidth moves the measured memory-bound rows by the model") {
  hw::DeviceProfile p = toy_measured();
  p.hbm_bandwidth = gbyte_per_s(2000.0);
  // The 2e9-byte copy: 2 ms between the rows; the model 2 ms at 1 TB/s, 1 ms at 2.
  const hw::MemoryShape copy{hw::MemoryKernel::kCopy, Bytes(1e9), Bytes(1e9), Flops(0.0)};
  const auto c = hw::KernelCostModel(p).memory(copy);
  CHECK(c.source == CostSource::kMeasured);
  CHECK(std::abs(c.time.ns() - 1'000'000) <= 1);
}

TEST_CASE("the measured H200 profile: a faster peak or HBM never slows a GEMM or a kernel") {
  const hw::DeviceProfile measured = io::load_device_profile(kMeasured).profile;
  REQUIRE(measured.measured_with.has_value());
  REQUIRE(*measured.measured_with == measured.figures());
  REQUIRE(measured.gemm_table.size() > 100);
  std::vector<hw::DeviceProfile> edits;
  for (const double f : {1.0, 1.25, 1.5, 2.0, 3.0}) {
    hw::DeviceProfile p = measured;
    for (auto& [t, v] : p.peak) v = v * f;
    p.hbm_bandwidth = measured.hbm_bandwidth * f;
    edits.push_back(p);
    p.hbm_bandwidth = measured.hbm_bandwidth;  // the peak alone
    edits.push_back(p);
  }
  std::vector<hw::KernelCostModel> models(edits.begin(), edits.end());
  // TE's ring piece of the 70B row (512 x 4096 x 8192: 35.1 µs on the profile, 47.7 µs at
  // twice the peak before 2026-12-07), the rows themselves, and shapes between them.
  std::vector<hw::GemmShape> shapes = {bf16(512, 4096, 8192), bf16(1024, 8192, 8192),
                                       bf16(768, 3072, 12288), bf16(2048, 1536, 5120)};
  for (const auto& r : measured.gemm_table) shapes.push_back(r.shape);
  for (const auto& g : shapes) {
    CAPTURE(g.m);
    CAPTURE(g.n);
    CAPTURE(g.k);
    for (std::size_t i = 2; i < models.size(); ++i) {
      CAPTURE(i);
      CHECK(models[i].gemm(g).time <= models[i - 2].gemm(g).time);
    }
  }
  for (const auto& r : measured.attention_table) {
    for (std::size_t i = 2; i < models.size(); ++i) {
      CHECK(models[i].attention(r.shape).time <= models[i - 2].attention(r.shape).time);
    }
  }
  for (const auto& r : measured.memory_table) {
    const hw::MemoryShape m{r.kind, r.bytes * 0.5, r.bytes * 0.5, Flops(0.0)};
    for (std::size_t i = 2; i < models.size(); ++i) {
      CHECK(models[i].memory(m).time <= models[i - 2].memory(m).time);
    }
  }
  // Unedited, the profile's rows price at their own measured times.
  for (const auto& r : measured.gemm_table) CHECK(models[0].gemm(r.shape).time == r.time);
}

TEST_CASE("the measured H200 profile: more SMs at each SM's rate never slow a GEMM") {
  // An SM count edited alone keeps the whole GPU's peak (each SM slower: a GEMM of few tiles
  // takes longer, README); with the peaks scaled alike each SM keeps its rate, and a GEMM,
  // on every SM or on those TE's communication leaves, is never slower.
  const hw::DeviceProfile measured = io::load_device_profile(kMeasured).profile;
  std::vector<hw::KernelCostModel> models;
  std::vector<int> sms;
  for (const int n : {132, 133, 140, 176, 264}) {
    hw::DeviceProfile p = measured;
    p.sm_count = n;
    for (auto& [t, v] : p.peak) v = v * (n / 132.0);
    models.emplace_back(p);
    sms.push_back(n);
  }
  std::vector<hw::GemmShape> shapes = {bf16(512, 4096, 8192), bf16(1024, 8192, 8192)};
  for (const auto& r : measured.gemm_table) shapes.push_back(r.shape);
  for (const auto& g : shapes) {
    CAPTURE(g.m);
    CAPTURE(g.n);
    CAPTURE(g.k);
    for (std::size_t i = 1; i < models.size(); ++i) {
      CAPTURE(sms[i]);
      CHECK(models[i].gemm(g).time <= models[i - 1].gemm(g).time);
      // To the nanosecond the time is rounded to (the same waves at either count).
      CHECK(models[i].gemm_on_sms(g, sms[i] - 16).time.ns() <=
            models[i - 1].gemm_on_sms(g, sms[i - 1] - 16).time.ns() + 1);
    }
  }
}

TEST_CASE("measured_with: written, read back, refused where it cannot hold") {
  const Json doc = io::parse_json_file(kMeasured);
  REQUIRE(doc.contains("measured_with"));
  // The rows are checked against the figures they were measured at: a what-if at half the
  // peak loads, where the rows would be faster than the edited peak.
  Json slow = doc;
  for (auto& [key, v] : slow["peak_tflops"].items()) v = v.get<double>() / 2.0;
  CHECK(error_of(slow).empty());
  Json unanchored = slow;
  unanchored.erase("measured_with");
  CHECK(error_of(unanchored).find("faster than its GPU's peak") != std::string::npos);
  // Written as read.
  const hw::DeviceProfile p = io::parse_device_profile(slow, "slow.json").profile;
  const hw::DeviceProfile back =
      io::parse_device_profile(io::device_profile_to_json(p), "back.json").profile;
  REQUIRE(back.measured_with.has_value());
  CHECK(*back.measured_with == *p.measured_with);
  CHECK(back.figures() == p.figures());
  // A peak the tables have rows of, missing.
  Json no_bf16 = doc;
  no_bf16["measured_with"]["peak_tflops"].erase("bf16");
  const std::string e = error_of(no_bf16);
  CHECK(e.find("measured_with.peak_tflops") != std::string::npos);
  CHECK(e.find("states no bf16 peak, and gemm_table has bf16 rows") != std::string::npos);
  // On a datasheet profile, which has no table.
  Json datasheet = io::parse_json_file(std::string(MEGASIM_SOURCE_DIR) +
                                       "/calibrate/profiles/h200-sxm-141gb.json");
  datasheet["measured_with"] = doc["measured_with"];
  CHECK(error_of(datasheet).find("measured_with: a datasheet profile has no measured table") !=
        std::string::npos);
  // Its own keys are strict.
  Json typo = doc;
  typo["measured_with"]["sm"] = 132;
  CHECK(error_of(typo).find("measured_with.sm") != std::string::npos);
}
