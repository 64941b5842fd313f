// A model's own parallel block and sliding window against a scenario's switches: what the model
// has runs unless the scenario switches it off, a preset only adds it, and the step runs what the
// reports say (a user's trial: a model's window ran whatever optimizations.sliding_window and
// attention_window said, while every report printed the switches).
#include <doctest/doctest.h>

#include "io/system_loader.h"
#include "step/system_options.h"
#include "step/workload_assembly.h"
#include "workload/flops.h"
#include "workload/model_spec.h"
#include "workload/test_models.h"

using namespace megasim;

namespace {

// GPT-3 175B at 8,192 tokens, so that a 4,096-token window is shorter than the sequence.
workload::ModelSpec model_with(bool parallel_block, std::int64_t window) {
  workload::ModelSpec m = test::gpt175();
  m.seq = 8192;
  m.parallel_block = parallel_block;
  m.attention_window = window;
  return m;
}

// The model as `preset` with `overrides` runs it.
workload::ModelSpec executed(const workload::ModelSpec& m, const char* preset,
                             const step::SystemOverrides& overrides) {
  const step::SystemOptions s = step::apply_overrides(io::load_system_preset(preset), overrides,
                                                      m.parallel_block, m.attention_window);
  return step::executed_model(m, s);
}

constexpr std::size_t kParallelBlock = 0;  // kSwitches' order
constexpr std::size_t kSlidingWindow = 1;

}  // namespace

TEST_CASE("model features: the model's parallel block runs unless the scenario switches it off") {
  static_assert(step::kSwitches[kParallelBlock].field == &step::SystemOptions::parallel_block);
  const workload::ModelSpec parallel = model_with(true, 0);
  step::SystemOverrides unset;
  CHECK(executed(parallel, "megatron-lm", unset).parallel_block);
  step::SystemOverrides off;
  off.switches[kParallelBlock] = false;
  CHECK_FALSE(executed(parallel, "megatron-lm", off).parallel_block);
  CHECK_FALSE(executed(parallel, "megascale", off).parallel_block);
  // A preset that has it adds it to a model without; the scenario's false takes it away again.
  const workload::ModelSpec sequential = model_with(false, 0);
  CHECK(executed(sequential, "megascale", unset).parallel_block);
  CHECK_FALSE(executed(sequential, "megascale", off).parallel_block);
  CHECK_FALSE(executed(sequential, "megatron-lm", unset).parallel_block);
}

TEST_CASE("model features: the model's window runs at the scenario's size, or not at all") {
  static_assert(step::kSwitches[kSlidingWindow].field == &step::SystemOptions::sliding_window);
  const workload::ModelSpec windowed = model_with(false, 4096);
  step::SystemOverrides unset;
  CHECK(executed(windowed, "megatron-lm", unset).attention_window == 4096);
  step::SystemOverrides smaller;
  smaller.attention_window = 1024;
  CHECK(executed(windowed, "megatron-lm", smaller).attention_window == 1024);
  step::SystemOverrides off;
  off.switches[kSlidingWindow] = false;
  CHECK(executed(windowed, "megatron-lm", off).attention_window == 0);
  CHECK(executed(windowed, "megascale", off).attention_window == 0);
  // The megascale preset's window is on with the scenario's size; a model without one stays
  // without under a preset that does not switch it on.
  const workload::ModelSpec full = model_with(false, 0);
  CHECK(executed(full, "megascale", smaller).attention_window == 1024);
  CHECK(executed(full, "megatron-lm", smaller).attention_window == 0);
  // The FLOPs follow: a model run without its window is the model without one.
  CHECK(workload::model_flops_per_token(executed(windowed, "megatron-lm", off)).value() ==
        workload::model_flops_per_token(full).value());
}
