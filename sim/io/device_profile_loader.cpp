#include "io/device_profile_loader.h"

#include <cmath>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "engine/error.h"
#include "io/collective_constants_reader.h"
#include "io/device_peaks.h"
#include "io/gemm_shapes.h"
#include "io/measured_rows.h"

namespace megasim::io {
namespace {

using hw::DType;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr std::int64_t kMaxDim = std::int64_t{1} << 40;
// Attention head dimensions in use are 64–256; fused kernels take at most a few hundred.
constexpr std::int64_t kMaxHeadDim = 4096;
// A year in microseconds: no kernel or collective row takes longer.
constexpr double kMaxTimeUs = 3.2e13;

const std::vector<DType> kDTypes = {DType::kFp32, DType::kTf32, DType::kBf16, DType::kFp16,
                                    DType::kFp8};
const std::vector<hw::MemoryKernel> kMemoryKernels = {
    hw::MemoryKernel::kCopy,         hw::MemoryKernel::kLayerNorm,
    hw::MemoryKernel::kRmsNorm,      hw::MemoryKernel::kGelu,
    hw::MemoryKernel::kSwiglu,       hw::MemoryKernel::kDropoutResidual,
    hw::MemoryKernel::kBiasDropoutResidual, hw::MemoryKernel::kSoftmax,
    hw::MemoryKernel::kRotary,       hw::MemoryKernel::kEmbedding,
    hw::MemoryKernel::kCrossEntropy, hw::MemoryKernel::kAdam,
    hw::MemoryKernel::kLamb};
const std::vector<hw::CollectiveOp> kOps = {
    hw::CollectiveOp::kAllReduce, hw::CollectiveOp::kAllGather, hw::CollectiveOp::kReduceScatter,
    hw::CollectiveOp::kAllToAll,  hw::CollectiveOp::kSendRecv,  hw::CollectiveOp::kBroadcast,
    hw::CollectiveOp::kReduce};
// The algorithms a fitted collective scale may name (hw::CollectiveScale).
const std::vector<std::string> kScaledAlgorithmNames = {"tree", "ring", "nvls", "nvls_tree", "pat"};

template <typename E>
std::vector<std::string> names(const std::vector<E>& all) {
  std::vector<std::string> out;
  for (E e : all) out.push_back(hw::to_string(e));
  return out;
}

template <typename E>
E pick(JsonReader& r, const std::string& key, const std::vector<E>& all) {
  const std::string s = r.choice(key, names(all));
  for (E e : all) {
    if (s == hw::to_string(e)) return e;
  }
  r.fail(key, "unreachable choice");
}

Time read_us(JsonReader& r, const std::string& key, double lo) {
  return Time::from_us(r.number(key, lo, kMaxTimeUs));
}

hw::PowerProfile read_power(JsonReader r) {
  hw::PowerProfile p;
  p.tdp = Watts(r.number("tdp_w", 1.0, 1e5));
  p.idle = Watts(r.number("idle_w", 0.0, 1e5));
  // A GPU under GEMM load draws power: zero is a missing figure, not a measurement.
  p.gemm = Watts(r.number("gemm_w", 1.0, 1e5));
  p.memory = Watts(r.number("memory_w", 0.0, 1e5));
  p.communication = Watts(r.number("communication_w", 0.0, 1e5));
  p.source = r.text_or("source", "");
  if (p.source.empty()) r.fail("source", "every power figure needs a source");
  // Board power above the power limit cannot be sustained: a typo, not a measurement.
  for (const auto& [key, w] : {std::pair{"idle_w", p.idle}, std::pair{"gemm_w", p.gemm},
                               std::pair{"memory_w", p.memory},
                               std::pair{"communication_w", p.communication}}) {
    if (w > p.tdp) {
      r.fail(key, fmt::format("{:g} W exceeds tdp_w {:g} W", w.value(), p.tdp.value()));
    }
    // A GPU at work draws at least what it draws idle: the other way round, a failure would
    // raise the cluster's power and a busier plan would look cheaper.
    if (w < p.idle) {
      r.fail(key, fmt::format("{:g} W is below idle_w {:g} W", w.value(), p.idle.value()));
    }
  }
  r.finish();
  return p;
}

std::string required_source(JsonReader& r) {
  const std::string s = r.text_or("source", "");
  if (s.empty()) r.fail("source", "missing: every published figure needs a source");
  return s;
}

hw::GemmModelParams read_gemm_model(JsonReader r) {
  hw::GemmModelParams g;
  for (JsonReader t : r.object_array("tiles")) {
    g.tiles.push_back({t.integer("m", 1, 4096), t.integer("n", 1, 4096)});
    t.finish();
  }
  if (g.tiles.empty()) r.fail("tiles", "needs at least one tile shape");
  g.launch_overhead = read_us(r, "launch_overhead_us", 0.0);
  double last = 0.0;
  for (JsonReader c : r.object_array("size_classes")) {
    const double max_gflop = c.number("max_gflop", 1e-9, kInf);
    if (max_gflop <= last) {
      c.fail("max_gflop", fmt::format("{:g} is not above the previous class's {:g}: classes "
                                      "must ascend",
                                      max_gflop, last));
    }
    last = max_gflop;
    g.classes.push_back({Flops(max_gflop * 1e9), c.number("efficiency", 0.01, 1.0)});
    c.finish();
  }
  if (g.classes.empty()) r.fail("size_classes", "needs at least one size class");
  g.k_half = r.number_or("k_half", 0.0, 0.0, 1e6);
  g.fitted = r.boolean_or("fitted", false);
  g.source = required_source(r);
  r.finish();
  return g;
}

hw::GemmShape read_gemm_shape(JsonReader& r) {
  hw::GemmShape s;
  s.m = r.integer("m", 1, kMaxDim);
  s.n = r.integer("n", 1, kMaxDim);
  s.k = r.integer("k", 1, kMaxDim);
  s.batch = r.integer_or("batch", 1, 1, kMaxDim);
  s.dtype = pick(r, "dtype", kDTypes);
  s.transpose_a = r.boolean_or("transpose_a", false);
  s.transpose_b = r.boolean_or("transpose_b", false);
  read_fast_accum(r, s);
  return s;
}

// A measured fused attention row: always fused and of the measured kernel class
// (hw::kMeasuredFlashVersion), so neither is a key.
hw::AttentionShape read_attention_shape(JsonReader& r) {
  hw::AttentionShape s;
  s.batch = r.integer_or("batch", 1, 1, kMaxDim);
  s.heads = r.integer("heads", 1, kMaxDim);
  s.kv_heads = r.integer_or("kv_heads", s.heads, 1, kMaxDim);
  // Both keys said: a clash of the two read as kv_heads out of [1, heads] alone.
  if (s.kv_heads > s.heads) {
    r.fail("kv_heads", fmt::format("{} key-value heads for heads {}: a query head has one "
                                   "key-value head at most",
                                   s.kv_heads, s.heads));
  }
  if (s.heads % s.kv_heads != 0) {
    r.fail("kv_heads", fmt::format("{} does not divide heads {}", s.kv_heads, s.heads));
  }
  s.seq = r.integer("seq", 1, kMaxDim);
  s.head_dim = r.integer("head_dim", 1, kMaxHeadDim);
  s.causal = r.boolean_or("causal", true);
  s.window = r.integer_or("window", 0, 0, s.seq);
  s.backward = r.choice("pass", {"forward", "backward"}) == "backward";
  s.dtype = pick(r, "dtype", kDTypes);
  s.fused = true;
  s.flash_version = hw::kMeasuredFlashVersion;
  return s;
}

// A table of measured kernels: each row a shape and its median time, within what the board
// can do (check_kernel_row); a shape measured twice with different times leaves the price to
// the rows' order: refused, naming the row.
template <class Measurement, class ReadShape>
void read_kernel_table(JsonReader& r, const char* key, ReadShape read_shape,
                       const hw::DeviceProfile& p, std::vector<Measurement>& out) {
  if (!r.has(key)) return;
  for (JsonReader row : r.object_array(key)) {
    Measurement m;
    m.shape = read_shape(row);
    m.time = read_us(row, "time_us", 1e-3);
    check_kernel_row(row, m.shape.flops(), m.shape.dtype, m.time, p);
    for (std::size_t i = 0; i < out.size(); ++i) {
      if (!(out[i].shape == m.shape) || out[i].time == m.time) continue;
      row.fail("time_us", fmt::format("{:g} µs for the shape {}[{}] measured at {:g} µs; keep "
                                      "one time a shape (the median of its runs)",
                                      m.time.to_us(), key, i, out[i].time.to_us()));
    }
    row.finish();
    out.push_back(m);
  }
}

// Measured or imported collective rows and the alpha-beta fits made from them.
void read_collective_tables(JsonReader& r, hw::DeviceProfile& p) {
  if (r.has("collective_table")) {
    for (JsonReader row : r.object_array("collective_table")) {
      hw::CollectiveMeasurement m;
      m.op = pick(row, "op", kOps);
      m.ranks = static_cast<int>(row.integer("ranks", 1, 1 << 24));
      m.nodes = static_cast<int>(row.integer("nodes", 1, 1 << 24));
      check_nodes(row, m.ranks, m.nodes);
      m.size = Bytes(row.number("bytes", 1.0, 1e15));
      m.in_place = row.boolean_or("in_place", false);
      m.time = read_us(row, "time_us", 1e-3);  // a row of no time fits nothing
      m.algbw = gbyte_per_s(row.number("algbw_gbps", 0.0, 1e6));
      m.busbw = gbyte_per_s(row.number("busbw_gbps", 0.0, 1e6));
      m.algorithm = row.string_or("algorithm", "");
      m.protocol = row.string_or("protocol", "");
      m.run = row.string_or("run", "");
      m.origin = row.string_or("origin", "");
      check_collective_row(row, m, p.collective_table);
      row.finish();
      p.collective_table.push_back(m);
    }
  }
  if (r.has("collective_fits")) {
    for (JsonReader row : r.object_array("collective_fits")) {
      hw::CollectiveFit f;
      f.op = pick(row, "op", kOps);
      f.ranks = static_cast<int>(row.integer("ranks", 1, 1 << 24));
      f.nodes = static_cast<int>(row.integer("nodes", 1, 1 << 24));
      check_nodes(row, f.ranks, f.nodes);
      f.algorithm = row.string_or("algorithm", "");
      f.protocol = row.string_or("protocol", "");
      f.run = row.string_or("run", "");
      f.alpha = read_us(row, "alpha_us", 0.0);
      f.bus_bandwidth = gbyte_per_s(row.number("bus_gbps", 1e-6, 1e6));
      f.rms_relative_residual = row.number("rms_relative_residual", 0.0, kInf);
      f.points = static_cast<int>(row.integer("points", 2, 1 << 24));
      row.finish();
      p.collective_fits.push_back(f);
    }
  }
  if (r.has("collective_scales")) {
    for (JsonReader row : r.object_array("collective_scales")) {
      hw::CollectiveScaleFit f;
      f.run = row.string_or("run", "");
      f.cluster = row.string_or("cluster", "");
      f.op = pick(row, "op", kOps);
      f.ranks = static_cast<int>(row.integer("ranks", 2, 1 << 24));
      f.nodes = static_cast<int>(row.integer("nodes", 1, 1 << 24));
      check_nodes(row, f.ranks, f.nodes);
      f.bandwidth_scale = row.number("bandwidth_scale", 1e-3, 1e3);
      f.latency_offset_us = row.number("latency_offset_us", -1e6, 1e6);
      f.bandwidth_rows = static_cast<int>(row.integer("bandwidth_rows", 0, 1 << 24));
      f.latency_rows = static_cast<int>(row.integer("latency_rows", 0, 1 << 24));
      f.rows = static_cast<int>(row.integer("rows", 1, 1 << 24));
      f.rms_log_residual = row.number("rms_log_residual", 0.0, kInf);
      f.bandwidth_algorithm = row.choice_or("bandwidth_algorithm", "", kScaledAlgorithmNames);
      f.latency_algorithm = row.choice_or("latency_algorithm", "", kScaledAlgorithmNames);
      f.latency_protocol = row.choice_or("latency_protocol", "", {"ll", "ll128", "simple"});
      if (f.latency_algorithm.empty() && !f.latency_protocol.empty())
        row.fail("latency_protocol",
                 "a latency protocol needs its latency_algorithm (the NCCL "
                 "algorithm the regime's rows ran)");
      row.finish();
      p.collective_scales.push_back(f);
    }
  }
}

void read_tables(JsonReader& r, hw::DeviceProfile& p) {
  read_kernel_table(r, "gemm_table", read_gemm_shape, p, p.gemm_table);
  read_kernel_table(r, "attention_table", read_attention_shape, p, p.attention_table);
  if (r.has("memory_table")) {
    for (JsonReader row : r.object_array("memory_table")) {
      hw::MemoryMeasurement m;
      m.kind = pick(row, "kernel", kMemoryKernels);
      m.bytes = Bytes(row.number("bytes", 1.0, 1e15));
      m.time = read_us(row, "time_us", 1e-3);
      check_memory_row(row, p, m, p.memory_table);
      row.finish();
      p.memory_table.push_back(m);
    }
  }
  if (r.has("power_table")) {
    for (JsonReader row : r.object_array("power_table")) {
      hw::PowerMeasurement m;
      m.gemm_share = row.number_or("gemm_share", 0.0, 0.0, 1.0);
      m.memory_share = row.number_or("memory_share", 0.0, 0.0, 1.0);
      m.communication_share = row.number_or("communication_share", 0.0, 0.0, 1.0);
      if (m.idle_share() < -1e-9) {
        row.fail("communication_share",
                 fmt::format("the shares of GEMM ({:g}), memory-bound ({:g}) and communication "
                             "({:g}) time add up to more than 1",
                             m.gemm_share, m.memory_share, m.communication_share));
      }
      m.watts = Watts(row.number("watts", 1.0, 1e5));
      check_power_row(row, p, m.watts);
      row.finish();
      p.power_table.push_back(m);
    }
  }
  read_collective_tables(r, p);
}

// The GEMM rate at the power limit by GEMM share: shares increasing, rates not increasing.
hw::SustainedGemm read_sustained_gemm(JsonReader& r) {
  hw::SustainedGemm s;
  for (JsonReader row : r.object_array("points")) {
    hw::SustainedGemm::Point p;
    p.gemm_share = row.number("gemm_share", 0.01, 1.0);
    p.rate = row.number("rate", 0.1, 1.0);
    if (!s.points.empty() && p.gemm_share <= s.points.back().gemm_share) {
      row.fail("gemm_share", fmt::format("{} follows {}: the points' shares must increase",
                                         p.gemm_share, s.points.back().gemm_share));
    }
    if (!s.points.empty() && p.rate > s.points.back().rate) {
      row.fail("rate",
               fmt::format("{} at share {} is above {} at share {}: a larger GEMM share "
                           "cannot run faster at the power limit",
                           p.rate, p.gemm_share, s.points.back().rate, s.points.back().gemm_share));
    }
    row.finish();
    s.points.push_back(p);
  }
  if (s.points.empty()) r.fail("points", "no points: leave the section out instead");
  s.source = required_source(r);
  r.finish();
  return s;
}

// Reference system, interference and the kernel models (GEMM, attention, memory-bound), then
// the measurement's versions when the profile was measured or imported.
void read_models(JsonReader& r, hw::DeviceProfile& p) {
  if (auto s = r.optional_object("reference_system")) {
    hw::ReferenceSystem ref;
    ref.name = s->string("name");
    ref.gpus = static_cast<int>(s->integer("gpus", 1, 1 << 20));
    ref.max_power = Watts(s->number("max_power_w", 1.0, 1e9));
    ref.source = required_source(*s);
    s->finish();
    p.reference_system = ref;
  }
  {
    JsonReader i = r.object("interference");
    p.interference.compute_slowdown = i.number("compute_slowdown", 1.0, 10.0);
    p.interference.source = required_source(i);
    i.finish();
  }
  if (auto f = r.optional_object("fleet_variation")) {
    p.fleet_variation.sigma = f->number("sigma", 0.0, 0.2);
    p.fleet_variation.source = required_source(*f);
    f->finish();
  }
  if (auto g = r.optional_object("sustained_gemm")) p.sustained_gemm = read_sustained_gemm(*g);
  p.gemm = read_gemm_model(r.object("gemm_model"));
  {
    JsonReader a = r.object("attention_model");
    p.attention.fused_forward_efficiency = a.number("fused_forward_efficiency", 0.01, 1.0);
    p.attention.fused_backward_efficiency = a.number("fused_backward_efficiency", 0.01, 1.0);
    p.attention.flash_v1_forward_efficiency = a.optional_number("flash_v1_forward_efficiency", 0.01, 1.0);
    p.attention.flash_v1_backward_efficiency =
        a.optional_number("flash_v1_backward_efficiency", 0.01, 1.0);
    p.attention.forward_half_gflop =
        a.optional_number("forward_half_gflop", 0.0, 1e6).value_or(0.0);
    p.attention.backward_half_gflop =
        a.optional_number("backward_half_gflop", 0.0, 1e6).value_or(0.0);
    p.attention.fitted = a.boolean_or("fitted", false);
    p.attention.source = required_source(a);
    a.finish();
  }
  {
    JsonReader m = r.object("memory_model");
    p.memory_model.bandwidth_efficiency = m.number("bandwidth_efficiency", 0.01, 1.0);
    p.memory_model.launch_overhead = read_us(m, "launch_overhead_us", 0.0);
    p.memory_model.fitted = m.boolean_or("fitted", false);
    p.memory_model.source = required_source(m);
    m.finish();
  }
  if (auto m = r.optional_object("measurement")) {
    hw::MeasurementInfo info;
    info.date = m->string("date");
    info.tool = m->string("tool");
    info.device_name = m->string_or("device_name", "");
    check_measured_part(*m, info.device_name, p);
    info.driver = m->string_or("driver", "");
    info.cuda = m->string_or("cuda", "");
    info.cublas = m->string_or("cublas", "");
    info.cudnn = m->string_or("cudnn", "");
    info.nccl = m->string_or("nccl", "");
    m->finish();
    p.measurement = info;
  }
}

}  // namespace

LoadedDeviceProfile parse_device_profile(const Json& doc, const std::string& origin) {
  if (!doc.is_object()) {
    throw InputError(origin + ": a device profile must be a JSON object, found " +
                     json_type_name(doc));
  }
  check_input_kind(doc, InputKind::kDeviceProfile, origin);
  JsonReader r(doc, "", origin);
  LoadedDeviceProfile out;
  hw::DeviceProfile& p = out.profile;
  r.string_or("$schema", "");  // a string when given, as the schemas say
  const auto version = r.integer("schema_version", 1, 1000);
  if (version != kDeviceProfileSchemaVersion) {
    r.fail("schema_version", fmt::format("version {} is not the {} this build reads", version,
                                         kDeviceProfileSchemaVersion));
  }
  p.name = r.string("name");
  p.base = r.text_or("base_profile", "");
  const std::string kind = r.choice("kind", {"datasheet", "measured", "imported"});
  p.kind = kind == "measured"   ? hw::ProfileKind::kMeasured
           : kind == "imported" ? hw::ProfileKind::kImported
                                : hw::ProfileKind::kDatasheet;
  p.source = required_source(r);

  p.peak = read_peaks(r);
  p.hbm_bandwidth = gbyte_per_s(r.number("hbm_gbps", 1.0, 1e6));
  p.memory = kGiB * r.number("memory_gib", 0.01, 1e6);
  p.sm_count = static_cast<int>(r.integer("sm_count", 1, 100000));
  p.boost_clock_mhz = r.optional_number("boost_clock_mhz", 1.0, 1e5);

  p.power = read_power(r.object("power"));
  read_models(r, p);
  // The rows are checked against the figures they were measured at, not an edit's.
  p.measured_with = read_measured_with(r);
  const hw::HardwareFigures figures = p.figures();
  if (p.measured_with) p.set_figures(*p.measured_with);
  read_tables(r, p);
  p.set_figures(figures);
  check_measured_with(r, p);
  if (p.kind != hw::ProfileKind::kDatasheet && !p.measurement) {
    r.fail("measurement", "a " + kind + " profile must say when and with what it was measured");
  }
  if (p.kind == hw::ProfileKind::kDatasheet) check_datasheet_has_no_rows(r, p);
  // Owned by the collective module's reader, handed back untouched; read here too, so that a
  // section simulate would refuse is refused by every command that loads the profile
  // (calibrate fit copied a string constant through to a profile simulate could not load).
  if (r.has("collective")) read_collective_constants(r.object("collective"));
  if (doc.contains("collective")) out.collective = doc.at("collective");
  r.finish();
  return out;
}

LoadedDeviceProfile load_device_profile(const std::filesystem::path& file, FilesRead* read) {
  const Json doc = parse_json_file(file, read);
  LoadedDeviceProfile out = parse_device_profile(doc, file.string());
  out.file = file;
  return out;
}

}  // namespace megasim::io
