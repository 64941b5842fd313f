#include "calibrate/gpu/power_sampler.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "calibrate/gpu/gemm_bench.h"
#include "calibrate/gpu/memory_kernels.h"
#include "calibrate/gpu/nccl_bench.h"

namespace megasim::gpu {
namespace {

// Seconds each phase runs; long enough for board power to settle after the change.
constexpr double kPhaseSeconds = 4.0;
// NVML's board power on Ampere and later is an average over the last second: samples taken
// in a phase's first 1.5 s still hold the phase before, and are not kept.
constexpr double kSettleSeconds = 1.5;
constexpr auto kSamplePeriod = std::chrono::milliseconds(20);

// The few NVML entry points used here, declared as NVIDIA's nvml.h (API version 12) declares
// them: nvmlReturn_t is an int-sized enum with NVML_SUCCESS = 0, nvmlDevice_t an opaque
// pointer, nvmlClockType_t an int-sized enum with NVML_CLOCK_SM = 1. NVML reports power in
// milliwatts and clocks in MHz.
constexpr const char* kNvmlLibrary = "libnvidia-ml.so.1";
using NvmlReturn = int;
using NvmlDevice = struct NvmlDeviceOpaque*;
constexpr NvmlReturn kNvmlSuccess = 0;
constexpr int kNvmlClockSm = 1;

// NVML loaded with dlopen and initialised; shut down and unloaded when destroyed. NVML is
// thread-safe, so the sampler thread may query it while the caller runs the workload.
class Nvml {
 public:
  Nvml() {
    lib_ = dlopen(kNvmlLibrary, RTLD_NOW | RTLD_LOCAL);
    if (lib_ == nullptr) {
      throw GpuError(
          fmt::format("NVML ({}, installed with the NVIDIA driver) could not be "
                      "loaded: {}",
                      kNvmlLibrary, last_dl_error()));
    }
    try {
      init_ = symbol<NvmlReturn (*)()>("nvmlInit_v2");
      shutdown_ = symbol<NvmlReturn (*)()>("nvmlShutdown");
      error_string_ = symbol<const char* (*)(NvmlReturn)>("nvmlErrorString");
      handle_by_pci_ =
          symbol<NvmlReturn (*)(const char*, NvmlDevice*)>("nvmlDeviceGetHandleByPciBusId_v2");
      power_usage_ = symbol<NvmlReturn (*)(NvmlDevice, unsigned int*)>("nvmlDeviceGetPowerUsage");
      enforced_limit_ =
          symbol<NvmlReturn (*)(NvmlDevice, unsigned int*)>("nvmlDeviceGetEnforcedPowerLimit");
      clock_info_ =
          symbol<NvmlReturn (*)(NvmlDevice, int, unsigned int*)>("nvmlDeviceGetClockInfo");
      check(init_(), "nvmlInit_v2");
    } catch (...) {
      dlclose(lib_);
      throw;
    }
  }
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;
  ~Nvml() {
    shutdown_();
    dlclose(lib_);
  }

  // The NVML handle of CUDA device `cuda_device`, by its PCI bus id: NVML numbers every GPU of
  // the host in PCI order and ignores CUDA_VISIBLE_DEVICES, so its index 0 need not be the
  // GPU the phases run on.
  NvmlDevice device_of_cuda(int cuda_device) const {
    char bus_id[32] = {};
    MEGASIM_CUDA_CHECK(cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, cuda_device));
    NvmlDevice d = nullptr;
    check(handle_by_pci_(bus_id, &d), "nvmlDeviceGetHandleByPciBusId_v2");
    return d;
  }

  double enforced_limit_w(NvmlDevice d) const {
    unsigned int mw = 0;
    check(enforced_limit_(d, &mw), "nvmlDeviceGetEnforcedPowerLimit");
    return mw / 1000.0;
  }

  // One sample; a failed reading is skipped rather than ending the phase.
  std::optional<double> power_w(NvmlDevice d) const {
    unsigned int mw = 0;
    if (power_usage_(d, &mw) != kNvmlSuccess) return std::nullopt;
    return mw / 1000.0;
  }

  std::optional<double> sm_clock_mhz(NvmlDevice d) const {
    unsigned int mhz = 0;
    if (clock_info_(d, kNvmlClockSm, &mhz) != kNvmlSuccess) return std::nullopt;
    return static_cast<double>(mhz);
  }

 private:
  static std::string last_dl_error() {
    const char* e = dlerror();
    return e != nullptr ? e : "unknown dlopen error";
  }

  template <typename Fn>
  Fn symbol(const char* name) const {
    dlerror();  // clear a stale error
    void* p = dlsym(lib_, name);
    if (p == nullptr) {
      throw GpuError(fmt::format("NVML ({}) has no {}: {}", kNvmlLibrary, name, last_dl_error()));
    }
    return reinterpret_cast<Fn>(p);
  }

  void check(NvmlReturn r, const char* what) const {
    if (r != kNvmlSuccess) throw GpuError(fmt::format("{}: {}", what, error_string_(r)));
  }

  void* lib_ = nullptr;
  NvmlReturn (*init_)() = nullptr;
  NvmlReturn (*shutdown_)() = nullptr;
  const char* (*error_string_)(NvmlReturn) = nullptr;
  NvmlReturn (*handle_by_pci_)(const char*, NvmlDevice*) = nullptr;
  NvmlReturn (*power_usage_)(NvmlDevice, unsigned int*) = nullptr;
  NvmlReturn (*enforced_limit_)(NvmlDevice, unsigned int*) = nullptr;
  NvmlReturn (*clock_info_)(NvmlDevice, int, unsigned int*) = nullptr;
};

double mean(const std::vector<double>& v) {
  double sum = 0.0;
  for (double x : v) sum += x;
  return sum / static_cast<double>(v.size());
}

// Mean board power and SM clock of `device` while `work` runs, and how long it ran.
struct PhaseMeans {
  double watts = 0.0;
  std::optional<double> sm_clock_mhz;
  double seconds = 0.0;
};

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

template <typename Work>
PhaseMeans sample_while(const Nvml& nvml, NvmlDevice device, Work&& work) {
  std::atomic<bool> running{true};
  std::vector<double> watts, mhz;
  const auto start = std::chrono::steady_clock::now();
  std::thread sampler([&] {
    while (running.load()) {
      if (seconds_since(start) >= kSettleSeconds) {
        if (const auto w = nvml.power_w(device)) watts.push_back(*w);
        if (const auto f = nvml.sm_clock_mhz(device)) mhz.push_back(*f);
      }
      std::this_thread::sleep_for(kSamplePeriod);
    }
  });
  try {
    work();
  } catch (...) {
    running = false;
    sampler.join();
    throw;
  }
  running = false;
  sampler.join();
  if (watts.empty()) throw GpuError("NVML returned no power samples");
  PhaseMeans out;
  out.seconds = seconds_since(start) - kSettleSeconds;  // the span the samples cover
  out.watts = mean(watts);
  if (!mhz.empty()) out.sm_clock_mhz = mean(mhz);
  return out;
}

// 1 GiB device copies for kPhaseSeconds in bursts of about kBurstSeconds, idle between
// bursts so that the copies take `duty` of the time. Returns the share of the phase the GPU
// spent copying, from CUDA events.
constexpr double kBurstSeconds = 0.1;

double copy_phase(double duty) {
  const std::size_t bytes = std::size_t{1} << 30;
  const DeviceBuffer a(bytes), b(bytes);
  cudaStream_t s = nullptr;
  cudaEvent_t begin = nullptr, end = nullptr;
  const auto release = [&] {
    if (begin != nullptr) cudaEventDestroy(begin);
    if (end != nullptr) cudaEventDestroy(end);
    if (s != nullptr) cudaStreamDestroy(s);
  };
  try {
    MEGASIM_CUDA_CHECK(cudaStreamCreate(&s));
    MEGASIM_CUDA_CHECK(cudaEventCreate(&begin));
    MEGASIM_CUDA_CHECK(cudaEventCreate(&end));
    // Random data, not the buffers' zeros: the HBM and its interface draw less on zeros.
    launch_fill(a.get(), bytes / 2, Fill::kBf16, 11, s);
    MEGASIM_CUDA_CHECK(cudaGetLastError());
    const auto burst = [&](int copies) {
      MEGASIM_CUDA_CHECK(cudaEventRecord(begin, s));
      for (int i = 0; i < copies; ++i) {
        MEGASIM_CUDA_CHECK(cudaMemcpyAsync(b.get(), a.get(), bytes, cudaMemcpyDeviceToDevice, s));
      }
      MEGASIM_CUDA_CHECK(cudaEventRecord(end, s));
      MEGASIM_CUDA_CHECK(cudaEventSynchronize(end));
      float ms = 0.0f;
      MEGASIM_CUDA_CHECK(cudaEventElapsedTime(&ms, begin, end));
      return static_cast<double>(ms) * 1e-3;
    };
    const double one = burst(1);  // also the warm-up
    const int copies = std::max(1, static_cast<int>(kBurstSeconds / std::max(one, 1e-6)));
    const auto start = std::chrono::steady_clock::now();
    double busy = 0.0;
    while (seconds_since(start) < kPhaseSeconds) {
      const double on = burst(copies);
      busy += on;
      if (duty < 1.0) {
        std::this_thread::sleep_for(std::chrono::duration<double>(on * (1.0 - duty) / duty));
      }
    }
    const double share = std::min(1.0, busy / seconds_since(start));
    release();
    return share;
  } catch (...) {
    release();
    throw;
  }
}

}  // namespace

void measure_power(hw::DeviceProfile& p, int devices, const Budget& budget) {
  // The phases run on CUDA device 0 (an earlier measurement may have left another current)
  // and NVML reads that GPU.
  MEGASIM_CUDA_CHECK(cudaSetDevice(0));
  const Nvml nvml;
  const NvmlDevice dev = nvml.device_of_cuda(0);

  Budget sustained = budget;
  sustained.warmup = 1;
  sustained.repeats = 1 << 20;
  sustained.item_timeout_s = kPhaseSeconds;
  sustained.spin = false;  // back to back: the GEMM phase must load the GPU all the time
  const auto ignore_error = [](const std::string& e) { throw GpuError(e); };

  // Every phase is measured before the profile changes, so a failed one leaves it untouched.
  const double limit_w = nvml.enforced_limit_w(dev);
  const PhaseMeans idle = sample_while(
      nvml, dev, [] { std::this_thread::sleep_for(std::chrono::duration<double>(kPhaseSeconds)); });
  const PhaseMeans gemm = sample_while(nvml, dev, [&] {
    measure_gemms(
        {hw::GemmShape{8192, 8192, 8192, 1, hw::DType::kBf16, true, false}}, sustained,
        [](const hw::GemmMeasurement&) {}, ignore_error);
  });
  // Copies back to back, then half and a quarter of the time: the duty-cycled readings give
  // the fit more readings than unknowns, and its residual says how linear the GPU is.
  std::vector<std::pair<double, PhaseMeans>> copies;
  for (const double duty : {1.0, 0.5, 0.25}) {
    double share = 0.0;
    const PhaseMeans m = sample_while(nvml, dev, [&] { share = copy_phase(duty); });
    copies.emplace_back(share, m);
  }
  std::optional<PhaseMeans> all_reduce;
  if (devices >= 2) {
    NcclPlan plan;
    plan.ops = {hw::CollectiveOp::kAllReduce};
    plan.sizes = {256.0 * (1 << 20)};
    plan.forced = {{"", ""}};
    all_reduce = sample_while(nvml, dev, [&] {
      measure_collectives(
          devices, plan, sustained, [](const hw::CollectiveMeasurement&) {}, ignore_error);
    });
  }
  // The GEMM and all-reduce phases time kPhaseSeconds of work after their setup (handles,
  // buffers, the communicator), during which the GPU idles: the part of the sampled span
  // (after the settling time) the work does not fill is their idle share.
  const auto busy_share = [](const PhaseMeans& m) {
    return std::min(1.0, kPhaseSeconds / m.seconds);
  };
  p.power_table.clear();
  p.power_table.push_back({0.0, 0.0, 0.0, Watts(idle.watts)});
  p.power_table.push_back({busy_share(gemm), 0.0, 0.0, Watts(gemm.watts)});
  for (const auto& [share, m] : copies) p.power_table.push_back({0.0, share, 0.0, Watts(m.watts)});
  if (all_reduce) {
    p.power_table.push_back({0.0, 0.0, busy_share(*all_reduce), Watts(all_reduce->watts)});
  }
  p.power.tdp = Watts(limit_w);
  // The base profile's watts held until the fit replaces them, capped at the enforced limit:
  // should the fit fail, a GEMM figure above it would make the file one megasim refuses.
  for (Watts* w : {&p.power.gemm, &p.power.memory, &p.power.communication, &p.power.idle}) {
    if (w->value() > limit_w) *w = Watts(limit_w);
  }
  // What was measured; calibrate::refit_profile fits the watts and keeps this after its own.
  p.power.source = fmt::format(
      "measured with NVML on GPU 0: enforced power limit {:.0f} W; {:.0f} s phases: idle, "
      "8192^3 bf16 GEMMs{}, 1 GiB device copies at 100/50/25 % duty{}; the watts per activity "
      "come from the fit of these readings{}",
      limit_w, kPhaseSeconds,
      gemm.sm_clock_mhz ? fmt::format(" (mean SM clock {:.0f} MHz)", *gemm.sm_clock_mhz) : "",
      devices >= 2 ? ", 256 MiB all-reduces" : "",
      devices >= 2 ? "" : "; communication_w kept from the base profile (one GPU)");
}

}  // namespace megasim::gpu
