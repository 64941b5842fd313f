// How fast the workload model answers: a plan search calls build_program and estimate_memory
// once per candidate plan, so both must take well under a millisecond for a 175B model.
#include <benchmark/benchmark.h>

#include "workload/memory.h"
#include "workload/program.h"

namespace {

using namespace megasim::workload;

// MegaScale 175B (MegaScale NSDI'24 Table 1) on its 12,288-GPU plan.
ModelSpec gpt175() {
  ModelSpec m;
  m.name = "gpt-175b-megascale";
  m.layers = 96;
  m.hidden = 12288;
  m.heads = 128;
  m.kv_heads = 128;
  m.ffn_hidden = 49152;
  m.vocab = 64000;
  m.seq = 2048;
  return m;
}

ParallelPlan megascale_plan() {
  ParallelPlan p;
  p.tp = 8;
  p.sequence_parallel = true;
  p.pp = 8;
  p.vpp = 6;
  p.schedule = Schedule::kInterleaved;
  p.dp = 192;
  p.global_batch = 6144;
  p.distributed_optimizer = true;
  p.recompute = Recompute::kSelective;
  return p;
}

void BM_BuildProgram175B(benchmark::State& state) {
  const ModelSpec m = gpt175();
  const ParallelPlan p = megascale_plan();
  std::size_t ops = 0;
  for (auto _ : state) {
    const auto program = build_program(m, p);
    for (const auto& st : program) {
      for (const auto& ch : st.chunks) ops += ch.forward.size() + ch.backward.size();
    }
    benchmark::DoNotOptimize(ops);
  }
  state.counters["ops_per_s"] =
      benchmark::Counter(static_cast<double>(ops), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_BuildProgram175B)->Unit(benchmark::kMicrosecond);

void BM_EstimateMemory175B(benchmark::State& state) {
  const ModelSpec m = gpt175();
  const ParallelPlan p = megascale_plan();
  for (auto _ : state) {
    for (int s = 0; s < p.pp; ++s) benchmark::DoNotOptimize(estimate_memory(m, p, s).total());
  }
}
BENCHMARK(BM_EstimateMemory175B)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
