// Writing a device profile in the schema device_profile_loader.cpp reads.
#include <cerrno>
#include <cstdlib>
#include <ctime>

#include "engine/error.h"
#include "io/device_profile_loader.h"

namespace megasim::io {
namespace {

// The reader takes a missing optional string for "", but refuses an empty one.
void put_nonempty(Json& j, const char* key, const std::string& v) {
  if (!v.empty()) j[key] = v;
}

// Interference, the kernel models and the measurement's versions.
void put_models(Json& j, const hw::DeviceProfile& p) {
  j["interference"] = {{"compute_slowdown", p.interference.compute_slowdown},
                       {"source", p.interference.source}};
  if (p.fleet_variation.sigma > 0.0) {
    j["fleet_variation"] = {{"sigma", p.fleet_variation.sigma},
                            {"source", p.fleet_variation.source}};
  }
  if (!p.sustained_gemm.points.empty()) {
    Json points = Json::array();
    for (const auto& q : p.sustained_gemm.points) {
      points.push_back({{"gemm_share", q.gemm_share}, {"rate", q.rate}});
    }
    j["sustained_gemm"] = {{"points", points}, {"source", p.sustained_gemm.source}};
  }
  Json tiles = Json::array(), classes = Json::array();
  for (const auto& t : p.gemm.tiles) tiles.push_back({{"m", t.m}, {"n", t.n}});
  for (const auto& c : p.gemm.classes) {
    classes.push_back({{"max_gflop", c.max_flops.value() / 1e9}, {"efficiency", c.efficiency}});
  }
  j["gemm_model"] = {{"tiles", tiles},
                     {"launch_overhead_us", p.gemm.launch_overhead.to_us()},
                     {"size_classes", classes},
                     {"k_half", p.gemm.k_half},
                     {"fitted", p.gemm.fitted},
                     {"source", p.gemm.source}};
  j["attention_model"] = {{"fused_forward_efficiency", p.attention.fused_forward_efficiency},
                          {"fused_backward_efficiency", p.attention.fused_backward_efficiency},
                          {"fitted", p.attention.fitted},
                          {"source", p.attention.source}};
  if (p.attention.forward_half_gflop > 0.0) {
    j["attention_model"]["forward_half_gflop"] = p.attention.forward_half_gflop;
  }
  if (p.attention.backward_half_gflop > 0.0) {
    j["attention_model"]["backward_half_gflop"] = p.attention.backward_half_gflop;
  }
  if (p.attention.flash_v1_forward_efficiency) {
    j["attention_model"]["flash_v1_forward_efficiency"] = *p.attention.flash_v1_forward_efficiency;
  }
  if (p.attention.flash_v1_backward_efficiency) {
    j["attention_model"]["flash_v1_backward_efficiency"] = *p.attention.flash_v1_backward_efficiency;
  }
  j["memory_model"] = {{"bandwidth_efficiency", p.memory_model.bandwidth_efficiency},
                       {"launch_overhead_us", p.memory_model.launch_overhead.to_us()},
                       {"fitted", p.memory_model.fitted},
                       {"source", p.memory_model.source}};
  if (p.measurement) {
    const auto& m = *p.measurement;
    Json info = {{"date", m.date}, {"tool", m.tool}};
    put_nonempty(info, "device_name", m.device_name);
    put_nonempty(info, "driver", m.driver);
    put_nonempty(info, "cuda", m.cuda);
    put_nonempty(info, "cublas", m.cublas);
    put_nonempty(info, "cudnn", m.cudnn);
    put_nonempty(info, "nccl", m.nccl);
    j["measurement"] = info;
  }
}

// Measured kernel rows and board power readings.
void put_kernel_tables(Json& j, const hw::DeviceProfile& p) {
  if (!p.gemm_table.empty()) {
    Json rows = Json::array();
    for (const auto& r : p.gemm_table) {
      rows.push_back({{"m", r.shape.m},
                      {"n", r.shape.n},
                      {"k", r.shape.k},
                      {"batch", r.shape.batch},
                      {"dtype", hw::to_string(r.shape.dtype)},
                      {"transpose_a", r.shape.transpose_a},
                      {"transpose_b", r.shape.transpose_b},
                      {"time_us", r.time.to_us()}});
      if (r.shape.fast_accum) rows.back()["fast_accum"] = true;
    }
    j["gemm_table"] = rows;
  }
  if (!p.attention_table.empty()) {
    Json rows = Json::array();
    for (const auto& r : p.attention_table) {
      rows.push_back({{"batch", r.shape.batch},
                      {"heads", r.shape.heads},
                      {"kv_heads", r.shape.kv_heads},
                      {"seq", r.shape.seq},
                      {"head_dim", r.shape.head_dim},
                      {"causal", r.shape.causal},
                      {"window", r.shape.window},
                      {"pass", r.shape.backward ? "backward" : "forward"},
                      {"dtype", hw::to_string(r.shape.dtype)},
                      {"time_us", r.time.to_us()}});
    }
    j["attention_table"] = rows;
  }
  if (!p.power_table.empty()) {
    Json rows = Json::array();
    for (const auto& r : p.power_table) {
      rows.push_back({{"gemm_share", r.gemm_share},
                      {"memory_share", r.memory_share},
                      {"communication_share", r.communication_share},
                      {"watts", r.watts.value()}});
    }
    j["power_table"] = rows;
  }
  if (!p.memory_table.empty()) {
    Json rows = Json::array();
    for (const auto& r : p.memory_table) {
      rows.push_back({{"kernel", hw::to_string(r.kind)},
                      {"bytes", r.bytes.value()},
                      {"time_us", r.time.to_us()}});
    }
    j["memory_table"] = rows;
  }
}

void put_collective_tables(Json& j, const hw::DeviceProfile& p) {
  if (!p.collective_table.empty()) {
    Json rows = Json::array();
    for (const auto& r : p.collective_table) {
      rows.push_back({{"op", hw::to_string(r.op)},
                      {"ranks", r.ranks},
                      {"nodes", r.nodes},
                      {"bytes", r.size.value()},
                      {"in_place", r.in_place},
                      {"time_us", r.time.to_us()},
                      {"algbw_gbps", r.algbw.value() / 1e9},
                      {"busbw_gbps", r.busbw.value() / 1e9}});
      put_nonempty(rows.back(), "algorithm", r.algorithm);
      put_nonempty(rows.back(), "protocol", r.protocol);
      put_nonempty(rows.back(), "run", r.run);
      put_nonempty(rows.back(), "origin", r.origin);
    }
    j["collective_table"] = rows;
  }
  if (!p.collective_fits.empty()) {
    Json rows = Json::array();
    for (const auto& f : p.collective_fits) {
      rows.push_back({{"op", hw::to_string(f.op)},
                      {"ranks", f.ranks},
                      {"nodes", f.nodes},
                      {"alpha_us", f.alpha.to_us()},
                      {"bus_gbps", f.bus_bandwidth.value() / 1e9},
                      {"rms_relative_residual", f.rms_relative_residual},
                      {"points", f.points}});
      put_nonempty(rows.back(), "algorithm", f.algorithm);
      put_nonempty(rows.back(), "protocol", f.protocol);
      put_nonempty(rows.back(), "run", f.run);
    }
    j["collective_fits"] = rows;
  }
  if (!p.collective_scales.empty()) {
    Json rows = Json::array();
    for (const auto& f : p.collective_scales) {
      rows.push_back({{"run", f.run},
                      {"cluster", f.cluster},
                      {"op", hw::to_string(f.op)},
                      {"ranks", f.ranks},
                      {"nodes", f.nodes},
                      {"bandwidth_scale", f.bandwidth_scale},
                      {"latency_offset_us", f.latency_offset_us},
                      {"bandwidth_rows", f.bandwidth_rows},
                      {"latency_rows", f.latency_rows},
                      {"rows", f.rows},
                      {"rms_log_residual", f.rms_log_residual}});
      put_nonempty(rows.back(), "bandwidth_algorithm", f.bandwidth_algorithm);
      put_nonempty(rows.back(), "latency_algorithm", f.latency_algorithm);
      put_nonempty(rows.back(), "latency_protocol", f.latency_protocol);
    }
    j["collective_scales"] = rows;
  }
}

}  // namespace

Json device_profile_to_json(const hw::DeviceProfile& p) {
  Json j;
  j["schema_version"] = kDeviceProfileSchemaVersion;
  j["name"] = p.name;
  if (!p.base.empty()) j["base_profile"] = p.base;
  j["kind"] = hw::to_string(p.kind);
  j["source"] = p.source;
  Json peak = Json::object();
  for (const auto& [t, v] : p.peak) peak[hw::to_string(t)] = v.value() / 1e12;
  j["peak_tflops"] = peak;
  j["hbm_gbps"] = p.hbm_bandwidth.value() / 1e9;
  j["memory_gib"] = p.memory / kGiB;
  j["sm_count"] = p.sm_count;
  // A measured profile says the figures its tables were taken at (its own, unless edited).
  if (p.kind != hw::ProfileKind::kDatasheet) {
    const hw::HardwareFigures f = p.measured_with.value_or(p.figures());
    Json at = Json::object();
    for (const auto& [t, v] : f.peak) at[hw::to_string(t)] = v.value() / 1e12;
    j["measured_with"] = {
        {"peak_tflops", at}, {"hbm_gbps", f.hbm_bandwidth.value() / 1e9}, {"sm_count", f.sm_count}};
  }
  if (p.boost_clock_mhz) j["boost_clock_mhz"] = *p.boost_clock_mhz;
  j["power"] = {{"tdp_w", p.power.tdp.value()},
                {"idle_w", p.power.idle.value()},
                {"gemm_w", p.power.gemm.value()},
                {"memory_w", p.power.memory.value()},
                {"communication_w", p.power.communication.value()},
                {"source", p.power.source}};
  if (p.reference_system) {
    const auto& s = *p.reference_system;
    j["reference_system"] = {{"name", s.name},
                             {"gpus", s.gpus},
                             {"max_power_w", s.max_power.value()},
                             {"source", s.source}};
  }
  put_models(j, p);
  put_kernel_tables(j, p);
  put_collective_tables(j, p);
  return j;
}

std::string measurement_date_now(bool reproducible) {
  std::time_t now = std::time(nullptr);
  const char* epoch = reproducible ? std::getenv("SOURCE_DATE_EPOCH") : nullptr;
  if (epoch != nullptr) {
    char* end = nullptr;
    errno = 0;
    const long long seconds = std::strtoll(epoch, &end, 10);
    if (errno != 0 || end == epoch || *end != '\0' || seconds < 0 || seconds > now) {
      throw InputError(std::string("SOURCE_DATE_EPOCH: '") + epoch +
                       "' is not a whole number of seconds from 1970 up to now; unset it, or "
                       "give the date the import should record");
    }
    now = static_cast<std::time_t>(seconds);
  }
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace megasim::io
