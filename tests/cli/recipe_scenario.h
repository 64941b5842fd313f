// NVIDIA's Llama 3.1 405B BF16 recipe on DGX H100 (TP 8, PP 9, VP 7, CP 2; README, FP8): the
// one published plan that fits an 80 GB H100 only without megasim's fragmentation margin
// (stage 0: 78.1 GiB, 81.9 with it), so the CLI tests' tight plan. Written to a file by each
// test that needs it.
#pragma once

namespace megasim::test {

inline constexpr const char* kTightRecipeScenario = R"({"name": "llama31-405b-recipe",
  "model": "llama3-405b-like", "cluster": "dgx-h100-superpod-6144", "device": "h100-sxm5-80gb",
  "plan": {"tp": 8, "pp": 9, "vpp": 7, "cp": 2, "dp": 4, "micro_batch": 1, "global_batch": 504,
           "sequence_parallel": true, "distributed_optimizer": true, "recompute": "none"},
  "optimizations": {"preset": "megatron-core"}})";

}  // namespace megasim::test
