#include "workload/op_builders.h"

#include <fmt/format.h>

namespace megasim::workload::detail {
namespace {

const char* suffix(Phase p) {
  switch (p) {
    case Phase::kForward:
      return "fwd";
    case Phase::kBackward:
      return "bwd";
    case Phase::kRecompute:
      return "recompute";
    case Phase::kOptimizer:
      return "step";
  }
  return "?";
}

std::string name_of(int layer, const std::string& what, Phase p) {
  if (layer < 0) return fmt::format("{} {}", what, suffix(p));
  return fmt::format("layer {} {} {}", layer, what, suffix(p));
}

}  // namespace

void add_kernel(std::vector<Op>& out, int layer, const std::string& what, Phase phase,
                hw::KernelShape shape, Flops convention, GemmRole role) {
  Op op;
  op.name = name_of(layer, what, phase);
  op.phase = phase;
  op.gemm_role = role;
  op.work = std::move(shape);
  op.model_flops = phase == Phase::kRecompute ? Flops(0.0) : convention;
  op.hardware_flops = convention;
  op.layer = layer;
  out.push_back(std::move(op));
}

void add_memory(std::vector<Op>& out, int layer, const std::string& what, Phase phase,
                hw::MemoryKernel kind, double read_bytes, double write_bytes) {
  hw::MemoryShape m{kind, Bytes(read_bytes), Bytes(write_bytes), Flops(0.0)};
  add_kernel(out, layer, what, phase, m, Flops(0.0));
}

void add_comm(std::vector<Op>& out, int layer, const std::string& what, Phase phase,
              CollectiveOp kind, Group group, double bytes, bool overlappable) {
  Op op;
  op.name = name_of(layer, what, phase);
  op.phase = phase;
  op.work = CommOp{kind, group, Bytes(bytes)};
  op.tp_overlappable = overlappable;
  op.layer = layer;
  out.push_back(std::move(op));
}

hw::GemmShape gemm(const LayerContext& c, std::int64_t m, std::int64_t n, std::int64_t k,
                   bool ta, bool tb, std::int64_t batch) {
  hw::GemmShape g;
  g.m = m;
  g.n = n;
  g.k = k;
  g.batch = batch;
  g.dtype = c.dtype;
  g.transpose_a = ta;
  g.transpose_b = tb;
  return g;
}

namespace {

bool runs_fp8(const LayerContext& c, Linear kind) {
  return c.plan.fp8 && kind != Linear::kHead;
}

// A row-parallel layer's output gradient arrives sharded over the sequence and is gathered
// over TP before its dgrad (sequence parallelism on more than one rank).
bool gathers_output_grad(const LayerContext& c, Linear kind) {
  return kind == Linear::kRow && c.t > 1 && c.plan.sequence_parallel;
}

hw::GemmShape linear_gemm(const LayerContext& c, Linear kind, std::int64_t m, std::int64_t n,
                          std::int64_t k, bool ta = false, bool tb = false) {
  hw::GemmShape g = gemm(c, m, n, k, ta, tb);
  if (runs_fp8(c, kind)) {
    // cuBLASLt's FP8 GEMMs on Hopper take only the TN layout, which TE's transposed FP8 copies
    // provide for every pass (the layout `calibrate shapes` asks the CUDA tool to measure).
    g.dtype = hw::DType::kFp8;
    g.transpose_a = true;
    g.transpose_b = false;
  }
  return g;
}

}  // namespace

void linear_forward(const LayerContext& c, std::vector<Op>& out, int layer, const std::string& what,
                    Phase phase, Linear kind, std::int64_t n, std::int64_t k, double exact) {
  if (runs_fp8(c, kind) && kind == Linear::kRow) {
    // The transpose is written only with autograd on: not in a full recompute's first forward,
    // which Megatron's checkpoint runs under torch.no_grad.
    const bool no_grad = phase == Phase::kForward && c.plan.recompute == Recompute::kFull;
    const bool transpose = !c.plan.sequence_parallel && !no_grad;
    const double x = d(c.tokens) * d(k);
    add_memory(out, layer, what + " fp8 cast", phase, hw::MemoryKernel::kCopy, x * c.elem,
               transpose ? 2.0 * x : x);
  }
  hw::GemmShape g = linear_gemm(c, kind, c.tokens, n, k);
  // Transformer Engine's FP8 forward GEMMs take cuBLASLt's fast accumulation, its dgrad and
  // wgrad the split one (module/base.py: _2X_ACC_FPROP False, _2X_ACC_DGRAD and WGRAD True).
  g.fast_accum = g.dtype == hw::DType::kFp8;
  add_kernel(out, layer, what, phase, g, Flops(exact), GemmRole::kForward);
}

void dgrad_only(const LayerContext& c, std::vector<Op>& out, int layer, const std::string& what,
                Linear kind, std::int64_t n, std::int64_t k, double exact) {
  const double dy = d(c.tokens) * d(n);
  if (runs_fp8(c, kind) && gathers_output_grad(c, kind)) {
    // Cast to FP8 before the all-gather (tp_exit_backward); the gathered gradient transposed.
    add_memory(out, layer, what + " grad fp8 transpose", Phase::kBackward,
               hw::MemoryKernel::kCopy, dy, dy);
  } else if (runs_fp8(c, kind)) {
    add_memory(out, layer, what + " grad fp8 cast-transpose", Phase::kBackward,
               hw::MemoryKernel::kCopy, dy * c.elem, 2.0 * dy);
  }
  add_kernel(out, layer, what + " dgrad", Phase::kBackward,
             linear_gemm(c, kind, c.tokens, k, n, false, true), Flops(exact), GemmRole::kDataGrad);
}

void wgrad_only(const LayerContext& c, std::vector<Op>& out, int layer, const std::string& what,
                Linear kind, std::int64_t n, std::int64_t k, double exact) {
  if (runs_fp8(c, kind) && (kind == Linear::kColumn || c.plan.sequence_parallel)) {
    const double x = d(c.tokens) * d(k);
    add_memory(out, layer, what + " input fp8 transpose", Phase::kBackward,
               hw::MemoryKernel::kCopy, x, x);
  }
  add_kernel(out, layer, what + " wgrad", Phase::kBackward,
             linear_gemm(c, kind, k, n, c.tokens, true, false), Flops(exact),
             GemmRole::kWeightGrad);
}

void linear_backward(const LayerContext& c, std::vector<Op>& out, int layer,
                     const std::string& what, Linear kind, std::int64_t n, std::int64_t k,
                     double exact) {
  dgrad_only(c, out, layer, what, kind, n, k, exact);
  wgrad_only(c, out, layer, what, kind, n, k, exact);
}

double hidden_bytes(const LayerContext& c, std::int64_t tokens) {
  return d(tokens) * d(c.h) * c.elem;
}

double column_input_bytes(const LayerContext& c, std::int64_t tokens, Linear next) {
  return runs_fp8(c, next) ? d(tokens) * d(c.h) : hidden_bytes(c, tokens);
}

double norm_bytes(const LayerContext& c) {
  return hidden_bytes(c, c.sp_tokens);
}

hw::MemoryKernel norm_kind(const LayerContext& c) {
  return c.model.norm == Norm::kLayerNorm ? hw::MemoryKernel::kLayerNorm
                                          : hw::MemoryKernel::kRmsNorm;
}

void tp_enter_forward(const LayerContext& c, std::vector<Op>& out, int layer,
                      const std::string& what, Phase phase, Linear next) {
  if (c.t > 1 && c.plan.sequence_parallel) {
    add_comm(out, layer, what + " all-gather", phase, CollectiveOp::kAllGather, Group::kTp,
             column_input_bytes(c, c.tokens, next), true);
    out.back().tp_feeds_gemm = true;
  }
}

void tp_exit_forward(const LayerContext& c, std::vector<Op>& out, int layer,
                     const std::string& what, Phase phase) {
  if (c.t == 1) return;
  if (c.plan.sequence_parallel) {
    add_comm(out, layer, what + " reduce-scatter", phase, CollectiveOp::kReduceScatter,
             Group::kTp, hidden_bytes(c, c.tokens), true);
    out.back().tp_feeds_gemm = true;
  } else {
    add_comm(out, layer, what + " all-reduce", phase, CollectiveOp::kAllReduce, Group::kTp,
             hidden_bytes(c, c.tokens), false);
  }
}

void tp_exit_backward(const LayerContext& c, std::vector<Op>& out, int layer,
                      const std::string& what) {
  if (!gathers_output_grad(c, Linear::kRow)) return;
  double bytes = hidden_bytes(c, c.tokens);
  if (runs_fp8(c, Linear::kRow)) {
    // Under FP8 the shard is cast first and gathered in one byte (TE's grad_output_preprocess).
    const double shard = d(c.sp_tokens) * d(c.h);
    add_memory(out, layer, what + " grad fp8 cast", Phase::kBackward, hw::MemoryKernel::kCopy,
               shard * c.elem, shard);
    bytes = d(c.tokens) * d(c.h);
  }
  add_comm(out, layer, what + " grad all-gather", Phase::kBackward, CollectiveOp::kAllGather,
           Group::kTp, bytes, true);
  out.back().tp_feeds_gemm = true;
}

void tp_regather_input(const LayerContext& c, std::vector<Op>& out, int layer,
                       const std::string& what, Linear next) {
  if (c.t > 1 && c.plan.sequence_parallel) {
    add_comm(out, layer, what + " input all-gather", Phase::kBackward, CollectiveOp::kAllGather,
             Group::kTp, column_input_bytes(c, c.tokens, next), true);
  }
}

void tp_enter_backward(const LayerContext& c, std::vector<Op>& out, int layer,
                       const std::string& what) {
  if (c.t == 1) return;
  if (c.plan.sequence_parallel) {
    add_comm(out, layer, what + " grad reduce-scatter", Phase::kBackward,
             CollectiveOp::kReduceScatter, Group::kTp, hidden_bytes(c, c.tokens), true);
  } else {
    add_comm(out, layer, what + " grad all-reduce", Phase::kBackward, CollectiveOp::kAllReduce,
             Group::kTp, hidden_bytes(c, c.tokens), true);
  }
}

void norm_backward(const LayerContext& c, std::vector<Op>& out, int layer,
                   const std::string& what) {
  add_memory(out, layer, what, Phase::kBackward, norm_kind(c), 2.0 * norm_bytes(c), norm_bytes(c));
}

}  // namespace megasim::workload::detail
