// How a model is split over GPUs: Megatron-style tensor (TP, with optional sequence
// parallelism), pipeline (PP, with VPP interleaved chunks per stage) and data (DP)
// parallelism, micro/global batch, activation recomputation, optimizer sharding and
// precision. A plain value type; checks against a model and a device live with the
// workload generator.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace megasim::workload {

enum class Recompute { kNone, kSelective, kFull };
enum class Optimizer { kAdam, kLamb };
enum class Precision { kBf16, kFp16 };
enum class Schedule { kGpipe, kOneFOneB, kInterleaved, kZeroBubble };

struct ParallelPlan {
  int tp = 1;
  bool sequence_parallel = false;
  int pp = 1;
  int vpp = 1;  // model chunks per pipeline stage (interleaved 1F1B when > 1)
  int dp = 1;
  int micro_batch = 1;
  std::int64_t global_batch = 1;  // sequences per optimizer step
  Recompute recompute = Recompute::kNone;
  bool distributed_optimizer = false;  // ZeRO-1: optimizer states sharded over DP
  bool zero3 = false;                  // ZeRO-3 / FSDP: parameters and gradients sharded too
  Optimizer optimizer = Optimizer::kAdam;
  Precision precision = Precision::kBf16;
  Schedule schedule = Schedule::kOneFOneB;
  std::vector<int> layer_split;  // layers per pipeline stage when uneven; empty = even

  std::int64_t gpus() const { return static_cast<std::int64_t>(tp) * pp * dp; }
  std::int64_t micro_batches() const { return global_batch / (static_cast<std::int64_t>(dp) * micro_batch); }
};

const char* to_string(Recompute r);
const char* to_string(Optimizer o);
const char* to_string(Precision p);
const char* to_string(Schedule s);

}  // namespace megasim::workload
