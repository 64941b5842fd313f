// megasim-calibrate-gpu: measures the local GPUs and writes a calibration JSON (a device
// profile of kind "measured", schema of io/device_profile_loader.h) that a scenario can name
// as its device. Sections: GEMM (cuBLASLt), fused attention (cuDNN SDPA through the graph
// API), memory-bound kernels, NCCL collectives across all local GPUs (default and forced
// algorithm/protocol), compute/communication interference, board power by activity (NVML,
// loaded at run time). The file is rewritten (temp + rename) after every measured item, so an
// interrupted run keeps what it measured and --resume measures only what the file lacks.
// A failed item is reported and skipped, never fatal.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>

#include <CLI/CLI.hpp>
#include <cublasLt.h>
#include <cudnn.h>
#include <fmt/format.h>
#include <nccl.h>

#include "calibrate/fit.h"
#include "calibrate/gpu/attention_bench.h"
#include "calibrate/gpu/gemm_bench.h"
#include "calibrate/gpu/memory_kernels.h"
#include "calibrate/gpu/nccl_bench.h"
#include "calibrate/gpu/power_sampler.h"
#include "engine/error.h"
#include "hw/gpu_part.h"
#include "io/device_profile_loader.h"
#include "io/gemm_shapes.h"
#include "io/json_reader.h"
#include "io/output.h"
#include "io/resolve.h"

namespace megasim::gpu {

void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw GpuError(std::string(what) + ": " + cudaGetErrorString(e));
}

namespace {

struct Options {
  std::string device;
  std::string output;
  std::string name;
  bool quick = false;
  bool resume = false;
  double timeout_s = 20.0;
  std::vector<std::string> skip;
  std::string shapes;  // GEMM shapes of a scenario (megasim calibrate shapes), measured first
};

std::string version_string(int v, int major_div, int minor_div) {
  return fmt::format("{}.{}", v / major_div, (v % major_div) / minor_div);
}

// A datasheet profile to start from, by the device's name, when --device is not given.
// Only the SXM parts have profiles: a PCIe or NVL card differs in clocks, power and memory.
std::string guess_base(const std::string& name) {
  std::string upper = name;
  std::transform(upper.begin(), upper.end(), upper.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  const auto has = [&upper](const char* s) { return upper.find(s) != std::string::npos; };
  // "NVIDIA A100-PCIE-40GB", "NVIDIA H100 NVL"; a GH200's GPU is an H100-class part.
  if (!has("PCIE") && !has("NVL") && !has("GH200")) {
    if (has("H200")) return "h200-sxm-141gb";
    if (has("H100")) return "h100-sxm5-80gb";
    if (has("A100")) return has("40GB") ? "a100-sxm4-40gb" : "a100-sxm4-80gb";
  }
  throw InputError("no datasheet profile matches '" + name + "': pass --device PROFILE");
}

bool skipped(const Options& o, const std::string& section) {
  return std::find(o.skip.begin(), o.skip.end(), section) != o.skip.end();
}

// Twice the device's L2 cache: written, it leaves nothing of a kernel's buffers there.
std::size_t l2_flush_bytes() {
  int l2_bytes = 0, dev = 0;
  MEGASIM_CUDA_CHECK(cudaGetDevice(&dev));
  MEGASIM_CUDA_CHECK(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, dev));
  return 2 * static_cast<std::size_t>(std::max(l2_bytes, 1 << 20));
}

// The operand fills queued on `stream`, done: a failed fill is an error, not rows timed on
// zeros (the timing clears the last error first; unchecked until 2026-12-06).
void fills_done(cudaStream_t stream) {
  MEGASIM_CUDA_CHECK(cudaGetLastError());
  MEGASIM_CUDA_CHECK(cudaStreamSynchronize(stream));
}

void measure_memory(hw::DeviceProfile& p, const Budget& budget, bool quick,
                    const std::function<void()>& save) {
  // Up to 1 GiB in both modes: a buffer well past the L2 cache (H200: 50 MB) pins HBM.
  std::vector<std::size_t> sizes;
  for (std::size_t s = std::size_t{1} << 20; s <= std::size_t{1} << 30; s *= quick ? 32 : 4)
    sizes.push_back(s);
  cudaStream_t stream = nullptr;
  MEGASIM_CUDA_CHECK(cudaStreamCreate(&stream));
  // Each timed repeat starts with the L2 written over: a small buffer is read from HBM too.
  const DeviceBuffer flush(l2_flush_bytes());
  Budget b = budget;
  b.l2_flush = flush.get();
  b.l2_flush_bytes = l2_flush_bytes();
  for (std::size_t bytes : sizes) {
    try {
      // Five buffers of `bytes` (enough for LAMB over bytes/4 floats) and a norm weight.
      constexpr int kHidden = 8192;  // GPT-3 13B-class width; rows fill the buffer
      const DeviceBuffer buf_a(bytes), buf_c(bytes), buf_m(bytes), buf_v(bytes), buf_u(bytes),
          buf_w(kHidden * 2);
      void *a = buf_a.get(), *c = buf_c.get(), *m = buf_m.get(), *v = buf_v.get(),
           *u = buf_u.get(), *w = buf_w.get();
      const std::size_t halfs = bytes / 2, floats = bytes / sizeof(float);
      // Inputs of uniform bf16 values (memory_kernels.h: Fill); fp32 for the optimizers below.
      launch_fill(a, halfs, Fill::kBf16, 1, stream);
      launch_fill(m, halfs, Fill::kBf16, 2, stream);
      launch_fill(w, kHidden, Fill::kBf16, 3, stream);
      fills_done(stream);
      // A size's rows join the table once all its kernels ran (a failed launch leaves none).
      std::vector<hw::MemoryMeasurement> measured;
      const auto add = [&](hw::MemoryKernel k, double moved, double seconds) {
        measured.push_back({k, Bytes(moved), Time::from_seconds(seconds)});
      };
      add(hw::MemoryKernel::kCopy, 2.0 * bytes, median_seconds(stream, b, [&] {
            MEGASIM_CUDA_CHECK(cudaMemcpyAsync(c, a, bytes, cudaMemcpyDeviceToDevice, stream));
          }));
      add(hw::MemoryKernel::kGelu, 2.0 * bytes,
          median_seconds(stream, b, [&] { launch_gelu(a, c, halfs, stream); }));
      add(hw::MemoryKernel::kSwiglu, 3.0 * bytes,
          median_seconds(stream, b, [&] { launch_swiglu(a, m, c, halfs, stream); }));
      add(hw::MemoryKernel::kDropoutResidual, 3.0 * bytes,
          median_seconds(stream, b, [&] { launch_dropout_residual(a, m, c, halfs, stream); }));
      const std::size_t rows = halfs / kHidden;
      if (rows > 0) {
        const double moved = 4.0 * static_cast<double>(rows) * kHidden;
        add(hw::MemoryKernel::kLayerNorm, moved, median_seconds(stream, b, [&] {
              launch_norm(a, w, c, rows, kHidden, true, stream);
            }));
        add(hw::MemoryKernel::kRmsNorm, moved, median_seconds(stream, b, [&] {
              launch_norm(a, w, c, rows, kHidden, false, stream);
            }));
      }
      // Attention scores of 2048-token rows (the unfused path's softmax).
      constexpr int kScoreCols = 2048;
      if (halfs >= static_cast<std::size_t>(kScoreCols)) {
        const std::size_t score_rows = halfs / kScoreCols;
        add(hw::MemoryKernel::kSoftmax, 4.0 * static_cast<double>(score_rows) * kScoreCols,
            median_seconds(stream, b, [&] { launch_softmax(a, c, score_rows, kScoreCols, stream); }));
      }
      const auto f = [](void* x) { return static_cast<float*>(x); };
      launch_fill(a, floats, Fill::kFp32, 4, stream);          // parameters
      launch_fill(c, floats, Fill::kFp32, 5, stream);          // gradients
      launch_fill(m, floats, Fill::kFp32, 6, stream);          // first moments
      launch_fill(v, floats, Fill::kFp32Positive, 7, stream);  // second moments, never negative
      fills_done(stream);
      add(hw::MemoryKernel::kAdam, 28.0 * floats, median_seconds(stream, b, [&] {
            launch_adam(f(a), f(c), f(m), f(v), floats, stream);
          }));
      add(hw::MemoryKernel::kLamb, 40.0 * floats, median_seconds(stream, b, [&] {
            launch_lamb(f(a), f(c), f(m), f(v), f(u), f(w), floats, stream);
          }));
      MEGASIM_CUDA_CHECK(cudaGetLastError());
      p.memory_table.insert(p.memory_table.end(), measured.begin(), measured.end());
      save();
    } catch (const GpuError& e) {
      std::fprintf(stderr, "megasim-calibrate-gpu: memory %zu B: %s (skipped)\n", bytes, e.what());
      cudaGetLastError();
    }
  }
  cudaStreamDestroy(stream);
}

// The versions of the software stack the figures were measured with.
hw::MeasurementInfo measurement_info(const cudaDeviceProp& prop, bool quick) {
  int driver = 0, runtime = 0, nccl = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  ncclGetVersion(&nccl);
  const std::size_t cublas = cublasLtGetVersion();
  const std::size_t cudnn = cudnnGetVersion();
  return hw::MeasurementInfo{
      io::measurement_date_now(),
      "megasim-calibrate-gpu" + std::string(quick ? " --quick" : ""), prop.name,
      version_string(driver, 1000, 10), version_string(runtime, 1000, 10),
      fmt::format("{}.{}.{}", cublas / 10000, (cublas % 10000) / 100, cublas % 100),
      fmt::format("{}.{}.{}", cudnn / 10000, (cudnn % 10000) / 100, cudnn % 100),
      fmt::format("{}.{}.{}", nccl / 10000, (nccl % 10000) / 100, nccl % 100)};
}

// Names the profile and records what it was measured on; `base_name` keeps the sources of
// every figure this run does not measure.
void describe_device(hw::DeviceProfile& p, const Options& o, const cudaDeviceProp& prop,
                     int devices, const std::string& base_name) {
  int clock_khz = 0;
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0);
  p.kind = hw::ProfileKind::kMeasured;
  p.name = o.name.empty() ? base_name + "-measured" : o.name;
  if (p.base.empty()) p.base = base_name;
  p.source = fmt::format("Measured by megasim-calibrate-gpu{} on {} x {}; figures not measured "
                         "keep the sources of the base profile '{}'.",
                         o.quick ? " --quick" : "", devices, prop.name, base_name);
  p.sm_count = prop.multiProcessorCount;
  p.memory = Bytes(static_cast<double>(prop.totalGlobalMem));
  if (clock_khz > 0) p.boost_clock_mhz = clock_khz / 1000.0;
  p.measurement = measurement_info(prop, o.quick);
}

using Report = std::function<void(const std::string&)>;

// --resume: the shapes of a grid its table does not hold yet, so that a section the time limit
// cut short goes on where it stopped.
template <class Shape, class Row>
std::vector<Shape> not_measured(std::vector<Shape> grid, const std::vector<Row>& table) {
  std::erase_if(grid, [&](const Shape& g) {
    return std::any_of(table.begin(), table.end(), [&](const Row& r) { return r.shape == g; });
  });
  return grid;
}

// The sections one GPU measures: GEMMs (the scenario's shapes first), fused attention and
// memory-bound kernels. With --resume the GEMMs and attention shapes already in the profile
// are kept and the rest measured; the memory section, once it has rows, is kept whole.
void measure_single_gpu(hw::DeviceProfile& p, const Options& o, const cudaDeviceProp& prop,
                        const Budget& budget, const std::function<void()>& save,
                        const Report& report) {
  const bool fp8 = prop.major * 10 + prop.minor >= 89;
  std::vector<hw::GemmShape> grid;
  if (!o.shapes.empty() && !skipped(o, "gemm")) grid = io::read_gemm_shapes(o.shapes);
  for (const auto& g : default_gemm_grid(o.quick, fp8)) grid.push_back(g);
  // A scenario's shape may be one of the grid's too: measured once (the loader refuses a
  // table that times one shape twice).
  for (std::size_t i = 0; i < grid.size(); ++i) {
    const hw::GemmShape g = grid[i];
    grid.erase(std::remove(grid.begin() + static_cast<std::ptrdiff_t>(i) + 1, grid.end(), g),
               grid.end());
  }
  grid = not_measured(std::move(grid), p.gemm_table);
  if (!skipped(o, "gemm") && !grid.empty()) {
    std::printf("gemm: %zu shapes\n", grid.size());
    // A fifth of a second of back-to-back 8192^3 GEMMs first, untimed, so that the first
    // shapes are not timed while the SM clock is still rising from idle (milliseconds), then
    // a second and a half idle, so that they are not timed under the power limit either: a
    // second of it on 2026-12-04 held the board at its 700 W limit, and the six shapes timed
    // next were slow: 4096x4608x12288 at 684 TFLOP/s, where the seventh, 4096x6144x12288 of
    // the same layout, ran at 818 (and a TN row of the first shape later at 827).
    Budget warm = budget;
    warm.warmup = 1;
    warm.repeats = 1 << 20;
    warm.item_timeout_s = 0.2;
    warm.spin = false;
    measure_gemms(
        {hw::GemmShape{8192, 8192, 8192, 1, hw::DType::kBf16, true, false}}, warm,
        [](const hw::GemmMeasurement&) {}, report);
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    measure_gemms(grid, budget,
                  [&](const hw::GemmMeasurement& m) { p.gemm_table.push_back(m); save(); }, report);
  }
  // An attention shape is measured forward and backward (two rows, the file rewritten after
  // each): one without both is measured again, its lone row dropped first.
  std::vector<hw::AttentionShape> attention;
  for (const auto& g : skipped(o, "attention") ? std::vector<hw::AttentionShape>{}
                                               : default_attention_grid(o.quick)) {
    const auto has = [&](bool backward) {
      hw::AttentionShape pass = g;
      pass.backward = backward;
      return std::any_of(p.attention_table.begin(), p.attention_table.end(),
                         [&](const hw::AttentionMeasurement& r) { return r.shape == pass; });
    };
    if (has(false) && has(true)) continue;
    std::erase_if(p.attention_table, [&](const hw::AttentionMeasurement& r) {
      hw::AttentionShape forward = r.shape;
      forward.backward = false;
      return forward == g;
    });
    attention.push_back(g);
  }
  if (!attention.empty()) {
    std::printf("attention: %zu shapes, forward and backward\n", attention.size());
    try {
      measure_attention(
          attention, budget,
          [&](const hw::AttentionMeasurement& m) {
            p.attention_table.push_back(m);
            save();
          },
          report);
    } catch (const GpuError& e) { report(std::string("attention: ") + e.what()); }
  }
  if (!skipped(o, "memory") && p.memory_table.empty()) {
    std::printf("memory-bound kernels\n");
    measure_memory(p, budget, o.quick, save);
  }
}

// The sections that take every local GPU: NCCL collectives and interference (two GPUs at
// least), then board power.
void measure_all_gpus(hw::DeviceProfile& p, const Options& o, int devices, const Budget& budget,
                      const std::function<void()>& save, const Report& report) {
  if (!skipped(o, "nccl") && devices >= 2) {
    // --resume: a section the time limit cut keeps its rows, and the rest are measured (until
    // 2026-12-07 a section with any row was kept whole, its missing ops never measured).
    NcclPlan plan = default_nccl_plan(o.quick);
    for (const hw::CollectiveMeasurement& m : p.collective_table) {
      if (m.ranks == devices && m.nodes == 1) plan.done.push_back(m);
    }
    std::printf("collectives on %d GPUs\n", devices);
    measure_collectives(
        devices, plan, budget,
        [&](const hw::CollectiveMeasurement& m) {
          p.collective_table.push_back(m);
          save();
        },
        report);
  }
  if (!skipped(o, "interference") && devices >= 2) {
    std::printf("interference\n");
    try {
      p.interference.compute_slowdown =
          std::max(1.0, measure_interference(devices, 256.0 * (1 << 20), budget));
      p.interference.source = fmt::format("measured: 8192^3 bf16 GEMM on GPU 0 beside 256 MiB "
                                          "all-reduces on {} GPUs, {}",
                                          devices, p.measurement->date);
      save();
    } catch (const GpuError& e) { report(std::string("interference: ") + e.what()); }
  }
  if (!skipped(o, "power")) {
    std::printf("board power\n");
    try {
      measure_power(p, devices, budget);
      save();
    } catch (const GpuError& e) { report(std::string("power: ") + e.what()); }
  }
}

int run(const Options& o) {
  int devices = 0;
  MEGASIM_CUDA_CHECK(cudaGetDeviceCount(&devices));
  if (devices == 0) throw InputError("no CUDA device visible");
  cudaDeviceProp prop{};
  MEGASIM_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  const std::string base_ref = o.device.empty() ? guess_base(prop.name) : o.device;
  const auto base = io::load_device_profile(io::resolve_data_file(
      base_ref, io::DataKind::kDevice, std::filesystem::current_path(), "--device", "device"));
  hw::DeviceProfile p = base.profile;
  if (o.resume && std::filesystem::exists(o.output)) p = io::load_device_profile(o.output).profile;
  describe_device(p, o, prop, devices, base.profile.name);
  // Before hours of measuring: the profile that would be written loads only where its tables
  // are its own part's (io's check_measured_part), as an A100's onto an H100's would not.
  if (const std::string why = hw::measured_part_mismatch(prop.name, p); !why.empty()) {
    throw InputError("--device " + base_ref + ": " + why +
                     "; pass --device a profile of this GPU's part (or --name one naming it)");
  }
  // The file says "measured" from its first row on: until a measurement has landed there is
  // nothing to write, and a run that measures nothing leaves no profile that could pass for one.
  const auto measured_any = [&] {
    return !(p.gemm_table.empty() && p.attention_table.empty() && p.memory_table.empty() &&
             p.collective_table.empty() && p.power_table.empty()) ||
           p.interference.source.rfind("measured", 0) == 0;
  };
  const std::function<void()> save = [&] {
    if (!measured_any()) return;
    io::Json doc = io::device_profile_to_json(p);
    if (!base.collective.is_null()) doc["collective"] = base.collective;
    io::write_file_atomically(o.output, io::json_file_text(doc, 1));
  };
  Budget budget;
  budget.item_timeout_s = o.timeout_s;
  if (o.quick) budget.repeats = 5;
  int errors = 0;
  const Report report = [&](const std::string& e) {
    ++errors;
    std::fprintf(stderr, "megasim-calibrate-gpu: %s (skipped)\n", e.c_str());
  };
  measure_single_gpu(p, o, prop, budget, save, report);
  measure_all_gpus(p, o, devices, budget, save, report);
  // Fit the models to what was measured, so shapes between and beyond the table are priced
  // from this GPU too.
  std::vector<std::string> failed;
  for (const auto& line : calibrate::refit_profile(p, &failed)) std::printf("%s\n", line.c_str());
  for (const auto& e : failed) report("fit: " + e);
  if (!measured_any()) {
    std::fprintf(stderr,
                 "megasim-calibrate-gpu: error: nothing was measured (%d items failed); no "
                 "profile written\n",
                 errors);
    return 3;
  }
  save();
  std::printf("wrote %s: %zu GEMMs, %zu fused-attention, %zu memory-bound, %zu collective rows, "
              "%d items skipped\n",
              o.output.c_str(), p.gemm_table.size(), p.attention_table.size(),
              p.memory_table.size(), p.collective_table.size(), errors);
  return 0;
}

}  // namespace
}  // namespace megasim::gpu

int main(int argc, char** argv) {
  // Line-buffered even into a file (the device run's calibrate.log): a run the time limit kills
  // or a crash ends keeps every line printed so far, not the last 4 KiB block flushed.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  megasim::gpu::Options o;
  CLI::App app{"megasim-calibrate-gpu: measure the local GPUs (cuBLASLt GEMMs, cuDNN fused "
               "attention, memory-bound kernels, NCCL collectives, interference, NVML power) "
               "into a calibration JSON"};
  app.add_option("-o,--output", o.output, "Calibration JSON to write")->required();
  app.add_option("--device", o.device, "Datasheet profile to start from (default: by GPU name)");
  app.add_option("--name", o.name, "Name of the measured profile (default BASE-measured)");
  app.add_flag("--quick", o.quick, "Small grid, fewer repeats (a few minutes on one node)");
  app.add_flag("--resume", o.resume, "Keep the sections already in OUTPUT and measure the rest");
  app.add_option("--timeout", o.timeout_s, "Seconds of timing per item before it stops repeating")
      ->check(CLI::PositiveNumber);
  app.add_option("--shapes", o.shapes, "GEMM shapes to measure first (megasim calibrate shapes)");
  app.add_option("--skip", o.skip,
                 "Sections to skip: gemm attention memory nccl interference power")
      ->check(CLI::IsMember({"gemm", "attention", "memory", "nccl", "interference", "power"}));
  try {
    app.parse(argc, argv);
    return megasim::gpu::run(o);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const megasim::InputError& e) {
    std::fprintf(stderr, "megasim-calibrate-gpu: error: %s\n", e.what());
    return 2;
  } catch (const megasim::gpu::GpuError& e) {
    // Outside a measured item: no usable GPU or driver on this machine.
    std::fprintf(stderr, "megasim-calibrate-gpu: error: no usable GPU: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "megasim-calibrate-gpu: internal error: %s\n", e.what());
    return 1;
  }
}
