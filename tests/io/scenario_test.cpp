#include <doctest/doctest.h>

#include <filesystem>
#include <functional>
#include <string>

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

TEST_CASE("system file: a per-tensor key on a per-layer sharded preset names its path") {
  // param_persistence_threshold keeps single tensors gathered; with one collective a layer
  // there is none to keep, and the key would be ignored silently.
  const std::string e = input_error_of([] {
    megasim::io::load_system_file(kSource / "tests/data/bad/system-persistence-per-layer.json");
  });
  INFO(e);
  CHECK(e.find("system-persistence-per-layer.json: sharded_data_parallel."
               "param_persistence_threshold: keeps single tensors gathered, so it needs "
               "collective_per \"tensor\"") != std::string::npos);
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
