// The device-profile schema: shipped profiles load, strictness, the "collective" section is
// left alone, and write → read is lossless.
#include <doctest/doctest.h>

#include <string>

#include "engine/error.h"
#include "io/device_profile_loader.h"

using namespace megasim;
using io::Json;

namespace {

const std::string kProfiles = std::string(MEGASIM_SOURCE_DIR) + "/calibrate/profiles/";

Json a100_doc() { return io::parse_json_file(kProfiles + "a100-sxm4-80gb.json"); }

std::string error_of(const Json& doc) {
  try {
    io::parse_device_profile(doc, "test.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// The A100 profile with a sustained_gemm section of these points.
Json with_sustained_points(const Json& points) {
  Json doc = a100_doc();
  doc["sustained_gemm"] = {{"points", points}, {"source", "test"}};
  return doc;
}

}  // namespace

TEST_CASE("shipped datasheet profiles load") {
  for (const char* name : {"a100-sxm4-80gb", "a100-sxm4-40gb", "h100-sxm5-80gb", "h200-sxm-141gb"}) {
    CAPTURE(name);
    const auto p = io::load_device_profile(kProfiles + name + ".json").profile;
    CHECK(p.name == name);
    CHECK(p.kind == hw::ProfileKind::kDatasheet);
    CHECK(p.sm_count > 0);
    CHECK(!p.gemm.classes.empty());
    CHECK(!p.power.source.empty());
  }
  const auto h200 = io::load_device_profile(kProfiles + "h200-sxm-141gb.json").profile;
  const auto h100 = io::load_device_profile(kProfiles + "h100-sxm5-80gb.json").profile;
  // Same die: same bf16 peak; H200 has more and faster HBM.
  CHECK(h200.peak_for(hw::DType::kBf16) == h100.peak_for(hw::DType::kBf16));
  CHECK(h200.hbm_bandwidth > h100.hbm_bandwidth);
  CHECK(h200.memory > h100.memory);
  // The 40 GB A100: the 80 GB one's die and board, less and slower HBM; its power preset is the
  // 80 GB one's (base_profile).
  const auto a40 = io::load_device_profile(kProfiles + "a100-sxm4-40gb.json").profile;
  const auto a80 = io::load_device_profile(kProfiles + "a100-sxm4-80gb.json").profile;
  CHECK(a40.peak_for(hw::DType::kBf16) == a80.peak_for(hw::DType::kBf16));
  // What CUDA lets a process have: 39.39 and 79.15 GiB (the datasheets' 40 and 80 GB less the
  // driver's reserve).
  CHECK(a40.memory.value() == doctest::Approx(39.39 * 1024 * 1024 * 1024));
  CHECK(a80.memory.value() == doctest::Approx(79.15 * 1024 * 1024 * 1024));
  CHECK(a40.hbm_bandwidth < a80.hbm_bandwidth);
  CHECK(a40.base == "a100-sxm4-80gb");
}

TEST_CASE("unknown key is an error with a suggestion") {
  Json doc = a100_doc();
  doc["hbm_gbsp"] = 1;
  const std::string e = error_of(doc);
  CHECK(e.find("hbm_gbsp") != std::string::npos);
  CHECK(e.find("did you mean") != std::string::npos);
}

TEST_CASE("power above TDP is rejected naming both numbers") {
  Json doc = a100_doc();
  doc["power"]["gemm_w"] = 450;
  const std::string e = error_of(doc);
  CHECK(e.find("power.gemm_w") != std::string::npos);
  CHECK(e.find("450") != std::string::npos);
  CHECK(e.find("400") != std::string::npos);
}

TEST_CASE("a figure without a source is rejected") {
  Json doc = a100_doc();
  doc["interference"].erase("source");
  CHECK(error_of(doc).find("interference.source") != std::string::npos);
}

TEST_CASE("size classes must ascend") {
  Json doc = a100_doc();
  doc["gemm_model"]["size_classes"][1]["max_gflop"] = 0.5;
  CHECK(error_of(doc).find("must ascend") != std::string::npos);
}

TEST_CASE("a measured profile must say when it was measured") {
  Json doc = a100_doc();
  doc["kind"] = "measured";
  CHECK(error_of(doc).find("measurement") != std::string::npos);
}

TEST_CASE("the collective section is read strictly, handed back and never written") {
  Json doc = a100_doc();
  REQUIRE(doc.contains("collective"));
  const auto loaded = io::parse_device_profile(doc, "test.json");
  CHECK(loaded.collective == doc["collective"]);
  CHECK_FALSE(io::device_profile_to_json(loaded.profile).contains("collective"));
  // What simulate's collective reader refuses, every loader of the profile refuses (calibrate
  // fit once copied it through to a profile simulate could not load).
  doc["collective"] = {{"anything", {1, 2, 3}}};
  CHECK_THROWS_WITH_AS(io::parse_device_profile(doc, "test.json"),
                       doctest::Contains("test.json: collective."), InputError);
}

TEST_CASE("schema round trip keeps tables and fits") {
  auto p = io::load_device_profile(kProfiles + "h100-sxm5-80gb.json").profile;
  p.kind = hw::ProfileKind::kMeasured;
  p.measurement = hw::MeasurementInfo{"2026-11-29", "test", "NVIDIA H100 80GB HBM3",
                                      "570.1", "12.8", "12.8.3", "9.7.0", "2.26.2"};
  p.gemm_table.push_back({hw::GemmShape{4096, 4096, 4096, 1, hw::DType::kBf16, false, true},
                          Time::from_us(180.5)});
  hw::AttentionShape a;
  a.heads = 16;
  a.kv_heads = 16;
  a.seq = 4096;
  a.head_dim = 128;
  a.window = 1024;
  a.backward = true;
  p.attention_table.push_back({a, Time::from_us(2150.75)});
  p.memory_table.push_back({hw::MemoryKernel::kAdam, Bytes(1e9), Time::from_us(400.25)});
  p.power_table.push_back({0.5, 0.0, 0.25, Watts(412.5)});
  hw::CollectiveMeasurement c;
  c.op = hw::CollectiveOp::kReduceScatter;
  c.ranks = 8;
  c.nodes = 1;
  c.size = Bytes(1 << 20);
  c.time = Time::from_us(25.5);
  c.algbw = gbyte_per_s(41.12);
  c.busbw = gbyte_per_s(35.98);
  c.protocol = "LL128";
  p.collective_table.push_back(c);
  hw::CollectiveFit f;
  f.ranks = 8;
  f.nodes = 1;
  f.alpha = Time::from_us(12.0);
  f.bus_bandwidth = gbyte_per_s(350.0);
  f.points = 10;
  p.collective_fits.push_back(f);

  const Json once = io::device_profile_to_json(p);
  const auto back = io::parse_device_profile(once, "round.json").profile;
  CHECK(io::device_profile_to_json(back) == once);
  CHECK(back.kind == hw::ProfileKind::kMeasured);
  REQUIRE(back.gemm_table.size() == 1);
  CHECK(back.gemm_table[0].shape.transpose_b);
  CHECK(back.gemm_table[0].time == Time::from_us(180.5));
  REQUIRE(back.attention_table.size() == 1);
  const hw::AttentionShape& b = back.attention_table[0].shape;
  CHECK(b.heads == 16);
  CHECK(b.seq == 4096);
  CHECK(b.head_dim == 128);
  CHECK(b.causal);
  CHECK(b.window == 1024);
  CHECK(b.backward);
  CHECK(b.fused);
  CHECK(b.flash_version == hw::kMeasuredFlashVersion);
  CHECK(back.attention_table[0].time == Time::from_us(2150.75));
  CHECK(back.collective_table[0].protocol == "LL128");
  CHECK(back.measurement->cudnn == "9.7.0");
  REQUIRE(back.power_table.size() == 1);
  CHECK(back.power_table[0].gemm_share == 0.5);
  CHECK(back.power_table[0].communication_share == 0.25);
  CHECK(back.power_table[0].idle_share() == 0.25);
  CHECK(back.power_table[0].watts == Watts(412.5));
  CHECK(back.fleet_variation.sigma == p.fleet_variation.sigma);
  CHECK(back.fleet_variation.sigma > 0.0);
}

TEST_CASE("a fleet variation past 20 % is rejected naming its path") {
  Json doc = a100_doc();
  doc["fleet_variation"]["sigma"] = 0.5;
  CHECK(error_of(doc).find("fleet_variation.sigma") != std::string::npos);
}

TEST_CASE("a power reading whose activity shares exceed the phase is rejected") {
  Json doc = a100_doc();
  doc["kind"] = "measured";
  doc["measurement"] = {{"date", "2026-11-29"}, {"tool", "test"}};
  doc["power_table"] = Json::array({{{"gemm_share", 0.75}, {"memory_share", 0.5}, {"watts", 300}}});
  const std::string e = error_of(doc);
  CHECK(e.find("power_table[0].communication_share") != std::string::npos);
  CHECK(e.find("GEMM (0.75), memory-bound (0.5)") != std::string::npos);
  doc["power_table"] = Json::array({{{"gemm_share", 1.0}, {"watts", -3}}});
  CHECK(error_of(doc).find("power_table[0].watts") != std::string::npos);
}

TEST_CASE("a bad fused attention row is rejected naming its JSON path") {
  Json doc = a100_doc();
  doc["kind"] = "measured";
  doc["measurement"] = {{"date", "2026-11-29"}, {"tool", "test"}};
  const Json good = {{"batch", 1},  {"heads", 16},   {"kv_heads", 4},       {"seq", 4096},
                     {"head_dim", 128}, {"causal", true}, {"window", 0},   {"pass", "forward"},
                     {"dtype", "bf16"}, {"time_us", 1200.0}};
  doc["attention_table"] = Json::array({good});
  CHECK(io::parse_device_profile(doc, "test.json").profile.attention_table.size() == 1);

  doc["attention_table"][0]["head_dim"] = 0;
  CHECK(error_of(doc).find("attention_table[0].head_dim") != std::string::npos);
  doc["attention_table"][0] = good;
  doc["attention_table"][0]["kv_heads"] = 3;  // does not divide 16 heads
  CHECK(error_of(doc).find("attention_table[0].kv_heads") != std::string::npos);
  doc["attention_table"][0] = good;
  doc["attention_table"][0]["window"] = 8192;  // longer than the sequence
  CHECK(error_of(doc).find("attention_table[0].window") != std::string::npos);
  doc["attention_table"][0] = good;
  doc["attention_table"][0]["pass"] = "fwd";
  CHECK(error_of(doc).find("attention_table[0].pass") != std::string::npos);
  doc["attention_table"][0] = good;
  doc["attention_table"][0]["windw"] = 1024;
  const std::string e = error_of(doc);
  CHECK(e.find("attention_table[0].windw") != std::string::npos);
  CHECK(e.find("did you mean") != std::string::npos);
}

TEST_CASE("a measured kernel faster than the peak, or a shape timed twice, is refused") {
  // Until 2026-12-04 both loaded: a GEMM row at 3.3 times the peak gave an MFU of 154 %, and
  // two times for one shape priced it by the rows' order.
  Json doc = a100_doc();
  doc["kind"] = "measured";
  doc["measurement"] = {{"date", "2026-12-04"}, {"tool", "test"}};
  // 4096 x 6144 x 4096 bf16: 206 GFLOP, 660 us at the A100's 312 TFLOP/s.
  const Json row = {{"m", 4096}, {"n", 6144}, {"k", 4096}, {"dtype", "bf16"}, {"time_us", 900.0}};
  doc["gemm_table"] = Json::array({row});
  CHECK(io::parse_device_profile(doc, "test.json").profile.gemm_table.size() == 1);
  doc["gemm_table"][0]["time_us"] = 200.0;
  std::string e = error_of(doc);
  CHECK(e.find("gemm_table[0].time_us") != std::string::npos);
  CHECK(e.find("1031 TFLOP/s of useful work, 3.3 times the profile's bf16 peak of 312") !=
        std::string::npos);
  // Within the 10 % a timer and a boost clock allow: kept.
  doc["gemm_table"][0]["time_us"] = 610.0;
  CHECK(io::parse_device_profile(doc, "test.json").profile.gemm_table.size() == 1);
  // Slower than 1,000 times the peak's time and a millisecond: a unit's slip (a row of 10^12
  // µs priced a 17-year step until 2026-12-07). At 1,000 times and 1 ms, kept.
  doc["gemm_table"][0]["time_us"] = 1e12;
  e = error_of(doc);
  CHECK(e.find("gemm_table[0].time_us") != std::string::npos);
  CHECK(e.find("more than 1000 times it and a millisecond") != std::string::npos);
  doc["gemm_table"][0]["time_us"] = 661000.0;
  CHECK(io::parse_device_profile(doc, "test.json").profile.gemm_table.size() == 1);

  Json second = row;
  second["time_us"] = 950.0;
  doc["gemm_table"] = Json::array({row, row, second});
  e = error_of(doc);
  CHECK(e.find("gemm_table[2].time_us") != std::string::npos);
  CHECK(e.find("950 µs for the shape gemm_table[0] measured at 900 µs") != std::string::npos);

  // An attention row past the peak: 16 heads x 4096 causal x 128 in 1 us.
  doc.erase("gemm_table");
  doc["attention_table"] = Json::array({{{"heads", 16},
                                         {"seq", 4096},
                                         {"head_dim", 128},
                                         {"pass", "forward"},
                                         {"dtype", "bf16"},
                                         {"time_us", 1.0}}});
  CHECK(error_of(doc).find("attention_table[0].time_us") != std::string::npos);
}

TEST_CASE(
    "an FP8 GEMM row of the fast accumulation is its own shape, and refused on another dtype") {
  Json doc = a100_doc();
  doc["kind"] = "measured";
  doc["measurement"] = {{"date", "2026-12-04"}, {"tool", "test"}};
  Json split = {{"m", 4096}, {"n", 6144}, {"k", 4096}, {"dtype", "fp8"}, {"time_us", 500.0}};
  Json fast = split;
  fast["fast_accum"] = true;
  fast["time_us"] = 450.0;
  doc["gemm_table"] = Json::array({split, fast});  // one shape, two accumulations: not twice
  const auto p = io::parse_device_profile(doc, "test.json").profile;
  REQUIRE(p.gemm_table.size() == 2);
  CHECK_FALSE(p.gemm_table[0].shape.fast_accum);
  CHECK(p.gemm_table[1].shape.fast_accum);
  const Json back = io::device_profile_to_json(p);
  CHECK_FALSE(back["gemm_table"][0].contains("fast_accum"));
  CHECK(back["gemm_table"][1]["fast_accum"] == true);
  doc["gemm_table"][1]["dtype"] = "bf16";
  const std::string e = error_of(doc);
  CHECK(e.find("gemm_table[1].fast_accum: true on a bf16 GEMM: only fp8 GEMMs take cuBLASLt's "
               "fast accumulation") != std::string::npos);
}

TEST_CASE("sustained GEMM: a curve that cannot be is refused with its path and numbers") {
  const std::string shares = error_of(with_sustained_points(
      Json::parse(R"([{"gemm_share": 0.5, "rate": 0.9}, {"gemm_share": 0.4, "rate": 0.85}])")));
  CHECK(shares.find("sustained_gemm.points[1].gemm_share") != std::string::npos);
  CHECK(shares.find("0.4 follows 0.5") != std::string::npos);
  const std::string rates = error_of(with_sustained_points(
      Json::parse(R"([{"gemm_share": 0.5, "rate": 0.9}, {"gemm_share": 1.0, "rate": 0.95}])")));
  CHECK(rates.find("sustained_gemm.points[1].rate") != std::string::npos);
  CHECK(rates.find("0.95 at share 1 is above 0.9 at share 0.5") != std::string::npos);
  const std::string none = error_of(with_sustained_points(Json::array()));
  CHECK(none.find("sustained_gemm.points") != std::string::npos);
  const std::string above =
      error_of(with_sustained_points(Json::parse(R"([{"gemm_share": 1.0, "rate": 1.2}])")));
  CHECK(above.find("sustained_gemm.points[0].rate") != std::string::npos);
}

TEST_CASE("a measured memory or power row no board could give is refused with its JSON path") {
  // A user's trial (2026-12-05): the measured H200 profile with a 10 GiB row at 1 µs, or a
  // row given twice with two times, or 20,000 W on its 700 W board, loaded and priced steps.
  const Json measured = io::parse_json_file(kProfiles + "h200-sxm-141gb-measured.json");
  REQUIRE(measured["memory_table"].size() > 1);
  REQUIRE(error_of(measured).empty());
  Json fast = measured;
  fast["memory_table"][0]["time_us"] = 1e-3;
  CHECK(error_of(fast).find("memory_table[0].time_us: ") != std::string::npos);
  CHECK(error_of(fast).find("times the profile's HBM bandwidth") != std::string::npos);
  // Nor 10^9 times slower than its HBM time (accepted until 2026-12-07).
  Json slow = measured;
  slow["memory_table"][0]["time_us"] = 1e12;
  CHECK(error_of(slow).find("memory_table[0].time_us: ") != std::string::npos);
  CHECK(error_of(slow).find("no memory-bound kernel runs so slowly") != std::string::npos);
  Json twice = measured;
  Json again = measured["memory_table"][0];
  again["time_us"] = again["time_us"].get<double>() * 1.5;
  twice["memory_table"].push_back(again);
  const auto last = measured["memory_table"].size();
  CHECK(error_of(twice).find("memory_table[" + std::to_string(last) + "].time_us: ") !=
        std::string::npos);
  CHECK(error_of(twice).find("keep one time a (kernel, bytes)") != std::string::npos);
  // The same time twice is one measurement given twice, not a clash.
  Json same = measured;
  same["memory_table"].push_back(measured["memory_table"][0]);
  CHECK(error_of(same).empty());
  Json hot = measured;
  hot["power_table"][0]["watts"] = 20000;
  CHECK(error_of(hot).find("power_table[0].watts: 20000 W is 28.6 times the board's tdp_w") !=
        std::string::npos);
}
