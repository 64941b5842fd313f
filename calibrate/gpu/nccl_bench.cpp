#include "calibrate/gpu/nccl_bench.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numeric>

#include <cublasLt.h>
#include <nccl.h>

#include "calibrate/gpu/gemm_bench.h"
#include "calibrate/gpu/memory_kernels.h"

namespace megasim::gpu {
namespace {

void check_nccl(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) throw GpuError(std::string(what) + ": " + ncclGetErrorString(r));
}

// One communicator over all local GPUs with a stream and send/recv buffers per device.
class Clique {
 public:
  // The caller's current device is restored when the clique goes (cudaSetDevice walks every
  // device): the measurements after it run on the device they name, and NVML reads that one.
  // A failure part-way frees what was made (the communicators and buffers leaked until
  // 2026-12-07, a reviewer's find: an 8-GPU clique's gigabytes a GPU, which the next forced
  // algorithm's clique then lacked).
  Clique(int n, std::size_t max_bytes) : n_(n), comms_(n), streams_(n), send_(n), recv_(n) {
    MEGASIM_CUDA_CHECK(cudaGetDevice(&caller_device_));
    try {
      init(max_bytes);
    } catch (...) {
      release();
      throw;
    }
  }
  Clique(const Clique&) = delete;
  Clique& operator=(const Clique&) = delete;
  ~Clique() { release(); }

  // Enqueues one collective whose nccl-tests "size" is `bytes` (float elements).
  void launch(hw::CollectiveOp op, std::size_t bytes) {
    const std::size_t total = bytes / sizeof(float);
    const std::size_t per_rank = total / static_cast<std::size_t>(n_);
    check_nccl(ncclGroupStart(), "ncclGroupStart");
    // A call that fails inside the group still closes it: an open group would swallow every
    // later launch (its ncclGroupEnd nests), and the events would time an empty stream.
    struct GroupEnd {
      bool armed = true;
      ~GroupEnd() {
        if (armed) ncclGroupEnd();
      }
    } guard;
    for (int d = 0; d < n_; ++d) {
      ncclComm_t c = comms_[d];
      cudaStream_t s = streams_[d];
      switch (op) {
        case hw::CollectiveOp::kAllReduce:
          check_nccl(ncclAllReduce(send_[d], recv_[d], total, ncclFloat, ncclSum, c, s), "allreduce");
          break;
        case hw::CollectiveOp::kAllGather:  // size = the gathered output
          check_nccl(ncclAllGather(send_[d], recv_[d], per_rank, ncclFloat, c, s), "allgather");
          break;
        case hw::CollectiveOp::kReduceScatter:  // size = the input
          check_nccl(ncclReduceScatter(send_[d], recv_[d], per_rank, ncclFloat, ncclSum, c, s),
                     "reducescatter");
          break;
        case hw::CollectiveOp::kAllToAll:
          for (int peer = 0; peer < n_; ++peer) {
            const std::size_t off = per_rank * static_cast<std::size_t>(peer) * sizeof(float);
            check_nccl(ncclSend(static_cast<char*>(send_[d]) + off, per_rank, ncclFloat, peer, c, s), "send");
            check_nccl(ncclRecv(static_cast<char*>(recv_[d]) + off, per_rank, ncclFloat, peer, c, s), "recv");
          }
          break;
        case hw::CollectiveOp::kSendRecv:  // a ring: each rank sends to the next
          check_nccl(ncclSend(send_[d], total, ncclFloat, (d + 1) % n_, c, s), "send");
          check_nccl(ncclRecv(recv_[d], total, ncclFloat, (d + n_ - 1) % n_, c, s), "recv");
          break;
        case hw::CollectiveOp::kBroadcast:
          check_nccl(ncclBroadcast(send_[d], recv_[d], total, ncclFloat, 0, c, s), "broadcast");
          break;
        case hw::CollectiveOp::kReduce:
          check_nccl(ncclReduce(send_[d], recv_[d], total, ncclFloat, ncclSum, 0, c, s), "reduce");
          break;
      }
    }
    guard.armed = false;
    check_nccl(ncclGroupEnd(), "ncclGroupEnd");
  }

  // Median time of `op`, measured on device 0's stream after all devices' work is enqueued:
  // device 0 cannot finish a collective before its peers, so its events bound the whole.
  // Like nccl-tests, each timed interval holds several calls back to back, divided out: the
  // host's launch of one call on every device (a group over n devices) would otherwise fall
  // inside the interval and inflate the small sizes, which pin the latency.
  double time(hw::CollectiveOp op, std::size_t bytes, const Budget& budget) {
    MEGASIM_CUDA_CHECK(cudaSetDevice(0));
    const int calls = bytes <= (std::size_t{1} << 24)   ? 20
                      : bytes <= (std::size_t{1} << 28) ? 4
                                                        : 1;
    // Every device spins ahead of the calls, device 0 first, long enough for this one host
    // thread to enqueue all of them (a group call a device, about 20 us each allowed), so that
    // the interval times the GPUs and not the host's launches: without it a small collective's
    // time was the launch of eight communicators' calls (a review of 2026-12-07; not yet run on
    // a GPU). A spin on device 0 alone would let the peers start early and fill its receive
    // slots before its start event; spinning them all, device 0's ending first, the skew of the
    // spins' ends (a few launches) counts once in `calls` calls instead.
    // Not where the caller keeps the GPUs loaded back to back (the power phase's all-reduces,
    // Budget::spin off): spins there would draw idle power inside its window (a review's find).
    Budget b = budget;
    b.spin = false;
    const double spin_us = kSpinMicroseconds + 20.0 * calls * n_;
    const auto spin_all = [&] {
      if (!budget.spin) return;
      for (int d = 0; d < n_; ++d) {
        MEGASIM_CUDA_CHECK(cudaSetDevice(d));
        launch_spin(spin_us, streams_[d]);
      }
      MEGASIM_CUDA_CHECK(cudaSetDevice(0));
    };
    return median_seconds(
               streams_[0], b,
               [&] {
                 for (int k = 0; k < calls; ++k) launch(op, bytes);
                 MEGASIM_CUDA_CHECK(cudaSetDevice(0));
               },
               spin_all) /
           calls;
  }

  void sync() {
    for (int d = 0; d < n_; ++d) {
      MEGASIM_CUDA_CHECK(cudaSetDevice(d));
      MEGASIM_CUDA_CHECK(cudaStreamSynchronize(streams_[d]));
    }
    MEGASIM_CUDA_CHECK(cudaSetDevice(0));
  }

 private:
  int n_;
  std::vector<ncclComm_t> comms_;
  std::vector<cudaStream_t> streams_;
  std::vector<void*> send_, recv_;
  int caller_device_ = 0;
  bool comms_made_ = false;

  void init(std::size_t max_bytes) {
    std::vector<int> devs(static_cast<std::size_t>(n_));
    std::iota(devs.begin(), devs.end(), 0);
    check_nccl(ncclCommInitAll(comms_.data(), n_, devs.data()), "ncclCommInitAll");
    comms_made_ = true;  // a failed ncclCommInitAll leaves no communicator to destroy
    for (int d = 0; d < n_; ++d) {
      MEGASIM_CUDA_CHECK(cudaSetDevice(d));
      MEGASIM_CUDA_CHECK(cudaStreamCreate(&streams_[d]));
      MEGASIM_CUDA_CHECK(cudaMalloc(&send_[d], max_bytes));
      MEGASIM_CUDA_CHECK(cudaMalloc(&recv_[d], max_bytes));
      // Random floats, not zeros: the links and reductions draw less on zeros, and the power
      // phases time these calls too.
      launch_fill(send_[d], max_bytes / sizeof(float), Fill::kFp32, 100u + static_cast<unsigned>(d),
                  streams_[d]);
      MEGASIM_CUDA_CHECK(cudaStreamSynchronize(streams_[d]));
    }
  }

  // Whatever init made (null handles where it stopped), and the caller's device back.
  void release() noexcept {
    for (int d = 0; d < n_; ++d) {
      cudaSetDevice(d);
      if (send_[d] != nullptr) cudaFree(send_[d]);
      if (recv_[d] != nullptr) cudaFree(recv_[d]);
      if (streams_[d] != nullptr) cudaStreamDestroy(streams_[d]);
      if (comms_made_ && comms_[d] != nullptr) ncclCommDestroy(comms_[d]);
    }
    cudaSetDevice(caller_device_);
  }
};

void set_forced(const std::string& algo, const std::string& proto) {
  if (algo.empty()) unsetenv("NCCL_ALGO"); else setenv("NCCL_ALGO", algo.c_str(), 1);
  if (proto.empty()) unsetenv("NCCL_PROTO"); else setenv("NCCL_PROTO", proto.c_str(), 1);
}

}  // namespace

NcclPlan default_nccl_plan(bool quick) {
  NcclPlan p;
  p.ops = {hw::CollectiveOp::kAllReduce, hw::CollectiveOp::kAllGather,
           hw::CollectiveOp::kReduceScatter, hw::CollectiveOp::kAllToAll,
           hw::CollectiveOp::kSendRecv};
  const double top = quick ? std::ldexp(1.0, 28) : std::ldexp(1.0, 32);  // 256 MiB / 4 GiB
  for (double s = 8.0; s <= top; s *= quick ? 8.0 : 2.0) p.sizes.push_back(s);
  p.forced = {{"", ""}};
  if (!quick) {
    for (const char* algo : {"Ring", "Tree"}) {
      for (const char* proto : {"LL", "LL128", "Simple"}) p.forced.emplace_back(algo, proto);
    }
  }
  return p;
}

bool NcclPlan::holds(hw::CollectiveOp op, double size, const std::string& algo,
                     const std::string& proto) const {
  // The tool's own rows only: an imported nccl-tests run of the same shape in the profile
  // (its run named after its log) is no measurement of this one's.
  return std::any_of(done.begin(), done.end(), [&](const hw::CollectiveMeasurement& m) {
    return m.run.rfind("megasim-calibrate-gpu", 0) == 0 && m.op == op && m.size.value() == size &&
           m.algorithm == algo && m.protocol == proto;
  });
}

void measure_collectives(int devices, const NcclPlan& plan, const Budget& budget,
                         const std::function<void(const hw::CollectiveMeasurement&)>& on_result,
                         const std::function<void(const std::string&)>& on_error) {
  const double max_size = plan.sizes.empty() ? 0.0 : plan.sizes.back();
  // What the loop below measures of a forced algorithm: all-reduce only when forced (that is
  // what NCCL tunes by them), sizes of a float a rank or more, rows a resumed run lacks.
  const auto to_measure = [&](hw::CollectiveOp op, double size, const std::string& algo,
                              const std::string& proto) {
    return (algo.empty() || op == hw::CollectiveOp::kAllReduce) &&
           static_cast<std::size_t>(size) >= sizeof(float) * static_cast<std::size_t>(devices) &&
           !plan.holds(op, size, algo, proto);
  };
  for (const auto& [algo, proto] : plan.forced) {
    // A resumed run whose rows of this algorithm are all in: no communicator to create.
    const bool any = std::any_of(plan.ops.begin(), plan.ops.end(), [&](hw::CollectiveOp op) {
      return std::any_of(plan.sizes.begin(), plan.sizes.end(),
                         [&](double s) { return to_measure(op, s, algo, proto); });
    });
    if (!any) continue;
    try {
      set_forced(algo, proto);
      Clique clique(devices, static_cast<std::size_t>(max_size));
      for (hw::CollectiveOp op : plan.ops) {
        for (double size : plan.sizes) {
          if (!to_measure(op, size, algo, proto)) continue;
          const std::size_t bytes = static_cast<std::size_t>(size);
          try {
            const double t = clique.time(op, bytes, budget);
            hw::CollectiveMeasurement m;
            m.op = op;
            m.ranks = devices;
            m.nodes = 1;
            m.size = Bytes(size);
            m.time = Time::from_seconds(t);
            m.algbw = BytesPerSec(size / t);
            m.busbw = m.algbw * hw::bus_factor(op, devices);
            m.algorithm = algo;
            m.protocol = proto;
            // One run a collective (and forced algorithm): the scale fit takes a run as one
            // shape, so the ops must not share an id.
            m.run = "megasim-calibrate-gpu " + std::string(hw::to_string(op)) +
                    (algo.empty() ? std::string() : " " + algo + "/" + proto);
            on_result(m);
          } catch (const GpuError& e) {
            on_error(std::string(hw::to_string(op)) + " " + std::to_string(bytes) + " B: " + e.what());
            clique.sync();
          }
        }
      }
    } catch (const GpuError& e) {
      on_error("NCCL " + (algo.empty() ? std::string("default") : algo + "/" + proto) + ": " + e.what());
    }
  }
  set_forced("", "");
}

double measure_interference(int devices, double bytes, const Budget& budget) {
  // The GEMM: 8192³ bf16, long enough (about 1–4 ms) to overlap many collective launches.
  const hw::GemmShape g{8192, 8192, 8192, 1, hw::DType::kBf16, true, false};
  double alone = 0.0, beside = 0.0;
  MEGASIM_CUDA_CHECK(cudaSetDevice(0));  // alone and beside on the same GPU
  measure_gemms({g}, budget, [&](const hw::GemmMeasurement& m) { alone = m.time.to_seconds(); },
                [](const std::string& e) { throw GpuError(e); });
  Clique clique(devices, static_cast<std::size_t>(bytes));
  // Keep all-reduces running on every device while the GEMM is timed again on device 0.
  for (int i = 0; i < 64; ++i) clique.launch(hw::CollectiveOp::kAllReduce, static_cast<std::size_t>(bytes));
  MEGASIM_CUDA_CHECK(cudaSetDevice(0));
  measure_gemms({g}, budget, [&](const hw::GemmMeasurement& m) { beside = m.time.to_seconds(); },
                [](const std::string& e) { throw GpuError(e); });
  clique.sync();
  if (alone <= 0.0) throw GpuError("interference: the GEMM alone was not measured");
  return beside / alone;
}

}  // namespace megasim::gpu
