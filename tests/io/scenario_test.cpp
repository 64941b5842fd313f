#include <doctest/doctest.h>

#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "engine/error.h"
#include "io/json_reader.h"
#include "io/inputs.h"
#include "io/scenario.h"
#include "io/system_loader.h"
#include "input_error_of.h"

namespace fs = std::filesystem;
using megasim::InputError;
using megasim::io::Json;
using megasim::io::KeyLog;
using megasim::io::load_scenario;

using megasim::test::input_error_of;

namespace {
const fs::path kSource = MEGASIM_SOURCE_DIR;
const fs::path kDefault = kSource / "scenarios/megascale-175b-12288.json";


// Every property path that scenarios/schema.json declares ("plan.tp", ...).
void schema_paths(const Json& node, const std::string& prefix, KeyLog& out) {
  if (!node.contains("properties")) return;
  for (const auto& [key, sub] : node["properties"].items()) {
    const std::string path = prefix.empty() ? key : prefix + "." + key;
    out.insert(path);
    schema_paths(sub, path, out);
  }
}
}  // namespace

TEST_CASE("scenario: the default scenario loads and resolves its references") {
  const auto s = load_scenario(kDefault);
  CHECK(s.name == "megascale-175b-12288");
  CHECK(s.plan.gpus() == 12288);
  CHECK(s.plan.micro_batches() == 32);
  CHECK(s.plan.schedule == megasim::workload::Schedule::kInterleaved);
  CHECK(s.model_file.filename() == "gpt-175b-megascale.json");
  CHECK(s.cluster_file.filename() == "megascale-a100-12288.json");
  CHECK(s.device_file.filename() == "a100-sxm4-80gb.json");
  CHECK(s.optimizations.preset == "megascale");
  REQUIRE(s.run.tokens);
  CHECK(*s.run.tokens == doctest::Approx(3e11));
}

TEST_CASE("scenario: --set overrides give MegaScale's smaller configurations") {
  const auto s = load_scenario(kDefault, {"plan.dp=4", "plan.global_batch=768",
                                          "optimizations.preset=megatron-lm"});
  CHECK(s.plan.gpus() == 256);
  CHECK(s.plan.global_batch == 768);
  CHECK(s.optimizations.preset == "megatron-lm");
}

TEST_CASE("scenario: --set values are type-checked like the file's own") {
  CHECK(input_error_of([] { load_scenario(kDefault, {"plan.tp=eight"}); })
            .find("plan.tp: expected an integer, found a string (\"eight\")") != std::string::npos);
  CHECK(input_error_of([] { load_scenario(kDefault, {"plan.tpp=4"}); })
            .find("plan.tpp: unknown key; did you mean 'tp'?") != std::string::npos);
  CHECK(input_error_of([] { load_scenario(kDefault, {"plan.tp"}); })
            .find("expected PATH=VALUE") != std::string::npos);
  CHECK(input_error_of([] { load_scenario(kDefault, {"name.x=1"}); }).find("'name' is not an object") !=
        std::string::npos);
  // Taken literally: a space at either end makes a string, refused by a number key alike.
  for (const char* padded : {"plan.tp= 8", "plan.tp=8 "}) {
    CAPTURE(padded);
    CHECK(input_error_of([padded] {
            load_scenario(kDefault, {padded});
          }).find("plan.tp: expected an integer, found a string") != std::string::npos);
  }
}

TEST_CASE("scenario: run settings without run.tokens are refused, not dropped") {
  // Until 2026-12-04 `--set run.trials=5` on a scenario without a run passed without a word,
  // where `--trials 5` was refused.
  const fs::path no_run = kSource / "scenarios/validation/korthikanti-22b-full.json";
  for (const char* key : {"trials", "seed"}) {
    CAPTURE(key);
    CHECK(input_error_of([&] {
            load_scenario(no_run, {std::string("run.") + key + "=5"});
          }).find(std::string("run.") + key + ": sets the run, but run.tokens is not set") !=
          std::string::npos);
    CHECK(load_scenario(no_run, {std::string("run.") + key + "=5", "run.tokens=1e9"}).run.tokens);
  }
  CHECK(input_error_of([&] {
          load_scenario(no_run, {"run.evaluation={\"interval_steps\": 10, \"iterations\": 1}"});
        }).find("run.evaluation: sets the run") != std::string::npos);
}

TEST_CASE("scenario: plan numbers that clash are named") {
  // Found with the model, once, by io::load_inputs.
  CHECK(input_error_of([] { megasim::io::load_inputs(load_scenario(kDefault, {"plan.global_batch=1000"})); })
            .find("global_batch 1000 is not divisible by dp × micro_batch = 192 × 1 = 192") !=
        std::string::npos);
  CHECK(input_error_of([] { load_scenario(kDefault, {"plan.dp=1000000"}); })
            .find("= 64000000 GPUs exceeds the 4194304 GPUs") != std::string::npos);
}

TEST_CASE("scenario: schema and loader know the same keys") {
  // The full scenario sets every optional object, so the loader asks about every key it knows.
  KeyLog loader_keys;
  load_scenario(fs::path(MEGASIM_TEST_DATA) / "full_scenario.json", {}, &loader_keys);
  KeyLog schema_keys;
  schema_paths(megasim::io::parse_json_file(kSource / "scenarios/schema.json"), "", schema_keys);
  std::string only_loader, only_schema;
  for (const auto& k : loader_keys) if (!schema_keys.count(k)) only_loader += " " + k;
  for (const auto& k : schema_keys) if (!loader_keys.count(k)) only_schema += " " + k;
  INFO("keys only the loader knows:", only_loader);
  INFO("keys only the schema knows:", only_schema);
  CHECK(only_loader.empty());
  CHECK(only_schema.empty());
}

TEST_CASE("scenario: every shipped scenario loads") {
  int count = 0;
  for (const auto& entry : fs::recursive_directory_iterator(kSource / "scenarios")) {
    if (entry.path().extension() != ".json" || entry.path().filename() == "schema.json") continue;
    INFO(entry.path().string());
    CHECK_NOTHROW(load_scenario(entry.path()));
    ++count;
  }
  CHECK(count >= 1);
}

TEST_CASE("system file: a bad sharded_data_parallel key names its path and the clash") {
  // System presets are read by name only (optimizations.preset), so the bad-input corpus
  // (cases.tsv, through `megasim simulate`) cannot reach these files; they are read here.
  const std::vector<std::pair<std::string, std::string>> cases = {
      // Persistence keeps single tensors gathered; one collective a layer has none to keep.
      {"system-persistence-per-layer.json",
       "sharded_data_parallel.param_persistence_threshold: keeps single tensors gathered, so it "
       "needs collective_per \"tensor\""},
      // A bucket groups single tensors' reduce-scatters; one collective a layer has none.
      {"system-reduce-bucket-per-layer.json",
       "sharded_data_parallel.reduce_bucket_elements: groups single tensors' reductions, so it "
       "needs collective_per \"tensor\""},
      // The measured gather time holds the per-rank work of the group it was measured on.
      {"system-gather-host-ranks-missing.json",
       "sharded_data_parallel.gather_host_ranks: is needed with host_per_rank and "
       "gather_host_us"},
      {"system-gather-host-below-per-rank.json",
       "sharded_data_parallel.gather_host_us: 50 us measured on 8 ranks is less than their "
       "per-rank host time (72 us = 8 x 9 us)"},
      {"system-host-per-rank-negative.json",
       "sharded_data_parallel.host_per_rank.memcpy_us: -1 is out of range"},
      // A scatter's copies beside its host loop need the DP line free: a blocking reduce.
      {"system-host-per-rank-without-blocking-reduce.json",
       "sharded_data_parallel.host_per_rank: prices a reduce-scatter's copies as running beside "
       "its host loop, which needs blocking_reduce true"},
      // The copies and divisions are the reduce buffer's: with no bucket there is none.
      {"system-contiguous-gradients-without-bucket.json",
       "sharded_data_parallel.contiguous_gradients: copies gradients into the reduce bucket, so "
       "it needs reduce_bucket_elements"},
      {"system-gather-host-ranks-alone.json",
       "sharded_data_parallel.gather_host_ranks: takes the per-rank part out of gather_host_us, "
       "so it needs host_per_rank"},
  };
  for (const auto& [file, fragment] : cases) {
    const std::string e = input_error_of(
        [&] { megasim::io::load_system_file(kSource / "tests/data/bad" / file); });
    INFO(file, ": ", e);
    CHECK(e.find(file + ": " + fragment) != std::string::npos);
  }
  CHECK_NOTHROW(megasim::io::load_system_file(kSource / "systems/deepspeed.json"));
}

TEST_CASE("system file: the pipeline engine's keys are read strictly, a typo named by its path") {
  const std::string e = input_error_of([] {
    megasim::io::load_system_file(kSource / "tests/data/bad/system-pipeline-engine-typo.json");
  });
  INFO(e);
  CHECK(e.find("system-pipeline-engine-typo.json: pipeline_engine.partitioned_transfer: unknown "
               "key; did you mean 'partitioned_transfers'?") != std::string::npos);
  const auto ds = megasim::io::load_system_file(kSource / "systems/deepspeed.json");
  CHECK(ds.pipe_engine.partitioned_transfers);
  CHECK(ds.pipe_engine.bf16_optimizer);
  const auto megatron = megasim::io::load_system_file(kSource / "systems/megatron-lm.json");
  CHECK(!megatron.pipe_engine.partitioned_transfers);
  CHECK(!megatron.pipe_engine.bf16_optimizer);
}

TEST_CASE("scenario: optimizations.bf16_optimizer chooses DeepSpeed's optimizer path for bf16") {
  const auto bloom = kSource / "scenarios/validation/bloom-176b-384.json";
  // ZeRO stage 0, as BLOOM ran: the preset's BF16_Optimizer.
  CHECK(megasim::io::load_inputs(load_scenario(bloom)).system.pipe_engine.bf16_optimizer);
  // ZeRO stage 1: DeepSpeed's ZeRO optimizer, as MT-NLG's bf16 ran.
  CHECK(!megasim::io::load_inputs(load_scenario(bloom, {"optimizations.bf16_optimizer=false"}))
             .system.pipe_engine.bf16_optimizer);
  const auto mtnlg = megasim::io::load_inputs(
      load_scenario(kSource / "scenarios/validation/mtnlg-530b-2240.json"));
  CHECK(mtnlg.scenario.plan.precision == megasim::workload::Precision::kBf16);
  CHECK(!mtnlg.system.pipe_engine.bf16_optimizer);
  CHECK(mtnlg.system.pipe_engine.partitioned_transfers);
}

TEST_CASE("scenario: optimizations.context_parallel_overlap overrides the preset's CP overlap") {
  const auto llama = kSource / "scenarios/validation/llama3-405b-8k-8192.json";
  CHECK(megasim::io::load_inputs(load_scenario(llama)).system.cp_overlap);  // megatron-core's
  CHECK(!megasim::io::load_inputs(
             load_scenario(llama, {"optimizations.context_parallel_overlap=false"}))
             .system.cp_overlap);
  const auto megascale = megasim::io::load_inputs(load_scenario(kDefault));
  CHECK(!megascale.system.cp_overlap);
}

TEST_CASE("scenario: a key repeated in a JSON object is refused, in a file or a --set value") {
  const std::string file = input_error_of(
      [] { megasim::io::parse_json_text(R"({"runs": [], "": 1, "": 2})", "runs.json"); });
  CHECK(file.find("runs.json: '': appears twice") != std::string::npos);
  const std::string set = input_error_of([] {
    load_scenario(kDefault, {R"(optimizations={"preset":"megascale","preset":"megatron-lm"})"});
  });
  CHECK(set.find("--set optimizations: 'preset' appears twice in the value") != std::string::npos);
}
