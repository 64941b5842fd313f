// One unit of work on one rank: a compute kernel with its exact per-rank shape
// (hw::KernelShape) or a collective on a communicator (TP, PP or DP group), with the FLOPs the
// MFU and HFU conventions charge it and the bytes it moves. Plain value types; any cost model
// can price an op from its shape or its (kind, group, size).
#pragma once

#include <cstdint>
#include <string>
#include <variant>

#include "engine/units.h"
#include "hw/device_profile.h"
#include "hw/kernel.h"

namespace megasim::workload {

enum class Phase { kForward, kBackward, kRecompute, kOptimizer };
// A collective's operation is the hw module's one collective-op type.
using hw::CollectiveOp;
// kDp is the whole data-parallel group. Hybrid sharding (ParallelPlan::shard_group) splits it:
// kDpShard, the consecutive DP ranks one shard spans, and kDpReplica, the ranks holding the same
// shard in every replica. kCp is a context-parallel group: the cp ranks that split one
// replica's sequences (consecutive DP indices of workload::RankIndex).
enum class Group { kTp, kPp, kDp, kDpShard, kDpReplica, kCp };
// The part a linear layer's GEMM plays: its forward, its input gradient (dgrad) or its weight
// gradient (wgrad, which zero-bubble schedules run as a separate W pass). kWeightGrad also marks
// the gradient accumulation pass that follows the wgrad GEMMs, so a W pass takes it too. kNone
// for every other op, attention's batched GEMMs included.
enum class GemmRole { kNone, kForward, kDataGrad, kWeightGrad };
// Coarse class of an op, for tables ("bytes by kind").
enum class OpKind { kGemm, kAttention, kMemory, kComm };

struct CommOp {
  CollectiveOp kind = CollectiveOp::kAllReduce;
  Group group = Group::kTp;
  // nccl-tests' "size": the buffer of an all-reduce, the gathered output of an all-gather,
  // the input of a reduce-scatter, the message of a send/recv, per rank.
  Bytes size{0.0};
  // The tensor's element count where the collective is one parameter tensor's (ZeRO-3's
  // gradient reduce-scatters, which a framework may group into buckets by it); 0 otherwise.
  std::int64_t elements = 0;
};

struct Op {
  std::string name;  // "layer 3 attention qkv fwd"
  Phase phase = Phase::kForward;
  GemmRole gemm_role = GemmRole::kNone;
  std::variant<hw::KernelShape, CommOp> work;
  // MFU convention (matmuls only, attention non-causal, exact share of replicated work);
  // zero for recompute, memory-bound kernels and communication.
  Flops model_flops{0.0};
  // HFU convention: model FLOPs plus recomputation.
  Flops hardware_flops{0.0};
  // A TP collective that MegaScale-style overlap can fuse into the adjacent GEMM (all-gather
  // before a column-parallel GEMM, reduce-scatter after a row-parallel one, and the backward
  // collectives Megatron already issues asynchronously next to dgrad/wgrad).
  bool tp_overlappable = false;
  // Of those, one whose data is the adjacent GEMM's: an all-gather whose output the next GEMM
  // reads (before QKV and fc1, and the output gradient's before the row-parallel dgrad), or a
  // reduce-scatter of the previous GEMM's output (after the attention output and fc2). A
  // framework can cut such a pair into chunks and pipeline them (Transformer Engine's
  // ring_exchange and pipeline methods); the others (the backward's input re-gather and
  // gradient reduce-scatter) can only run beside their GEMM (its bulk method).
  bool tp_feeds_gemm = false;
  int layer = -1;  // transformer layer index; -1 for embedding, logits and optimizer work
  // Work of the framework's pipeline engine rather than of the model (pipe_engine_ops.h),
  // reported apart (StepPrediction::pipe_engine).
  bool pipe_engine = false;

  const hw::KernelShape* kernel() const { return std::get_if<hw::KernelShape>(&work); }
  const CommOp* comm() const { return std::get_if<CommOp>(&work); }
  OpKind kind() const;
  // Bytes read and written by a kernel, or the collective's size.
  Bytes bytes() const;
  // FLOPs the kernel executes (causal attention counts only the pairs it computes); 0 for
  // communication.
  Flops kernel_flops() const;
};

const char* to_string(Phase p);
const char* to_string(Group g);
const char* to_string(OpKind k);

}  // namespace megasim::workload
