#include "workload/op.h"

namespace megasim::workload {

OpKind Op::kind() const {
  if (comm()) return OpKind::kComm;
  const hw::KernelShape& k = *kernel();
  if (std::holds_alternative<hw::GemmShape>(k)) return OpKind::kGemm;
  if (std::holds_alternative<hw::AttentionShape>(k)) return OpKind::kAttention;
  return OpKind::kMemory;
}

Bytes Op::bytes() const {
  if (const CommOp* c = comm()) return c->size;
  return hw::kernel_bytes(*kernel());
}

Flops Op::kernel_flops() const {
  if (comm()) return Flops(0.0);
  return hw::kernel_flops(*kernel());
}

const char* to_string(Phase p) {
  switch (p) {
    case Phase::kForward:
      return "forward";
    case Phase::kBackward:
      return "backward";
    case Phase::kRecompute:
      return "recompute";
    case Phase::kOptimizer:
      return "optimizer";
  }
  return "?";
}

const char* to_string(Group g) {
  switch (g) {
    case Group::kTp:
      return "tp";
    case Group::kPp:
      return "pp";
    case Group::kDp:
      return "dp";
    case Group::kDpShard:
      return "dp-shard";
    case Group::kDpReplica:
      return "dp-replica";
    case Group::kCp:
      return "cp";
  }
  return "?";
}

const char* to_string(OpKind k) {
  switch (k) {
    case OpKind::kGemm:
      return "gemm";
    case OpKind::kAttention:
      return "attention";
    case OpKind::kMemory:
      return "memory";
    case OpKind::kComm:
      return "comm";
  }
  return "?";
}

}  // namespace megasim::workload
