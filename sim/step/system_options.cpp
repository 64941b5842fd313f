#include "step/system_options.h"

namespace megasim::step {

const char* to_string(AttentionKernel k) {
  switch (k) {
    case AttentionKernel::kUnfused: return "unfused";
    case AttentionKernel::kFlashV1: return "flash-v1";
    case AttentionKernel::kFlashV2: return "flash-v2";
  }
  return "?";
}

namespace {
constexpr std::array kAttentionKernels = {AttentionKernel::kUnfused, AttentionKernel::kFlashV1,
                                          AttentionKernel::kFlashV2};
}  // namespace

std::optional<AttentionKernel> attention_kernel_from_string(const std::string& name) {
  for (auto k : kAttentionKernels) {
    if (name == to_string(k)) return k;
  }
  return std::nullopt;
}

std::vector<std::string> attention_kernel_names() {
  std::vector<std::string> names;
  for (auto k : kAttentionKernels) names.emplace_back(to_string(k));
  return names;
}

const char* main_gradient_name(bool at_step) {
  return at_step ? "optimizer-step" : "from-backward";
}

std::optional<bool> main_gradient_at_step_from_string(const std::string& name) {
  for (const bool at_step : {true, false}) {
    if (name == main_gradient_name(at_step)) return at_step;
  }
  return std::nullopt;
}

std::vector<std::string> main_gradient_names() {
  return {main_gradient_name(true), main_gradient_name(false)};
}

SystemOptions apply_overrides(SystemOptions s, const SystemOverrides& o, bool model_parallel_block,
                              std::int64_t model_window) {
  // What the model has runs unless the scenario says otherwise: the preset can only add it.
  s.parallel_block = s.parallel_block || model_parallel_block;
  s.sliding_window = s.sliding_window || model_window > 0;
  for (std::size_t i = 0; i < kSwitches.size(); ++i) {
    if (o.switches[i]) s.*kSwitches[i].field = *o.switches[i];
  }
  if (o.attention) s.attention = *o.attention;
  if (o.bf16_optimizer) s.pipe_engine.bf16_optimizer = *o.bf16_optimizer;
  if (o.cp_overlap) s.cp_overlap = *o.cp_overlap;
  if (o.dp_bucket_overlap) s.dp_bucket_overlap = *o.dp_bucket_overlap;
  if (o.backward_tp_overlap) s.backward_tp_overlap = *o.backward_tp_overlap;
  if (o.grad_accumulation_pass) s.grad_accumulation_pass = *o.grad_accumulation_pass;
  if (o.main_gradient_at_step) s.main_gradient_at_step = *o.main_gradient_at_step;
  if (o.scatter_gather_list_copy) s.scatter_gather_list_copy = *o.scatter_gather_list_copy;
  s.attention_window = o.attention_window.value_or(model_window);
  return s;
}

}  // namespace megasim::step
