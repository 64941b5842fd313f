// KernelCostModel on a toy GPU whose numbers make the arithmetic easy, then the shipped A100
// datasheet profile against published cuBLAS GEMM throughput.
#include <doctest/doctest.h>

#include <cmath>
#include <optional>

#include "engine/error.h"
#include "hw/kernel_cost_model.h"
#include "io/device_profile_loader.h"

using namespace megasim;
using hw::CostSource;

namespace {

// 100 TFLOP/s bf16 over 4 SMs, one 128x128 tile, 50 % efficiency, 1 TB/s HBM at 100 %,
// no launch overhead: one tile-wave of k = 1024 takes 2·128·128·1024 / (25e12·0.5) s
// = 33,554,432 / 12.5e12 s = 2684.35456 ns.
hw::DeviceProfile toy() {
  hw::DeviceProfile p;
  p.name = "toy";
  p.peak[hw::DType::kBf16] = tflop_per_s(100.0);
  p.hbm_bandwidth = gbyte_per_s(1000.0);
  p.sm_count = 4;
  p.gemm.tiles = {{128, 128}};
  p.gemm.classes = {{Flops(1e30), 0.5}};
  p.attention.fused_forward_efficiency = 0.5;
  p.attention.fused_backward_efficiency = 0.25;
  p.memory_model.bandwidth_efficiency = 1.0;
  return p;
}

hw::GemmShape gemm(std::int64_t m, std::int64_t n, std::int64_t k) {
  return hw::GemmShape{m, n, k, 1, hw::DType::kBf16, false, false};
}

}  // namespace

TEST_CASE("gemm roofline: one full wave of tiles") {
  const hw::KernelCostModel model(toy());
  // 256x256 → 2·2 = 4 tiles = one wave on 4 SMs: 2684.35456 ns → 2684 ns.
  const auto c = model.gemm(gemm(256, 256, 1024));
  CHECK(c.time.ns() == 2684);
  CHECK(c.source == CostSource::kRoofline);
}

TEST_CASE("gemm of no work: its launch alone, with or without k_half") {
  hw::DeviceProfile p = toy();
  p.gemm.launch_overhead = Time::from_ns(2000);
  for (const double k_half : {0.0, 384.0}) {
    p.gemm.k_half = k_half;
    const hw::KernelCostModel model(p);
    CHECK(model.gemm(gemm(256, 256, 0)).time.ns() == 2000);
    CHECK(model.gemm(gemm(0, 256, 1024)).time.ns() == 2000);
    CHECK(model.gemm(gemm(256, 256, 1024)).time.ns() > 2684 + 1999);
  }
}

TEST_CASE("gemm wave quantisation: a partial wave costs a full one") {
  const hw::KernelCostModel model(toy());
  // 384x256 → 3·2 = 6 tiles → 2 waves: 2 × 2684.35456 = 5368.70912 → 5369 ns, although
  // it has only 1.5× the FLOPs of the one-wave GEMM.
  CHECK(model.gemm(gemm(384, 256, 1024)).time.ns() == 5369);
}

TEST_CASE("gemm on fewer SMs: the waves of the SMs left, each SM at its own share") {
  const hw::KernelCostModel model(toy());
  // 256x256 is 4 tiles: one wave on the 4 SMs (2684 ns); with 3 SMs (one running a
  // collective's kernel) two waves, each SM still at 1/4 of the peak: 5368.70912 → 5369 ns.
  CHECK(model.gemm_on_sms(gemm(256, 256, 1024), 4).time.ns() == 2684);
  CHECK(model.gemm_on_sms(gemm(256, 256, 1024), 3).time.ns() == 5369);
  // 512x256 is 8 tiles: two waves on 4 SMs, three on 3 (8 = 3 + 3 + 2).
  CHECK(model.gemm_on_sms(gemm(512, 256, 1024), 3).time.ns() == 8053);
  // The launch does not grow with the waves: 2684 + 1000 ns on 4 SMs, 5369 + 1000 on 3.
  hw::DeviceProfile launched = toy();
  launched.gemm.launch_overhead = Time::from_ns(1000);
  const hw::KernelCostModel with_launch(launched);
  CHECK(with_launch.gemm_on_sms(gemm(256, 256, 1024), 3).time.ns() == 6369);
  // Asking for more SMs than the device has is the whole device.
  CHECK(model.gemm_on_sms(gemm(512, 256, 1024), 99).time == model.gemm(gemm(512, 256, 1024)).time);
}

TEST_CASE("gemm with a memory floor: a skinny GEMM is priced by its bytes") {
  hw::DeviceProfile p = toy();
  p.hbm_bandwidth = gbyte_per_s(1.0);  // 1 GB/s: memory dominates
  const hw::KernelCostModel model(p);
  // 128x128x128 bf16: bytes = 2·(128·128·3) = 98,304 B at 1e9 B/s = 98,304 ns; compute is
  // 2·128·128·128 / 12.5e12 = 0.34 us.
  CHECK(model.gemm(gemm(128, 128, 128)).time.ns() == 98304);
}

TEST_CASE("gemm measured table: exact match, log-space interpolation, outside the box") {
  hw::DeviceProfile p = toy();
  // Measured at 1.5× the model everywhere: 256² → 4026.53184 ns, 1024² (16·4 = 64 tiles =
  // 16 waves → 42949.67296 ns) → 64424.50944 ns.
  p.gemm_table.push_back({gemm(256, 256, 1024), Time::from_ns(4027)});
  p.gemm_table.push_back({gemm(1024, 1024, 1024), Time::from_ns(64425)});
  const hw::KernelCostModel model(p);
  const auto exact = model.gemm(gemm(256, 256, 1024));
  CHECK(exact.time.ns() == 4027);
  CHECK(exact.source == CostSource::kMeasured);
  // 512² → 16 tiles = 4 waves = 10737.41824 ns model; × 1.5 = 16106.13 ns.
  const auto mid = model.gemm(gemm(512, 512, 1024));
  CHECK(mid.source == CostSource::kMeasured);
  CHECK(std::abs(mid.time.ns() - 16106) <= 2);
  // 4096 lies outside the measured m range: the model answers.
  const auto out = model.gemm(gemm(4096, 512, 1024));
  CHECK(out.source == CostSource::kRoofline);
}

TEST_CASE("gemm measured table: FP8's fast accumulation apart, or the split rows above it") {
  // Two FP8 rows of one shape: split accumulation at 1.5x the model, fast at 1.2x. Each GEMM
  // takes its own; with only the split row measured, a fast GEMM takes it (an upper bound).
  hw::DeviceProfile p = toy();
  p.peak[hw::DType::kFp8] = tflop_per_s(200.0);
  hw::GemmShape split = gemm(256, 256, 1024), fast = split;
  split.dtype = fast.dtype = hw::DType::kFp8;
  fast.fast_accum = true;
  const Time model = hw::KernelCostModel(p).model_gemm_time(split);
  p.gemm_table.push_back({split, model * 1.5});
  CHECK(hw::KernelCostModel(p).gemm(fast).time == model * 1.5);
  CHECK(hw::KernelCostModel(p).gemm(fast).source == CostSource::kMeasured);
  p.gemm_table.push_back({fast, model * 1.2});
  const hw::KernelCostModel both(p);
  CHECK(both.gemm(split).time == model * 1.5);
  CHECK(both.gemm(fast).time == model * 1.2);
  // A shape between measured ones interpolates among its own accumulation's rows.
  hw::GemmShape fast_mid = fast, fast_far = fast;
  fast_mid.n = 512;
  fast_far.n = 1024;
  p.gemm_table.push_back({fast_far, hw::KernelCostModel(p).model_gemm_time(fast_far) * 1.2});
  const hw::KernelCostModel three(p);
  const double ratio =
      three.gemm(fast_mid).time.to_seconds() / three.model_gemm_time(fast_mid).to_seconds();
  CHECK(ratio == doctest::Approx(1.2).epsilon(1e-3));
  // Some fast rows, none around this shape (a run cut short): its split row still answers,
  // not the model.
  hw::DeviceProfile partial = toy();
  partial.peak[hw::DType::kFp8] = tflop_per_s(200.0);
  hw::GemmShape far_fast = fast;
  far_fast.m = far_fast.n = 4096;
  partial.gemm_table.push_back({split, model * 1.5});
  partial.gemm_table.push_back({far_fast, hw::KernelCostModel(partial).model_gemm_time(far_fast)});
  CHECK(hw::KernelCostModel(partial).gemm(fast).time == model * 1.5);
}

TEST_CASE("gemm fitted parameters report fitted") {
  hw::DeviceProfile p = toy();
  p.gemm.fitted = true;
  CHECK(hw::KernelCostModel(p).gemm(gemm(256, 256, 1024)).source == CostSource::kFitted);
}

namespace {
// One head of 64, 1,024 tokens, no mask: the attention shape the toy profile's figures use.
hw::AttentionShape one_head() {
  hw::AttentionShape a;
  a.batch = 1;
  a.heads = 1;
  a.kv_heads = 1;
  a.seq = 1024;
  a.head_dim = 64;
  a.causal = false;
  return a;
}
}  // namespace

TEST_CASE("fused attention forward and backward") {
  const hw::KernelCostModel model(toy());
  hw::AttentionShape a = one_head();
  // Forward: 4·1024²·64 = 268,435,456 FLOPs at 100e12·0.5 → 5368.70912 ns → 5369 ns (bytes:
  // 2·(2·1024·64·2) = 524,288 B = 524 ns, below).
  CHECK(model.attention(a).time.ns() == 5369);
  // Backward: model FLOPs 2× forward, hardware 2.5×: 671,088,640 at 100e12·0.25 = 26843.5456 ns.
  a.backward = true;
  CHECK(model.attention(a).time.ns() == 26844);
}

TEST_CASE("fused attention measured table: exact row, interpolation, what it does not price") {
  hw::DeviceProfile p = toy();
  hw::AttentionShape a = one_head();
  // Measured at 2× the model: 1 head → 5369 ns model (test above), 10738 ns measured; 4 heads
  // → 4·4·1024²·64 = 1,073,741,824 FLOPs at 50e12 = 21474.83648 → 21475 ns, 42950 measured.
  p.attention_table.push_back({a, Time::from_ns(10738)});
  hw::AttentionShape four = a;
  four.heads = four.kv_heads = 4;
  p.attention_table.push_back({four, Time::from_ns(42950)});
  const hw::KernelCostModel model(p);

  const auto exact = model.attention(four);
  CHECK(exact.source == CostSource::kMeasured);
  CHECK(exact.time.ns() == 42950);
  // 2 heads: model 10737.41824 → 10737 ns; both neighbours measured 2× → 21474 ns.
  hw::AttentionShape two = a;
  two.heads = two.kv_heads = 2;
  const auto mid = model.attention(two);
  CHECK(mid.source == CostSource::kMeasured);
  CHECK(mid.time.ns() == 21474);
  // Grouped-query attention (4 query heads per KV head) is another kernel: no MHA row
  // prices it; the model does (21475 ns, as for four heads).
  hw::AttentionShape gqa = four;
  gqa.kv_heads = 1;
  CHECK(model.attention(gqa).source == CostSource::kRoofline);
  CHECK(model.attention(gqa).time.ns() == 21475);
  // 8 heads lie outside the measured box: 2·21474.83648 → 42950 ns from the model.
  hw::AttentionShape eight = a;
  eight.heads = eight.kv_heads = 8;
  CHECK(model.attention(eight).source == CostSource::kRoofline);
  CHECK(model.attention(eight).time.ns() == 42950);
  // A FlashAttention-1 kernel, another mask or the other pass is not what was measured.
  hw::AttentionShape v1 = four;
  v1.flash_version = 1;
  CHECK(model.attention(v1).source == CostSource::kRoofline);
  CHECK(model.attention(v1).time.ns() == 21475);
  hw::AttentionShape causal = four;
  causal.causal = true;
  CHECK(model.attention(causal).source == CostSource::kRoofline);
  hw::AttentionShape backward = four;
  backward.backward = true;
  CHECK(model.attention(backward).source == CostSource::kRoofline);
}

TEST_CASE("unfused attention is its GEMMs plus the softmax passes") {
  const hw::KernelCostModel model(toy());
  hw::AttentionShape a;
  a.seq = 256;
  a.head_dim = 128;
  a.causal = true;
  a.fused = false;
  // Q·Kᵀ 256x256x128: 4 tiles, one wave: 2·128·128·128 / 12.5e12 = 335.54 ns → 336 ns (its
  // 262,144 B take 262 ns, below). Softmax reads and writes the 256² bf16 scores: 262,144 B at
  // 1e12 B/s = 262 ns. P·V 256x128x256: 2 tiles, one wave: 2·128·128·256 / 12.5e12 = 671.09
  // ns → 671 ns. Total 336 + 262 + 671 = 1269 ns.
  const auto c = model.attention(a);
  CHECK(c.time.ns() == 336 + 262 + 671);
  CHECK(c.source == CostSource::kRoofline);
}

TEST_CASE("memory-bound kernel: roofline and measured interpolation") {
  hw::DeviceProfile p = toy();
  p.memory_model.bandwidth_efficiency = 0.8;
  hw::MemoryShape copy{hw::MemoryKernel::kCopy, Bytes(1e9), Bytes(1e9), Flops(0.0)};
  // 2e9 B at 0.8·1e12 B/s = 2.5 ms.
  CHECK(hw::KernelCostModel(p).memory(copy).time.ns() == 2'500'000);
  // Measured 1 ms at 1e9 B and 4 ms at 4e9 B: log-log interpolation at 2e9 B gives 2 ms.
  p.memory_table.push_back({hw::MemoryKernel::kCopy, Bytes(1e9), Time::from_ms(1.0)});
  p.memory_table.push_back({hw::MemoryKernel::kCopy, Bytes(4e9), Time::from_ms(4.0)});
  const auto c = hw::KernelCostModel(p).memory(copy);
  CHECK(c.source == CostSource::kMeasured);
  CHECK(c.time.ns() == 2'000'000);
  // Another kernel kind does not borrow the copy's table.
  hw::MemoryShape ln{hw::MemoryKernel::kLayerNorm, Bytes(1e9), Bytes(1e9), Flops(0.0)};
  CHECK(hw::KernelCostModel(p).memory(ln).source == CostSource::kRoofline);
}

TEST_CASE("interference slows compute by the profile's factor") {
  hw::DeviceProfile p = toy();
  p.interference.compute_slowdown = 1.25;
  CHECK(hw::KernelCostModel(p).with_interference(Time::from_us(8.0)).ns() == 10'000);
}

TEST_CASE("a100 datasheet profile gives cuBLAS-like GEMM throughput") {
  const auto a100 =
      io::load_device_profile(std::string(MEGASIM_SOURCE_DIR) + "/calibrate/profiles/a100-sxm4-80gb.json");
  const hw::KernelCostModel model(a100.profile);
  const auto tflops = [&](const hw::GemmShape& g) {
    return g.flops().value() / model.gemm(g).time.to_seconds() / 1e12;
  };
  // MegaScale 175B QKV on TP 8: 2048 tokens x 4608 x 12288. 288 tiles of 128x256 on 108 SMs →
  // 3 waves, 288 / 324 full; the largest class's efficiency 0.86 of 312 TFLOP/s; the k factor
  // 12288 / (12288 + k_half); and the 2 us launch gap: about 228 TFLOP/s (238 without k_half,
  // which the check would catch), inside the 230-270 cuBLAS reaches on large A100 GEMMs.
  const hw::GemmModelParams& g = a100.profile.gemm;
  REQUIRE(g.k_half > 0.0);
  const auto expected = [&](double m, double n, double k, double full_share) {
    const double flops = 2.0 * m * n * k;
    const double rate = 312e12 * g.classes.back().efficiency * full_share * k / (k + g.k_half);
    return flops / (flops / rate + g.launch_overhead.to_seconds()) / 1e12;
  };
  const double qkv = tflops(gemm(2048, 4608, 12288));
  CHECK(qkv == doctest::Approx(expected(2048, 4608, 12288, 288.0 / 324.0)).epsilon(1e-3));
  CHECK(qkv > 215.0);
  CHECK(qkv < 270.0);
  // 8192³: 2,048 tiles fill 19 waves almost exactly (2048 / 2052); within 10 % of the 268
  // TFLOP/s best published (the k factor takes about 5.9 % off the full-wave efficiency).
  const double big = tflops(gemm(8192, 8192, 8192));
  CHECK(big == doctest::Approx(expected(8192, 8192, 8192, 2048.0 / 2052.0)).epsilon(1e-3));
  CHECK(big > 241.0);
  CHECK(big < 272.0);
  // A small GEMM is far from peak.
  CHECK(tflops(gemm(256, 256, 256)) < 60.0);
  // No fp8 on A100.
  CHECK_THROWS_AS(model.gemm(hw::GemmShape{128, 128, 128, 1, hw::DType::kFp8}), InputError);
}

TEST_CASE("a100 power figures respect TDP and the DGX A100 system maximum") {
  const auto p =
      io::load_device_profile(std::string(MEGASIM_SOURCE_DIR) + "/calibrate/profiles/a100-sxm4-80gb.json")
          .profile;
  CHECK(p.power.tdp.value() == 400.0);
  REQUIRE(p.reference_system.has_value());
  // 8 GPUs at GEMM power: 3.2 kW of the 6.5 kW system maximum, leaving 3.3 kW for the host.
  CHECK(p.power.at(hw::Activity::kGemm).value() * 8 < p.reference_system->max_power.value());
  CHECK(p.power.idle < p.power.communication);
  CHECK(p.power.communication < p.power.memory);
  CHECK(p.power.memory <= p.power.gemm);
}

TEST_CASE("a copied model keeps its measured table") {
  hw::DeviceProfile p = toy();
  p.gemm_table.push_back({gemm(256, 256, 1024), Time::from_ns(4027)});
  std::optional<hw::KernelCostModel> original(std::in_place, p);
  const hw::KernelCostModel copy = *original;
  original.reset();
  CHECK(copy.gemm(gemm(256, 256, 1024)).time.ns() == 4027);
}

TEST_CASE("cost share adds time per source") {
  hw::CostShare share;
  CHECK(share.measured_fraction() == 0.0);
  share.add({Time::from_us(30.0), CostSource::kMeasured});
  share.add({Time::from_us(50.0), CostSource::kFitted});
  share.add({Time::from_us(20.0), CostSource::kRoofline});
  // 30 of 100 us.
  CHECK(share.total() == Time::from_us(100.0));
  CHECK(share.measured_fraction() == doctest::Approx(0.3));
}

TEST_CASE("provenance says whether a calibration was used") {
  hw::DeviceProfile p = toy();
  CHECK(hw::provenance(p).find("no measured calibration") != std::string::npos);
  p.kind = hw::ProfileKind::kImported;
  p.measurement = hw::MeasurementInfo{"2026-11-29", "megasim calibrate import-nccl-tests",
                                      "NVIDIA H100 80GB HBM3", "", "", "", "", ""};
  const std::string s = hw::provenance(p);
  CHECK(s.find("imported profile toy") == 0);
  CHECK(s.find("NVIDIA H100 80GB HBM3") != std::string::npos);
  CHECK(s.find("no measured calibration") == std::string::npos);
}

TEST_CASE("unfused attention is measured when its GEMMs and softmax are in the tables") {
  hw::DeviceProfile p = toy();
  hw::AttentionShape a;
  a.seq = 256;
  a.head_dim = 128;
  a.fused = false;
  // The forward's pieces, as the model builds them: Q·Kᵀ (256x256x128, B transposed) 1 us,
  // P·V (256x128x256) 2 us, softmax over 256² bf16 scores read and written (262,144 B) 0.5 us.
  p.gemm_table.push_back({hw::GemmShape{256, 256, 128, 1, hw::DType::kBf16, false, true},
                          Time::from_us(1.0)});
  p.gemm_table.push_back({hw::GemmShape{256, 128, 256, 1, hw::DType::kBf16, false, false},
                          Time::from_us(2.0)});
  p.memory_table.push_back({hw::MemoryKernel::kSoftmax, Bytes(262144.0), Time::from_us(0.5)});
  const auto c = hw::KernelCostModel(p).attention(a);
  CHECK(c.source == CostSource::kMeasured);
  CHECK(c.time == Time::from_us(3.5));
}
