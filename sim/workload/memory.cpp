#include "workload/memory.h"

#include <algorithm>
#include <cassert>

#include <fmt/format.h>

#include "engine/error.h"
#include "workload/program.h"

namespace megasim::workload {
namespace {

double d(std::int64_t v) {
  return static_cast<double>(v);
}
double gib(Bytes b) {
  return b / kGiB;
}

}  // namespace

Bytes activation_bytes_per_layer(const ModelSpec& m, const ParallelPlan& p,
                                 const MemoryOptions& opts) {
  const double s = d(m.seq), b = d(p.micro_batch), h = d(m.hidden), t = d(p.tp);
  const double f = d(m.ffn_hidden);
  const double fc1 = m.activation == Activation::kSwiglu ? 2.0 * f : f;
  // Korthikanti et al. Table 1 accounting, per token, in bytes (2-byte activations, 1-byte
  // dropout masks). Outside the TP region (replicated unless SP): norm inputs, the shared
  // input of the column-parallel GEMMs and the dropout masks; 10·h for a GPT layer.
  const double outside = m.parallel_block ? 2.0 * h + 2.0 * h + 1.0 * h
                                          : 2.0 * (2.0 * h) + 2.0 * h + 2.0 * h + 1.0 * h + 1.0 * h;
  // Inside (split over TP): Q, K, V, the attention-output input, the activation input and
  // the fc2 input; 24·h for a GPT layer.
  const double inside =
      2.0 * d(m.q_dim()) + 4.0 * d(m.kv_dim()) + 2.0 * d(m.q_dim()) + 2.0 * fc1 + 2.0 * f;
  // Softmax output (2), its dropout mask (1) and dropout output (2) per head and key: the
  // 5·a·s/h term, gone with selective recompute and with fused attention.
  const double scores =
      (p.recompute == Recompute::kNone && !opts.fused_attention) ? 5.0 * d(m.heads) * s : 0.0;
  const double sp_div = p.sequence_parallel ? t : 1.0;
  if (p.recompute == Recompute::kFull) {
    // Only the layer input is kept (2·s·b·h; Megatron keeps the sequence shard with SP).
    return Bytes(2.0 * s * b * h / sp_div);
  }
  return Bytes(s * b * (outside / sp_div + inside / t + scores / t));
}

double micro_batches_in_flight(const ParallelPlan& p, int stage) {
  const double m = d(p.micro_batches());
  switch (p.schedule) {
    case Schedule::kGpipe:
      return m;
    case Schedule::kInterleaved: {
      const double chunks = 2.0 * (p.pp - stage - 1) + d(p.vpp - 1) * p.pp + 1.0;
      return std::min(chunks, m * p.vpp) / p.vpp;
    }
    case Schedule::kOneFOneB:
    case Schedule::kZeroBubble:
      return std::min(d(p.pp - stage), m);
  }
  return m;
}

MemoryEstimate estimate_memory(const ModelSpec& m, const ParallelPlan& p, int stage,
                               const MemoryOptions& opts) {
  // The plan was checked against the model once, at the edge (io::load_inputs).
  assert(stage >= 0 && stage < p.pp && "stage index out of the plan's pipeline");
  MemoryEstimate e;
  e.stage = stage;
  const double params = d(stage_parameters_per_rank(m, p, stage));
  const double dp = p.dp;
  const double shard = p.shard_ranks();  // ZeRO-3 / FSDP: the ranks one shard spans
  const double w = kWeightBytes, g = gradient_bytes(p);
  // Gradients kept in 16 bits (fp16 runs, FSDP's bf16 reduction) are cast to an fp32 main
  // gradient for the optimizer, held beside the master weights and moments.
  const double o = kMasterAndMomentsBytes + (p.fp32_gradients ? 0.0 : 4.0);
  if (p.zero3) {
    // Sharded over DP, plus the gathered layer being computed and the one prefetched.
    e.weights = Bytes(params / shard * w + 2.0 * d(rank_layer_parameters(m, p.tp)) * w);
    e.gradients = Bytes(params / shard * g + d(rank_layer_parameters(m, p.tp)) * g);
    e.optimizer_states = Bytes(params / shard * o);
  } else {
    e.weights = Bytes(params * w);
    // ZeRO-2 keeps only its shard of the reduced gradients (its reduce bucket is not counted).
    e.gradients = Bytes(params * g / (p.zero2 ? dp : 1.0));
    e.optimizer_states = Bytes(params * o / (p.distributed_optimizer ? dp : 1.0));
  }

  const Bytes per_layer = activation_bytes_per_layer(m, p, opts);
  const int layers = stage_layers(m, p, stage);
  e.activations_per_micro_batch = per_layer * layers;
  e.micro_batches_in_flight = micro_batches_in_flight(p, stage);
  e.activations = e.activations_per_micro_batch * e.micro_batches_in_flight;
  if (p.recompute == Recompute::kFull) {
    // The layer being recomputed holds its full activations during its backward.
    ParallelPlan stored = p;
    stored.recompute = Recompute::kNone;
    e.activations += activation_bytes_per_layer(m, stored, opts);
  }

  const double s = d(m.seq), b = d(p.micro_batch), h = d(m.hidden), t = d(p.tp);
  const double sp_div = p.sequence_parallel ? t : 1.0;
  double buffers = 0.0;
  if (stage == 0) buffers += s * b * h / sp_div * e.micro_batches_in_flight;  // dropout mask
  if (stage == p.pp - 1) {
    // Final-norm input (2 B) and the fp32 logits the vocab-parallel cross entropy keeps,
    // Korthikanti et al.'s 4·s·b·v/t.
    buffers += 2.0 * s * b * h / sp_div + 4.0 * s * b * d(m.vocab) / t;
  }
  e.embedding_logits = Bytes(buffers);
  const Bytes tensors =
      e.weights + e.gradients + e.optimizer_states + e.activations + e.embedding_logits;
  e.workspace = opts.reserved + tensors * opts.fragmentation;
  return e;
}

Bytes checkpoint_bytes(const ModelSpec& m) {
  return Bytes((kWeightBytes + kMasterAndMomentsBytes) * d(total_parameters(m)));
}

void check_fits(const MemoryEstimate& e, Bytes capacity) {
  if (e.total() <= capacity) return;
  throw InputError(fmt::format(
      "pipeline stage {} needs {:.1f} GiB per GPU but the device has {:.1f} GiB: weights {:.1f}, "
      "gradients {:.1f}, optimizer states {:.1f}, activations {:.1f} ({:.2f} micro-batches in "
      "flight × {:.2f}), embedding/logits {:.1f}, workspace {:.1f}",
      e.stage, gib(e.total()), gib(capacity), gib(e.weights), gib(e.gradients),
      gib(e.optimizer_states), gib(e.activations), e.micro_batches_in_flight,
      gib(e.activations_per_micro_batch), gib(e.embedding_logits), gib(e.workspace)));
}

}  // namespace megasim::workload
