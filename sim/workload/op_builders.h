// Internal to the workload module: the small builders every op sequence is written with.
// add_kernel/add_memory/add_comm name an op ("layer 3 mlp fc1 wgrad bwd") and charge its
// FLOPs; the linear-layer builders mark each GEMM with its GemmRole, which is what later
// stages read (zero-bubble's weight-gradient split), never the name; the TP-region builders
// emit Megatron-LM's collectives at the entry and exit of column- and row-parallel regions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "workload/layer_ops.h"

namespace megasim::workload::detail {

inline double d(std::int64_t v) { return static_cast<double>(v); }

// Adds a compute op; `convention` is the FLOPs the MFU/HFU conventions charge it.
void add_kernel(std::vector<Op>& out, int layer, const std::string& what, Phase phase,
                hw::KernelShape shape, Flops convention, GemmRole role = GemmRole::kNone);
void add_memory(std::vector<Op>& out, int layer, const std::string& what, Phase phase,
                hw::MemoryKernel kind, double read_bytes, double write_bytes);
void add_comm(std::vector<Op>& out, int layer, const std::string& what, Phase phase,
              CollectiveOp kind, Group group, double bytes, bool overlappable);

hw::GemmShape gemm(const LayerContext& c, std::int64_t m, std::int64_t n, std::int64_t k,
                   bool ta = false, bool tb = false, std::int64_t batch = 1);

// Which linear layer a GEMM belongs to. Under plan.fp8 a transformer layer's column- and
// row-parallel linears are Transformer Engine modules (LayerNormLinear, Linear) that run FP8
// GEMMs with the casts below; the logits head (kHead) is Megatron-Core's own ColumnParallelLinear
// and stays in the training dtype.
enum class Linear { kColumn, kRow, kHead };

// A linear layer Y[tokens × n] = X[tokens × k]·W. `exact` is the exact share of the model's
// FLOPs for this rank (differs from the shape's only when work is replicated or padded).
// Under FP8 a row-parallel layer first casts its input (TE's Linear: cast_to_fp8 with SP,
// fp8_cast_transpose_fused without, which writes the transpose for the wgrad too); a column-
// parallel layer's input is already FP8, written so by the norm (TE's LayerNormLinear).
void linear_forward(const LayerContext& c, std::vector<Op>& out, int layer, const std::string& what,
                    Phase phase, Linear kind, std::int64_t n, std::int64_t k, double exact);
// Its backward: dgrad dX = dY·Wᵀ and wgrad dW = Xᵀ·dY, each as many FLOPs as the forward.
// Under FP8 the dgrad first casts the output gradient to FP8 with its transpose for the wgrad
// (fp8_cast_transpose_bgrad_fused), or, for a row-parallel layer whose gradient was cast and
// gathered in FP8 by tp_exit_backward (SP), transposes the gathered gradient; the wgrad first
// transposes its saved FP8 input (fp8_transpose) unless the forward's cast wrote the transpose
// (row-parallel without SP).
void dgrad_only(const LayerContext& c, std::vector<Op>& out, int layer, const std::string& what,
                Linear kind, std::int64_t n, std::int64_t k, double exact);
void wgrad_only(const LayerContext& c, std::vector<Op>& out, int layer, const std::string& what,
                Linear kind, std::int64_t n, std::int64_t k, double exact);
// dgrad then wgrad.
void linear_backward(const LayerContext& c, std::vector<Op>& out, int layer,
                     const std::string& what, Linear kind, std::int64_t n, std::int64_t k,
                     double exact);

double hidden_bytes(const LayerContext& c, std::int64_t tokens);
// The bytes of `tokens` rows of a norm's output that feeds the linear layer `next`: one a
// value when that layer runs FP8 (TE's LayerNormLinear writes the norm output in FP8 and
// gathers it over TP in FP8), else the training dtype's.
double column_input_bytes(const LayerContext& c, std::int64_t tokens, Linear next);
double norm_bytes(const LayerContext& c);
hw::MemoryKernel norm_kind(const LayerContext& c);

void norm_backward(const LayerContext& c, std::vector<Op>& out, int layer,
                   const std::string& what);

// Forward: at the entry of a column-parallel region an all-gather of the sequence shards with
// SP (Megatron's f is the identity without); at the exit of a row-parallel region a
// reduce-scatter with SP (fusable into the GEMM before it), else a blocking all-reduce.
void tp_enter_forward(const LayerContext& c, std::vector<Op>& out, int layer,
                      const std::string& what, Phase phase, Linear next);
void tp_exit_forward(const LayerContext& c, std::vector<Op>& out, int layer,
                     const std::string& what, Phase phase);
// Backward of a row-parallel exit: with SP the output gradient is all-gathered again (under
// FP8 its shard cast first and gathered in one byte); without SP Megatron's g is the identity
// backward.
void tp_exit_backward(const LayerContext& c, std::vector<Op>& out, int layer,
                      const std::string& what);
// With SP Megatron keeps only the sequence shard of a column-parallel GEMM's input and
// all-gathers it again for the weight gradient, overlapped with dgrad.
void tp_regather_input(const LayerContext& c, std::vector<Op>& out, int layer,
                       const std::string& what, Linear next);
// Backward of a column-parallel entry: the input gradient is reduce-scattered (SP) or
// all-reduced, asynchronously next to the wgrad GEMM in Megatron-LM.
void tp_enter_backward(const LayerContext& c, std::vector<Op>& out, int layer,
                       const std::string& what);

}  // namespace megasim::workload::detail
