#include "calibrate/gpu/attention_bench.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <utility>

#include "calibrate/gpu/cudnn_graph.h"

namespace megasim::gpu {
namespace {

constexpr cudnnDataType_t kBf16 = CUDNN_DATA_BFLOAT16;
constexpr cudnnDataType_t kF32 = CUDNN_DATA_FLOAT;
// GEN_INDEX axes of a [batch, heads, query, key] score tensor.
constexpr std::int64_t kQueryAxis = 2;
constexpr std::int64_t kKeyAxis = 3;
constexpr std::int64_t kHeadDim = 128;
constexpr std::int64_t kWindow = 1024;
// Untimed back-to-back runs of each pass before it is timed: building its plan leaves the GPU
// idle for about half a second, and its clocks drop meanwhile.
constexpr double kWarmupSeconds = 0.1;

// The cuDNN handle of the bench; destroyed however it ends.
class CudnnHandle {
 public:
  CudnnHandle() { check_cudnn(cudnnCreate(&h_), "cudnnCreate"); }
  CudnnHandle(const CudnnHandle&) = delete;
  CudnnHandle& operator=(const CudnnHandle&) = delete;
  ~CudnnHandle() { cudnnDestroy(h_); }
  cudnnHandle_t get() const { return h_; }

 private:
  cudnnHandle_t h_ = nullptr;
};

// Layouts of one shape: Q, K, V, O and their gradients BHSD packed; Kᵀ and Vᵀ as transposed
// views of K and V (the matmuls take [.., d, s] operands); scores [b, h, s, s]; per-row
// statistics [b, h, s, 1].
struct Layout {
  Dims bhsd, bhsd_strides;
  Dims transposed, transposed_strides;
  Dims scores, scores_strides;
  Dims scores_t_strides;  // the scores transposed, for Pᵀ and dSᵀ
  Dims rows, rows_strides;

  explicit Layout(const hw::AttentionShape& a) {
    const std::int64_t b = a.batch, h = a.heads, s = a.seq, d = a.head_dim;
    bhsd = {b, h, s, d};
    bhsd_strides = packed_strides(bhsd);
    transposed = {b, h, d, s};
    transposed_strides = {h * s * d, s * d, 1, d};
    scores = {b, h, s, s};
    scores_strides = packed_strides(scores);
    scores_t_strides = {h * s * s, s * s, 1, s};
    rows = {b, h, s, 1};
    rows_strides = packed_strides(rows);
  }
};

// The value masked scores get; cuDNN before 9.10 takes the lowest float instead of −∞, as
// cudnn_frontend does.
float masked_value() {
  return cudnnGetVersion() >= 91000 ? -std::numeric_limits<float>::infinity()
                                    : std::numeric_limits<float>::lowest();
}

// `scores` with positions outside the mask set to masked_value(): causal (key ≤ query) and,
// with a window, the last `window` keys only (key + window > query). Each bound is its own
// index / compare / select chain, the form the fused engines match.
GraphTensor mask(CudnnGraph& g, const GraphTensor& scores, std::int64_t window) {
  const auto bound = [&](const GraphTensor& in, bool left) {
    const GraphTensor query = g.intermediate_like(in, CUDNN_DATA_INT32);
    const GraphTensor key = g.intermediate_like(in, CUDNN_DATA_INT32);
    g.gen_index(kQueryAxis, in, query);
    g.gen_index(kKeyAxis, in, key);
    const GraphTensor keep = g.intermediate_like(in, CUDNN_DATA_BOOLEAN);
    if (left) {
      const GraphTensor shifted = g.intermediate_like(in, kF32);
      // The key axis on the add is what cudnn_frontend sets there.
      g.pointwise(CUDNN_POINTWISE_ADD, kF32, key, g.scalar(static_cast<float>(window)), shifted,
                  kKeyAxis);
      g.pointwise(CUDNN_POINTWISE_CMP_GT, CUDNN_DATA_BOOLEAN, shifted, query, keep);
    } else {
      g.pointwise(CUDNN_POINTWISE_CMP_GE, CUDNN_DATA_BOOLEAN, query, key, keep);
    }
    const GraphTensor out = g.intermediate_like(in, kF32);
    // BINARY_SELECT: y = t ? x : b.
    g.pointwise(CUDNN_POINTWISE_BINARY_SELECT, kF32, in, g.scalar(masked_value()), keep, out);
    return out;
  };
  const GraphTensor causal = bound(scores, false);
  return window > 0 ? bound(causal, true) : causal;
}

// Q·Kᵀ times the softmax scale, in fp32: how both passes start.
GraphTensor scaled_scores(CudnnGraph& g, const Layout& l, const GraphTensor& q,
                          const GraphTensor& k_t, const GraphTensor& scale) {
  const GraphTensor s = g.intermediate(kF32, l.scores, l.scores_strides);
  g.matmul(q, k_t, s);
  const GraphTensor scaled = g.intermediate_like(s, kF32);
  g.pointwise(CUDNN_POINTWISE_MUL, kF32, s, scale, scaled);
  return scaled;
}

// Tensors of the forward graph, by role.
struct ForwardGraph {
  CudnnGraph graph;
  GraphTensor q, k_t, v, o, stats;
};

void build_forward(ForwardGraph& f, const hw::AttentionShape& a) {
  const Layout l(a);
  CudnnGraph& g = f.graph;
  f.q = g.io(kBf16, l.bhsd, l.bhsd_strides);
  f.k_t = g.io(kBf16, l.transposed, l.transposed_strides);
  f.v = g.io(kBf16, l.bhsd, l.bhsd_strides);
  f.o = g.io(kBf16, l.bhsd, l.bhsd_strides);
  f.stats = g.io(kF32, l.rows, l.rows_strides);
  const GraphTensor scale = g.scalar(1.0f / std::sqrt(static_cast<float>(a.head_dim)));

  const GraphTensor s = scaled_scores(g, l, f.q, f.k_t, scale);
  const GraphTensor masked = mask(g, s, a.window);

  // Softmax, keeping Stats = max + log(sum of exp) for the backward.
  const GraphTensor max = g.intermediate(kF32, l.rows, l.rows_strides);
  g.reduction(CUDNN_REDUCE_TENSOR_MAX, masked, max);
  const GraphTensor centred = g.intermediate_like(s, kF32);
  g.pointwise(CUDNN_POINTWISE_SUB, kF32, masked, max, centred);
  const GraphTensor e = g.intermediate_like(s, kF32);
  g.pointwise(CUDNN_POINTWISE_EXP, kF32, centred, e);
  const GraphTensor sum = g.intermediate(kF32, l.rows, l.rows_strides);
  g.reduction(CUDNN_REDUCE_TENSOR_ADD, e, sum);
  const GraphTensor log_sum = g.intermediate(kF32, l.rows, l.rows_strides);
  g.pointwise(CUDNN_POINTWISE_LOG, kF32, sum, log_sum);
  g.pointwise(CUDNN_POINTWISE_ADD, kF32, max, log_sum, f.stats);
  // P enters the second matmul in the I/O type, as the engine requires.
  const GraphTensor p = g.intermediate_like(s, kBf16);
  g.pointwise(CUDNN_POINTWISE_DIV, kF32, e, sum, p);
  g.matmul(p, f.v, f.o);
}

// Tensors of the backward graph, by role. `row_dot` (rowsum of dO∘O) and `dq_accum` (dQ in
// fp32) are engine scratch in device memory that the graph names like its I/O.
struct BackwardGraph {
  CudnnGraph graph;
  GraphTensor q, k_t, v_t, o, d_o, stats, dq, dk, dv, row_dot, dq_accum;
};

void build_backward(BackwardGraph& bw, const hw::AttentionShape& a) {
  const Layout l(a);
  CudnnGraph& g = bw.graph;
  bw.q = g.io(kBf16, l.bhsd, l.bhsd_strides);
  bw.k_t = g.io(kBf16, l.transposed, l.transposed_strides);
  bw.v_t = g.io(kBf16, l.transposed, l.transposed_strides);
  bw.o = g.io(kBf16, l.bhsd, l.bhsd_strides);
  bw.d_o = g.io(kBf16, l.bhsd, l.bhsd_strides);
  bw.stats = g.io(kF32, l.rows, l.rows_strides);
  bw.dq = g.io(kBf16, l.bhsd, l.bhsd_strides);
  bw.dk = g.io(kBf16, l.bhsd, l.bhsd_strides);
  bw.dv = g.io(kBf16, l.bhsd, l.bhsd_strides);
  bw.row_dot = g.io(kF32, l.rows, l.rows_strides);
  bw.dq_accum = g.io(kF32, l.bhsd, l.bhsd_strides);
  const GraphTensor scale = g.scalar(1.0f / std::sqrt(static_cast<float>(a.head_dim)));
  // The dropout-keep scale of a graph without dropout.
  const GraphTensor one = g.scalar(1.0f);

  // D = rowsum(dO∘O). The product's strides are those cudnn_frontend gives it.
  const std::int64_t h = a.heads, s_len = a.seq, d = a.head_dim;
  const GraphTensor do_o = g.intermediate(kF32, l.bhsd, {h * s_len * d, s_len * d, h * d, 1});
  g.pointwise(CUDNN_POINTWISE_MUL, kF32, bw.d_o, bw.o, do_o);
  const GraphTensor dot = g.intermediate(kF32, l.rows, l.rows_strides);
  g.reduction(CUDNN_REDUCE_TENSOR_ADD, do_o, dot);
  g.pointwise(CUDNN_POINTWISE_MUL, kF32, dot, one, bw.row_dot);

  // P recomputed from the forward's statistics.
  const GraphTensor s = scaled_scores(g, l, bw.q, bw.k_t, scale);
  const GraphTensor centred = g.intermediate_like(s, kF32);
  g.pointwise(CUDNN_POINTWISE_SUB, kF32, s, bw.stats, centred);
  const GraphTensor masked = mask(g, centred, a.window);
  const GraphTensor p = g.intermediate_like(s, kF32);
  g.pointwise(CUDNN_POINTWISE_EXP, kF32, masked, p);

  // dV = Pᵀ·dO.
  const GraphTensor p_t = g.intermediate(kBf16, l.scores, l.scores_t_strides);
  g.reshape(p, p_t);
  g.matmul(p_t, bw.d_o, bw.dv);

  // dS = P∘(dO·Vᵀ − D)·scale.
  const GraphTensor dp = g.intermediate(kF32, l.scores, l.scores_strides);
  g.matmul(bw.d_o, bw.v_t, dp);
  const GraphTensor dp_centred = g.intermediate_like(s, kF32);
  g.pointwise(CUDNN_POINTWISE_SUB, kF32, dp, bw.row_dot, dp_centred);
  const GraphTensor ds_unscaled = g.intermediate_like(s, kF32);
  g.pointwise(CUDNN_POINTWISE_MUL, kF32, dp_centred, p, ds_unscaled);
  const GraphTensor ds = g.intermediate_like(s, kF32);
  g.pointwise(CUDNN_POINTWISE_MUL, kF32, ds_unscaled, scale, ds);

  // dK = dSᵀ·Q.
  const GraphTensor ds_t = g.intermediate(kBf16, l.scores, l.scores_t_strides);
  g.reshape(ds, ds_t);
  g.matmul(ds_t, bw.q, bw.dk);

  // dQ = dS·K, K viewed back from Kᵀ; accumulated in fp32, then converted.
  const GraphTensor k = g.intermediate(kF32, l.bhsd, l.bhsd_strides);
  g.reshape(bw.k_t, k);
  g.matmul(ds, k, bw.dq_accum);
  g.pointwise(CUDNN_POINTWISE_IDENTITY, kF32, bw.dq_accum, bw.dq);
}

// Device tensors of one shape, shared by its two passes (the backward reads the forward's O
// and Stats). Q, K, V, O and dO hold uniform bf16 values (never zeros, memory_kernels.h: Fill);
// the forward, timed first, writes O and Stats again.
struct Buffers {
  DeviceBuffer q, k, v, o, d_o, dq, dk, dv, stats, row_dot, dq_accum;
  std::size_t dq_accum_bytes;

  Buffers(const hw::AttentionShape& a, cudaStream_t stream) : Buffers(a) {
    const std::size_t n = bhsd_bytes(a, 1);
    unsigned int seed = 10;
    for (const DeviceBuffer* b : {&q, &k, &v, &o, &d_o})
      launch_fill(b->get(), n, Fill::kBf16, seed++, stream);
    MEGASIM_CUDA_CHECK(cudaGetLastError());
    MEGASIM_CUDA_CHECK(cudaStreamSynchronize(stream));
  }

  explicit Buffers(const hw::AttentionShape& a)
      : q(bhsd_bytes(a, 2)),
        k(bhsd_bytes(a, 2)),
        v(bhsd_bytes(a, 2)),
        o(bhsd_bytes(a, 2)),
        d_o(bhsd_bytes(a, 2)),
        dq(bhsd_bytes(a, 2)),
        dk(bhsd_bytes(a, 2)),
        dv(bhsd_bytes(a, 2)),
        stats(row_bytes(a)),
        row_dot(row_bytes(a)),
        dq_accum(bhsd_bytes(a, 4)),
        dq_accum_bytes(bhsd_bytes(a, 4)) {}

  static std::size_t bhsd_bytes(const hw::AttentionShape& a, std::size_t element) {
    return static_cast<std::size_t>(a.batch * a.heads * a.seq * a.head_dim) * element;
  }
  static std::size_t row_bytes(const hw::AttentionShape& a) {
    return static_cast<std::size_t>(a.batch * a.heads * a.seq) * sizeof(float);
  }
};

// Plans `g`, binds `pointers` and a workspace of the plan's size, and times it; `before`
// enqueues what each run needs first, untimed.
template <typename Before>
double time_graph(CudnnGraph& g, cudnnHandle_t handle, cudaStream_t stream, const Budget& budget,
                  const std::vector<std::pair<std::int64_t, void*>>& pointers, Before&& before) {
  g.plan(handle);
  const DeviceBuffer workspace(static_cast<std::size_t>(g.workspace_bytes()));
  g.bind(pointers, workspace.get());
  Budget warm = budget;
  warm.warmup_s = kWarmupSeconds;
  return median_seconds(
      stream, warm, [&] { g.execute(handle); }, before);
}

void report(const hw::AttentionShape& a, double seconds, std::int64_t engine) {
  std::printf("%s: %.3f ms, %.1f TFLOP/s (cuDNN engine %lld)\n", hw::describe(a).c_str(),
              seconds * 1e3, a.flops().value() / seconds / 1e12, static_cast<long long>(engine));
}

}  // namespace

std::vector<hw::AttentionShape> default_attention_grid(bool quick) {
  const std::vector<std::int64_t> heads =
      quick ? std::vector<std::int64_t>{12, 16} : std::vector<std::int64_t>{12, 16, 32};
  const std::vector<std::int64_t> seqs =
      quick ? std::vector<std::int64_t>{2048, 4096} : std::vector<std::int64_t>{2048, 4096, 8192};
  const auto shape = [](std::int64_t h, std::int64_t s, std::int64_t window) {
    hw::AttentionShape a;
    a.batch = 1;
    a.heads = h;
    a.kv_heads = h;
    a.seq = s;
    a.head_dim = kHeadDim;
    a.causal = true;
    a.window = window;
    a.backward = false;
    a.fused = true;
    a.flash_version = hw::kMeasuredFlashVersion;
    a.dtype = hw::DType::kBf16;
    return a;
  };
  std::vector<hw::AttentionShape> out;
  for (const std::int64_t s : seqs) {
    for (const std::int64_t h : heads) out.push_back(shape(h, s, 0));
  }
  // Sliding-window attention (Mistral-style), where the window is shorter than the sequence.
  for (const std::int64_t s : seqs) {
    if (s > kWindow) out.push_back(shape(16, s, kWindow));
  }
  return out;
}

void measure_attention(const std::vector<hw::AttentionShape>& shapes, const Budget& budget,
                       const std::function<void(const hw::AttentionMeasurement&)>& on_result,
                       const std::function<void(const std::string&)>& on_error) {
  const CudnnHandle handle;
  cudaStream_t stream = nullptr;
  MEGASIM_CUDA_CHECK(cudaStreamCreate(&stream));
  check_cudnn(cudnnSetStream(handle.get(), stream), "cudnnSetStream");
  for (hw::AttentionShape a : shapes) {
    try {
      const Buffers buf(a, stream);
      // One pass: built, planned, timed, reported; a failure is reported and skipped.
      const auto measure_pass = [&](bool backward, const auto& time_it) {
        a.backward = backward;
        try {
          const auto [seconds, engine] = time_it();
          report(a, seconds, engine);
          on_result({a, Time::from_seconds(seconds)});
        } catch (const GpuError& e) {
          on_error(hw::describe(a) + ": " + e.what());
          cudaGetLastError();  // clear a sticky launch error so the next pass can run
        }
      };
      // Forward first, so the backward reads a real O and Stats.
      measure_pass(false, [&] {
        ForwardGraph f;
        build_forward(f, a);
        const double s = time_graph(f.graph, handle.get(), stream, budget,
                                    {{f.q.uid, buf.q.get()},
                                     {f.k_t.uid, buf.k.get()},
                                     {f.v.uid, buf.v.get()},
                                     {f.o.uid, buf.o.get()},
                                     {f.stats.uid, buf.stats.get()}},
                                    [] {});
        return std::pair{s, f.graph.engine_index()};
      });
      measure_pass(true, [&] {
        BackwardGraph bw;
        build_backward(bw, a);
        const double s = time_graph(bw.graph, handle.get(), stream, budget,
                                    {{bw.q.uid, buf.q.get()},
                                     {bw.k_t.uid, buf.k.get()},
                                     {bw.v_t.uid, buf.v.get()},
                                     {bw.o.uid, buf.o.get()},
                                     {bw.d_o.uid, buf.d_o.get()},
                                     {bw.stats.uid, buf.stats.get()},
                                     {bw.dq.uid, buf.dq.get()},
                                     {bw.dk.uid, buf.dk.get()},
                                     {bw.dv.uid, buf.dv.get()},
                                     {bw.row_dot.uid, buf.row_dot.get()},
                                     {bw.dq_accum.uid, buf.dq_accum.get()}},
                                    [&] {
                                      // The engine adds dQ into it, as cudnn_frontend, which
                                      // clears it before each run, expects.
                                      MEGASIM_CUDA_CHECK(cudaMemsetAsync(
                                          buf.dq_accum.get(), 0, buf.dq_accum_bytes, stream));
                                    });
        return std::pair{s, bw.graph.engine_index()};
      });
    } catch (const GpuError& e) {  // the buffers could not be allocated
      on_error(hw::describe(a) + ": " + e.what());
      cudaGetLastError();
    }
  }
  cudaStreamDestroy(stream);
}

}  // namespace megasim::gpu
