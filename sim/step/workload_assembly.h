// What a system runs of a model under a plan, put together in one place: the model with the
// system's switches applied (parallel block, sliding window), the plan with its optimizer
// (LAMB), the attention kernel the op generator and the memory model both assume, the op
// program of every pipeline stage and the memory each stage's GPUs need. `simulate`,
// `inspect`, `compare`, `validate` and `calibrate shapes` all see the workload through this
// one function, so that they cannot disagree about it (they once did: simulate priced memory
// for unfused attention while running a fused kernel).
#pragma once

#include <vector>

#include "step/system_options.h"
#include "workload/memory.h"
#include "workload/model_spec.h"
#include "workload/parallel_plan.h"
#include "workload/program.h"

namespace megasim::step {

struct AssembledWorkload {
  workload::ModelSpec model;          // as the model file has it
  workload::ModelSpec executed;       // what the system runs (the MFU convention's model too)
  workload::ParallelPlan plan;        // with the system's optimizer
  bool fused_attention = true;        // one kernel (FlashAttention-class) or Megatron's unfused ops
  std::vector<workload::StageProgram> program;    // per stage
  std::vector<workload::MemoryEstimate> memory;   // per stage
};

// The model the system actually runs: its parallel block and window as the system's switches
// say (io::load_inputs resolves them against the model's own: step::apply_overrides).
// The caller has checked that a sliding window has a size.
workload::ModelSpec executed_model(const workload::ModelSpec& model, const SystemOptions& system);

// The MFU numerator per token: the convention's count of the executed model, so a sliding
// window the system switches on is counted as MegaScale counts it (workload/flops.h). For
// callers without an assembled workload (the search's estimate, its results file); an
// AssembledWorkload's `executed` gives the same (predict_step's rates).
double mfu_flops_per_token(const workload::ModelSpec& model, const SystemOptions& system);

// The optimizer a system runs with a plan that names `written`: LAMB where the system runs it
// (MegaScale's), whatever the plan says; else the plan's. The one rule, used where a plan is
// loaded (io::load_inputs, so that every report prints the plan priced), where the search
// builds its candidates (each under its own system) and below.
workload::Optimizer system_optimizer(workload::Optimizer written, const SystemOptions& system);
// Whether a plan that does not write plan.fp32_gradients keeps its gradients in fp32: with bf16,
// Megatron-LM's rule (fp32), or under a system whose bf16 gradients stay bf16 (DeepSpeed's ZeRO
// optimizers) fp32 only where its BF16_Optimizer runs; with fp16, never. Used where a plan is
// loaded and where the search builds its candidates, whose ZeRO stage may differ from the
// scenario's (search's ZeRO-2 plans became ZeRO-1 with ZeRO-2's bf16 gradients until
// 2026-12-07: a review).
bool fp32_gradients_by_rule(const SystemOptions& system, const workload::ParallelPlan& plan);
// What the memory model needs of the system (its attention kernel, ZeRO-3's gathers and
// reductions, DeepSpeed's BF16_Optimizer): the one set every command's memory figures use.
workload::MemoryOptions memory_options(const SystemOptions& system);

// The plan must be valid for the model (workload::validate_plan; io::load_inputs checks it).
AssembledWorkload assemble_workload(const workload::ModelSpec& model,
                                    const workload::ParallelPlan& plan,
                                    const SystemOptions& system);

}  // namespace megasim::step
