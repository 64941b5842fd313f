// The step's host memory from the command line, where the work bounds (plan/work_bounds.h)
// estimate it: a pipeline of many stages keeps what its neighbours send, not every pair.
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "run_command.h"

using megasim::test::kDefaultScenario;

TEST_CASE(
    "cli: a pipeline of 12,288 stages runs in little memory, its sends' routes by neighbour") {
  // A stage sends to its neighbours alone; the PP sends kept a route and a batch for every pair
  // of stages, pp² of them, which overflowed at PP 65,536 (a segmentation fault), threw
  // bad_alloc at 16,384 and took 10 GB at 8,192 until 2026-12-06 (a user's trial). Under a
  // 4 GB address-space limit the 12,288-stage step needs about 200 MB.
  const auto model = megasim::test::temp_file("deep_model.json");
  std::ofstream(model) << R"({"name": "deep", "source": "a test", "layers": 12288, "hidden": 64,
    "heads": 1, "kv_heads": 1, "ffn_hidden": 256, "activation": "gelu", "norm": "layernorm",
    "position": "learned", "parallel_block": false, "attention_window": null,
    "tied_embeddings": true, "bias": true, "vocab": 1000, "seq": 128})";
  const auto out = megasim::test::temp_file("deep_step.json");
  const std::string command =
      "ulimit -v 4000000 && exec " + std::string(MEGASIM_BINARY) + " simulate " +
      megasim::test::shell_quote(kDefaultScenario) + " --set model=" + model.string() +
      " --set plan.tp=1 --set plan.pp=12288 --set plan.vpp=1 --set plan.dp=1" +
      " --set plan.global_batch=1 --set plan.sequence_parallel=false --set plan.recompute=full" +
      " --set optimizations.preset=megatron-core --set run.tokens=1e6 -o " + out.string() +
      " >/dev/null 2>&1";
  const int status = std::system(("sh -c " + megasim::test::shell_quote(command)).c_str());
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  const auto step = nlohmann::json::parse(megasim::test::read_all(out));
  CHECK(step["step_time_s"].get<double>() > 0.0);
}
