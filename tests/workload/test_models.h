// Helpers shared by the workload tests: the shipped models, a plan each of them accepts, a
// small hand-checkable model, and FLOP sums over a generated program.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "io/model_loader.h"
#include "workload/model_spec.h"
#include "workload/parallel_plan.h"
#include "workload/program.h"

namespace megasim::test {

inline std::vector<workload::ModelSpec> shipped_models() {
  std::vector<workload::ModelSpec> out;
  for (const auto& e :
       std::filesystem::directory_iterator(std::string(MEGASIM_SOURCE_DIR) + "/models")) {
    if (e.path().extension() == ".json" && e.path().filename() != "schema.json")
      out.push_back(io::load_model(e.path()));
  }
  return out;
}

// A plan with TP, SP and PP that the model accepts: the largest tp in {8, 4, 2, 1} the heads,
// KV heads and FFN allow, the largest pp in {4, 3, 2, 1} dividing the layers.
inline workload::ParallelPlan plan_for(const workload::ModelSpec& m) {
  workload::ParallelPlan p;
  for (int tp : {8, 4, 2, 1}) {
    if (m.heads % tp == 0 && m.kv_heads % tp == 0 && m.ffn_hidden % tp == 0 && m.seq % tp == 0) {
      p.tp = tp;
      break;
    }
  }
  for (int pp : {4, 3, 2, 1}) {
    if (m.layers % pp == 0) {
      p.pp = pp;
      break;
    }
  }
  p.sequence_parallel = p.tp > 1;
  p.dp = 2;
  p.micro_batch = 1;
  p.global_batch = 16;
  return p;
}

// MegaScale's 175B model (models/gpt-175b-megascale.json).
inline workload::ModelSpec gpt175() {
  return io::load_model(std::string(MEGASIM_SOURCE_DIR) + "/models/gpt-175b-megascale.json");
}

// The ops of one layer in one phase, in program order.
inline std::vector<const workload::Op*> layer_ops(const std::vector<workload::Op>& ops, int layer,
                                                  workload::Phase phase) {
  std::vector<const workload::Op*> out;
  for (const workload::Op& op : ops) {
    if (op.layer == layer && op.phase == phase) out.push_back(&op);
  }
  return out;
}

// MegaScale's 175B plan (scenarios/megascale-175b-12288.json).
inline workload::ParallelPlan megascale_plan() {
  workload::ParallelPlan p;
  p.tp = 8;
  p.sequence_parallel = true;
  p.pp = 8;
  p.vpp = 6;
  p.schedule = workload::Schedule::kInterleaved;
  p.dp = 192;
  p.micro_batch = 1;
  p.global_batch = 6144;
  p.distributed_optimizer = true;
  p.recompute = workload::Recompute::kSelective;
  return p;
}

// l = 2, h = 64, 8 heads of 8, 2 KV heads (kv_dim 16), SwiGLU ffn 128, s = 16, V = 100.
inline workload::ModelSpec tiny_gqa() {
  workload::ModelSpec m;
  m.name = "tiny-gqa";
  m.layers = 2;
  m.hidden = 64;
  m.heads = 8;
  m.kv_heads = 2;
  m.ffn_hidden = 128;
  m.activation = workload::Activation::kSwiglu;
  m.norm = workload::Norm::kRmsNorm;
  m.position = workload::Position::kRotary;
  m.tied_embeddings = false;
  m.bias = false;
  m.vocab = 100;
  m.seq = 16;
  return m;
}

struct FlopSums {
  double model = 0, hardware = 0, kernel = 0;  // per token, whole model (all TP ranks)
};

// Sums one micro-batch's forward and backward ops over every stage and chunk; every TP rank
// runs the same program, so the model's total is tp × one rank's.
inline FlopSums sum_program(const workload::ModelSpec& m, const workload::ParallelPlan& p,
                            const workload::GeneratorOptions& o = {}) {
  FlopSums s;
  for (const auto& st : workload::build_program(m, p, o)) {
    for (const auto& ch : st.chunks) {
      for (const auto* ops : {&ch.forward, &ch.backward}) {
        for (const auto& op : *ops) {
          s.model += op.model_flops.value();
          s.hardware += op.hardware_flops.value();
          if (op.phase != workload::Phase::kRecompute &&
              (op.kind() == workload::OpKind::kGemm || op.kind() == workload::OpKind::kAttention)) {
            s.kernel += op.kernel_flops().value();
          }
        }
      }
    }
  }
  const double scale = static_cast<double>(p.tp) / static_cast<double>(p.micro_batch * m.seq);
  s.model *= scale;
  s.hardware *= scale;
  s.kernel *= scale;
  return s;
}

}  // namespace megasim::test
