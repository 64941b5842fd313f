#include "calibrate/gpu/power_sampler.h"

#ifdef MEGASIM_HAVE_NVML
#include <atomic>
#include <chrono>
#include <cmath>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nvml.h>

#include "calibrate/gpu/gemm_bench.h"
#include "calibrate/gpu/nccl_bench.h"
#endif

namespace megasim::gpu {

#ifdef MEGASIM_HAVE_NVML
namespace {

// Seconds each phase runs; long enough for board power to settle after the change.
constexpr double kPhaseSeconds = 3.0;
constexpr auto kSamplePeriod = std::chrono::milliseconds(20);

void check_nvml(nvmlReturn_t r, const char* what) {
  if (r != NVML_SUCCESS) throw GpuError(std::string(what) + ": " + nvmlErrorString(r));
}

// Mean board power of `device` while `work` runs.
template <typename Work>
double mean_watts(nvmlDevice_t device, Work&& work) {
  std::atomic<bool> running{true};
  std::vector<double> samples;
  std::thread sampler([&] {
    while (running.load()) {
      unsigned int mw = 0;
      if (nvmlDeviceGetPowerUsage(device, &mw) == NVML_SUCCESS) samples.push_back(mw / 1000.0);
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
  if (samples.empty()) throw GpuError("NVML returned no power samples");
  double sum = 0.0;
  for (double s : samples) sum += s;
  return sum / static_cast<double>(samples.size());
}

}  // namespace

void measure_power(hw::DeviceProfile& p, int devices, const Budget& budget) {
  check_nvml(nvmlInit_v2(), "nvmlInit");
  struct Shutdown {
    ~Shutdown() { nvmlShutdown(); }
  } shutdown;
  nvmlDevice_t dev{};
  check_nvml(nvmlDeviceGetHandleByIndex_v2(0, &dev), "nvmlDeviceGetHandleByIndex");
  unsigned int limit_mw = 0;
  check_nvml(nvmlDeviceGetEnforcedPowerLimit(dev, &limit_mw), "nvmlDeviceGetEnforcedPowerLimit");

  Budget sustained = budget;
  sustained.warmup = 1;
  sustained.repeats = 1 << 20;
  sustained.item_timeout_s = kPhaseSeconds;
  const auto ignore_error = [](const std::string& e) { throw GpuError(e); };

  p.power.tdp = Watts(limit_mw / 1000.0);
  p.power.idle = Watts(mean_watts(dev, [] {
    std::this_thread::sleep_for(std::chrono::duration<double>(kPhaseSeconds));
  }));
  p.power.gemm = Watts(mean_watts(dev, [&] {
    measure_gemms({hw::GemmShape{8192, 8192, 8192, 1, hw::DType::kBf16, true, false}}, sustained,
                  [](const hw::GemmMeasurement&) {}, ignore_error);
  }));
  p.power.memory = Watts(mean_watts(dev, [&] {
    void *a = nullptr, *b = nullptr;
    const std::size_t bytes = std::size_t{1} << 30;
    cudaStream_t s = nullptr;
    MEGASIM_CUDA_CHECK(cudaStreamCreate(&s));
    MEGASIM_CUDA_CHECK(cudaMalloc(&a, bytes));
    MEGASIM_CUDA_CHECK(cudaMalloc(&b, bytes));
    median_seconds(s, sustained, [&] {
      MEGASIM_CUDA_CHECK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, s));
    });
    cudaFree(a);
    cudaFree(b);
    cudaStreamDestroy(s);
  }));
  if (devices >= 2) {
    NcclPlan plan;
    plan.ops = {hw::CollectiveOp::kAllReduce};
    plan.sizes = {256.0 * (1 << 20)};
    plan.forced = {{"", ""}};
    p.power.communication = Watts(mean_watts(dev, [&] {
      measure_collectives(devices, plan, sustained, [](const hw::CollectiveMeasurement&) {},
                          ignore_error);
    }));
  }
  // The loader refuses phase power above the limit; a sample over it is NVML's averaging
  // window catching a transient, so it is capped and the source says so.
  for (Watts* w : {&p.power.idle, &p.power.gemm, &p.power.memory, &p.power.communication}) {
    if (*w > p.power.tdp) *w = p.power.tdp;
  }
  p.power.source = fmt::format(
      "measured with NVML on GPU 0: enforced power limit {:.0f} W; mean board power over {:.0f} s "
      "phases: idle, 8192^3 bf16 GEMMs, 1 GiB device copies{}; values capped at the limit{}",
      p.power.tdp.value(), kPhaseSeconds,
      devices >= 2 ? ", 256 MiB all-reduces" : "",
      devices >= 2 ? "" : "; communication_w kept from the base profile (one GPU)");
}

#else

void measure_power(hw::DeviceProfile&, int, const Budget&) {
  throw GpuError("built without NVML (nvml.h and libnvidia-ml were not found when megasim was "
                 "configured): power keeps the base profile's figures");
}

#endif

}  // namespace megasim::gpu
