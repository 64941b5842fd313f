// Internal to the workload module: the op sequences of one transformer layer, the embedding
// and the logits head, per rank, for one micro-batch. program.cpp assembles them into stage
// programs.
#pragma once

#include <cstdint>
#include <vector>

#include "workload/model_spec.h"
#include "workload/op.h"
#include "workload/parallel_plan.h"
#include "workload/program.h"

namespace megasim::workload::detail {

// Per-rank sizes of one micro-batch, computed once.
struct LayerContext {
  LayerContext(const ModelSpec& m, const ParallelPlan& p, const GeneratorOptions& o);

  const ModelSpec& model;
  const ParallelPlan& plan;
  const GeneratorOptions& opts;
  std::int64_t b, s, h, t;
  std::int64_t tokens;     // b·s, the rows of every GEMM
  std::int64_t sp_tokens;  // tokens a rank holds outside the TP region (/ t with SP)
  std::int64_t heads_r, kv_heads_r, head_dim, q_r, kv_r, f_r;
  std::int64_t vocab_r;  // vocab shard, padded up when tp does not divide the vocabulary
  hw::DType dtype;
  double elem;  // bytes per activation element
};

// The forward of one layer. Phase kRecompute emits the same ops as a full recompute (no
// model FLOPs, hardware FLOPs kept).
void append_layer_forward(const LayerContext& c, int layer, Phase phase, std::vector<Op>& out);
// Only the attention core (what selective recompute reruns).
void append_attention_core(const LayerContext& c, int layer, Phase phase, std::vector<Op>& out);
void append_layer_backward(const LayerContext& c, int layer, std::vector<Op>& out);

void append_embedding_forward(const LayerContext& c, std::vector<Op>& out);
void append_embedding_backward(const LayerContext& c, std::vector<Op>& out);
void append_logits_forward(const LayerContext& c, std::vector<Op>& out);
void append_logits_backward(const LayerContext& c, std::vector<Op>& out);

// ZeRO-3: the all-gather of one layer's parameters before its forward and backward, and the
// reduce-scatter of its gradients after its backward; one collective per parameter tensor
// (GeneratorOptions::shard_per_tensor) or one for the layer.
void append_zero3_gathers(const LayerContext& c, int layer, Phase phase, std::vector<Op>& out);
void append_zero3_scatters(const LayerContext& c, int layer, std::vector<Op>& out);
// Whether the backward gathers the parameters (not with full recompute whose gathers are kept).
bool zero3_gathers_for_backward(const LayerContext& c);
// Whether sub-module `s`, gathered for the full recompute's forward, is reused within
// GeneratorOptions::shard_max_reuse_distance and so kept gathered for its backward.
bool kept_for_backward(const LayerContext& c, SubModule s);
// With GeneratorOptions::shard_per_sub_module: the gathers of one sub-module's tensors, emitted
// just before its forward (kForward, kRecompute) or backward (kBackward) compute (none for one
// kept_for_backward); else nothing.
void fetch_sub_module(const LayerContext& c, int layer, Phase phase, SubModule s,
                      std::vector<Op>& out);

}  // namespace megasim::workload::detail
