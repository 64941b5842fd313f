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

void linear_forward(const LayerContext& c, std::vector<Op>& out, int layer, const std::string& what,
                    Phase phase, std::int64_t n, std::int64_t k, double exact) {
  add_kernel(out, layer, what, phase, gemm(c, c.tokens, n, k), Flops(exact), GemmRole::kForward);
}

void dgrad_only(const LayerContext& c, std::vector<Op>& out, int layer, const std::string& what,
                std::int64_t n, std::int64_t k, double exact) {
  add_kernel(out, layer, what + " dgrad", Phase::kBackward, gemm(c, c.tokens, k, n, false, true),
             Flops(exact), GemmRole::kDataGrad);
}

void wgrad_only(const LayerContext& c, std::vector<Op>& out, int layer, const std::string& what,
                std::int64_t n, std::int64_t k, double exact) {
  add_kernel(out, layer, what + " wgrad", Phase::kBackward, gemm(c, k, n, c.tokens, true, false),
             Flops(exact), GemmRole::kWeightGrad);
}

void linear_backward(const LayerContext& c, std::vector<Op>& out, int layer,
                     const std::string& what, std::int64_t n, std::int64_t k, double exact) {
  dgrad_only(c, out, layer, what, n, k, exact);
  wgrad_only(c, out, layer, what, n, k, exact);
}

double hidden_bytes(const LayerContext& c, std::int64_t tokens) {
  return d(tokens) * d(c.h) * c.elem;
}

double norm_bytes(const LayerContext& c) {
  return hidden_bytes(c, c.sp_tokens);
}

hw::MemoryKernel norm_kind(const LayerContext& c) {
  return c.model.norm == Norm::kLayerNorm ? hw::MemoryKernel::kLayerNorm
                                          : hw::MemoryKernel::kRmsNorm;
}

void tp_enter_forward(const LayerContext& c, std::vector<Op>& out, int layer,
                      const std::string& what, Phase phase) {
  if (c.t > 1 && c.plan.sequence_parallel) {
    add_comm(out, layer, what + " all-gather", phase, CollectiveOp::kAllGather, Group::kTp,
             hidden_bytes(c, c.tokens), true);
  }
}

void tp_exit_forward(const LayerContext& c, std::vector<Op>& out, int layer,
                     const std::string& what, Phase phase) {
  if (c.t == 1) return;
  if (c.plan.sequence_parallel) {
    add_comm(out, layer, what + " reduce-scatter", phase, CollectiveOp::kReduceScatter,
             Group::kTp, hidden_bytes(c, c.tokens), true);
  } else {
    add_comm(out, layer, what + " all-reduce", phase, CollectiveOp::kAllReduce, Group::kTp,
             hidden_bytes(c, c.tokens), false);
  }
}

void tp_exit_backward(const LayerContext& c, std::vector<Op>& out, int layer,
                      const std::string& what) {
  if (c.t > 1 && c.plan.sequence_parallel) {
    add_comm(out, layer, what + " grad all-gather", Phase::kBackward, CollectiveOp::kAllGather,
             Group::kTp, hidden_bytes(c, c.tokens), true);
  }
}

void tp_regather_input(const LayerContext& c, std::vector<Op>& out, int layer,
                       const std::string& what) {
  if (c.t > 1 && c.plan.sequence_parallel) {
    add_comm(out, layer, what + " input all-gather", Phase::kBackward, CollectiveOp::kAllGather,
             Group::kTp, hidden_bytes(c, c.tokens), true);
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
