#include "step/workload_assembly.h"

#include <cassert>

#include "workload/flops.h"

namespace megasim::step {

workload::ModelSpec executed_model(const workload::ModelSpec& m, const SystemOptions& s) {
  workload::ModelSpec e = m;
  e.parallel_block = s.parallel_block;
  assert((!s.sliding_window || s.attention_window > 0) &&
         "io::load_inputs checks that a sliding window has a size");
  e.attention_window = s.sliding_window ? s.attention_window : 0;
  return e;
}

double mfu_flops_per_token(const workload::ModelSpec& model, const SystemOptions& system) {
  return workload::model_flops_per_token(executed_model(model, system)).value();
}

workload::Optimizer system_optimizer(workload::Optimizer written, const SystemOptions& system) {
  return system.lamb ? workload::Optimizer::kLamb : written;
}

bool fp32_gradients_by_rule(const SystemOptions& system, const workload::ParallelPlan& plan) {
  if (plan.precision != workload::Precision::kBf16) return false;
  if (system.bf16_gradients_in_fp32) return true;
  return workload::bf16_optimizer_applies(system.pipe_engine.bf16_optimizer, plan);
}

// The reuse distance the program and the memory model both keep sub-modules by: it applies only
// where the backward gathers again, sub-module by sub-module.
namespace {
std::int64_t reuse_distance(const SystemOptions& system) {
  const auto& sh = system.sharding;
  return sh.regather_after_recompute && sh.per_sub_module ? sh.max_reuse_distance : 0;
}
}  // namespace

workload::MemoryOptions memory_options(const SystemOptions& system) {
  workload::MemoryOptions o;
  o.fused_attention = system.attention_kernel() != AttentionKernel::kUnfused;
  o.sharded.per_tensor = system.sharding.per_tensor;
  o.sharded.per_sub_module = system.sharding.per_sub_module;
  o.sharded.prefetch = system.sharding.prefetch_layers;
  o.sharded.persistence_threshold = system.sharding.persistence_threshold;
  o.sharded.reduce_bucket_elements = system.sharding.reduce_bucket_elements;
  o.sharded.max_reuse_distance = reuse_distance(system);
  o.sharded.whole_at_one_rank = system.sharding.no_shard_at_one_rank;
  o.pipe_bf16_optimizer = system.pipe_engine.bf16_optimizer;
  o.zero2_bucketed = system.dp_overlap;
  o.main_gradient_at_step = system.main_gradient_at_step;
  return o;
}

AssembledWorkload assemble_workload(const workload::ModelSpec& model,
                                    const workload::ParallelPlan& plan,
                                    const SystemOptions& system) {
  AssembledWorkload w;
  w.model = model;
  w.executed = executed_model(model, system);
  w.plan = plan;
  w.plan.optimizer = system_optimizer(plan.optimizer, system);
  w.fused_attention = system.attention_kernel() != AttentionKernel::kUnfused;
  workload::GeneratorOptions gen;
  gen.fused_attention = w.fused_attention;
  gen.shard_per_tensor = system.sharding.per_tensor;
  gen.regather_after_recompute = system.sharding.regather_after_recompute;
  gen.shard_max_reuse_distance = reuse_distance(system);
  gen.zero2_reshard_after_backward = system.sharding.zero2_reshard_after_backward;
  gen.shard_per_sub_module = system.sharding.per_sub_module;
  gen.shard_persistence_threshold = system.sharding.persistence_threshold;
  gen.pipe_partitioned_transfers = system.pipe_engine.partitioned_transfers;
  gen.pipe_bf16_optimizer = system.pipe_engine.bf16_optimizer;
  gen.grad_accumulation_pass = system.grad_accumulation_pass;
  gen.pp_scatter_gather = system.scatter_gather_transfers;
  gen.pp_gather_list_copy = system.scatter_gather_list_copy;
  const workload::MemoryOptions memory = memory_options(system);
  w.program = workload::build_program(w.executed, w.plan, gen);
  for (int s = 0; s < w.plan.pp; ++s) {
    w.memory.push_back(workload::estimate_memory(w.executed, w.plan, s, memory));
  }
  return w;
}

}  // namespace megasim::step
