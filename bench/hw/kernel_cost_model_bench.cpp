// How fast KernelCostModel prices kernels: the step simulator calls cost() once per op per
// simulated rank class, so a folded MegaScale step makes thousands of calls and a search
// millions. Datasheet (model only) and measured (table interpolation over N rows) cases.
#include <benchmark/benchmark.h>

#include <string>

#include "hw/kernel_cost_model.h"
#include "io/device_profile_loader.h"

using namespace megasim;

namespace {

hw::DeviceProfile a100() {
  return io::load_device_profile(std::string(MEGASIM_SOURCE_DIR) +
                                 "/calibrate/profiles/a100-sxm4-80gb.json")
      .profile;
}

void BM_GemmDatasheet(benchmark::State& state) {
  const hw::KernelCostModel model(a100());
  const hw::KernelShape g = hw::GemmShape{2048, 4608, 12288, 1, hw::DType::kBf16, true, false};
  for (auto _ : state) benchmark::DoNotOptimize(model.cost(g));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_GemmDatasheet);

// A measured table of range(0) GEMMs on a log grid; the query falls between grid points.
void BM_GemmMeasuredTable(benchmark::State& state) {
  hw::DeviceProfile p = a100();
  p.kind = hw::ProfileKind::kMeasured;
  const hw::KernelCostModel plain(p);
  const int side = static_cast<int>(state.range(0));
  for (int i = 0; i < side; ++i) {
    for (int j = 0; j < side; ++j) {
      for (int k = 0; k < side; ++k) {
        const hw::GemmShape g{256LL << i, 256LL << j, 256LL << k, 1, hw::DType::kBf16, true, false};
        p.gemm_table.push_back({g, plain.model_gemm_time(g)});
      }
    }
  }
  const hw::KernelCostModel model(p);
  const hw::KernelShape q = hw::GemmShape{3000, 5000, 7000, 1, hw::DType::kBf16, true, false};
  for (auto _ : state) benchmark::DoNotOptimize(model.cost(q));
  state.SetItemsProcessed(state.iterations());
  state.counters["table_rows"] = static_cast<double>(p.gemm_table.size());
}
BENCHMARK(BM_GemmMeasuredTable)->Arg(4)->Arg(7);

void BM_AttentionUnfused(benchmark::State& state) {
  const hw::KernelCostModel model(a100());
  hw::AttentionShape a;
  a.heads = 12;
  a.kv_heads = 12;
  a.seq = 2048;
  a.head_dim = 128;
  a.fused = false;
  a.backward = true;
  const hw::KernelShape s = a;
  for (auto _ : state) benchmark::DoNotOptimize(model.cost(s));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_AttentionUnfused);

}  // namespace

BENCHMARK_MAIN();
