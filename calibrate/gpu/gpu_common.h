// Shared pieces of megasim-calibrate-gpu, the CUDA measuring tool: error checking that turns a
// failed CUDA/cuBLAS/NCCL call into a GpuError (so one failed item is reported and skipped,
// not fatal), median timing with CUDA events, and the per-item time budget.
#pragma once

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <cuda_runtime.h>

#include "calibrate/gpu/memory_kernels.h"

namespace megasim::gpu {

class GpuError : public std::runtime_error {
 public:
  explicit GpuError(const std::string& m) : std::runtime_error(m) {}
};

void check_cuda(cudaError_t e, const char* what);
#define MEGASIM_CUDA_CHECK(x) ::megasim::gpu::check_cuda((x), #x)

// Zero-filled device memory, freed however the item that allocated it ends (launch_fill puts
// values in the operands that are timed).
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t bytes) {
    if (bytes == 0) return;
    MEGASIM_CUDA_CHECK(cudaMalloc(&p_, bytes));
    const cudaError_t e = cudaMemset(p_, 0, bytes);
    if (e != cudaSuccess) cudaFree(p_);
    check_cuda(e, "cudaMemset");
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { cudaFree(p_); }
  void* get() const { return p_; }

 private:
  void* p_ = nullptr;
};

// How long and how often to time each item.
struct Budget {
  int warmup = 3;
  // Then untimed back-to-back runs for at least this long: a GPU left idle (cuDNN builds a plan
  // for about half a second) lowers its clocks, which a few runs do not bring back.
  double warmup_s = 0.0;
  int repeats = 10;
  double item_timeout_s = 20.0;
  // When set, this buffer is written before each timed repeat (outside the events), so that a
  // memory-bound kernel smaller than the L2 cache is timed from HBM, as in a training step.
  void* l2_flush = nullptr;
  std::size_t l2_flush_bytes = 0;
  // Off where the GPU must stay loaded back to back (the power phases).
  bool spin = true;
};

// The GPU is kept busy (launch_spin) while each repeat is queued behind it.
constexpr double kSpinMicroseconds = 200.0;

// Seconds since `t0` on the host's steady clock.
inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Runs `launch` (which enqueues one instance on `stream`) warmup times, then back to back for
// warmup_s, then `repeats` times, each repeat between two events, and returns the median in
// seconds. `before` enqueues what each run needs first (a buffer the kernel accumulates into,
// cleared), outside the events. Each timed repeat is queued behind a spin kernel, so the events
// time the GPU's work and not the host's launch of it (cuBLASLt's and cuDNN's host side run
// while the GPU spins). Stops repeating once the item's time budget is spent (at least one
// timed repeat is kept).
template <typename Launch, typename Before>
double median_seconds(cudaStream_t stream, const Budget& b, Launch&& launch, Before&& before) {
  // An error an earlier item met and handled is still the thread's last error: cleared, so
  // that the check after each launch below speaks of this item's launches only.
  (void)cudaGetLastError();
  const auto run = [&] {
    before();
    launch();
  };
  for (int i = 0; i < b.warmup; ++i) run();
  MEGASIM_CUDA_CHECK(cudaStreamSynchronize(stream));
  // Batches that double (up to 64 runs), so the GPU idles only at each batch's end.
  const auto warm = std::chrono::steady_clock::now();
  for (int batch = 1; seconds_since(warm) < b.warmup_s; batch = std::min(2 * batch, 64)) {
    for (int i = 0; i < batch; ++i) run();
    MEGASIM_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  // The two events are destroyed however the timing ends (a failed launch throws; they leaked
  // until 2026-12-06).
  struct Events {
    cudaEvent_t start = nullptr, stop = nullptr;
    ~Events() {
      if (start) cudaEventDestroy(start);
      if (stop) cudaEventDestroy(stop);
    }
  } events;
  MEGASIM_CUDA_CHECK(cudaEventCreate(&events.start));
  MEGASIM_CUDA_CHECK(cudaEventCreate(&events.stop));
  const cudaEvent_t start = events.start, stop = events.stop;
  std::vector<double> times;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < b.repeats; ++i) {
    if (b.l2_flush != nullptr) {
      MEGASIM_CUDA_CHECK(cudaMemsetAsync(b.l2_flush, i & 0xff, b.l2_flush_bytes, stream));
    }
    before();
    if (b.spin) launch_spin(kSpinMicroseconds, stream);
    MEGASIM_CUDA_CHECK(cudaEventRecord(start, stream));
    launch();
    MEGASIM_CUDA_CHECK(cudaGetLastError());  // a failed launch times an empty stream
    MEGASIM_CUDA_CHECK(cudaEventRecord(stop, stream));
    MEGASIM_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0.0f;
    MEGASIM_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    times.push_back(static_cast<double>(ms) * 1e-3);
    if (seconds_since(t0) > b.item_timeout_s) break;
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

template <typename Launch>
double median_seconds(cudaStream_t stream, const Budget& b, Launch&& launch) {
  return median_seconds(stream, b, std::forward<Launch>(launch), [] {});
}

}  // namespace megasim::gpu
