#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/error.h"
#include "run_command.h"
#include "test_models.h"

using namespace megasim;

namespace {

std::string load_error(const std::string& text) {
  const auto file = std::filesystem::temp_directory_path() /
                    ("megasim_model_" + std::to_string(::getpid()) + ".json");
  std::ofstream(file) << text;
  std::string err;
  try {
    io::load_model(file);
  } catch (const InputError& e) {
    err = e.what();
  }
  std::filesystem::remove(file);
  return err;
}

const char* kGood = R"({"name": "x", "source": "test", "layers": 2, "hidden": 64, "heads": 8,
  "kv_heads": 8, "ffn_hidden": 256, "activation": "gelu", "norm": "layernorm",
  "position": "learned", "attention_window": null, "vocab": 100, "seq": 16})";

}  // namespace

TEST_CASE("model loader: every shipped model loads with a source and its file's name") {
  int n = 0;
  for (const auto& e :
       std::filesystem::directory_iterator(std::string(MEGASIM_SOURCE_DIR) + "/models")) {
    if (e.path().filename() == "schema.json") continue;
    CAPTURE(e.path().string());
    const workload::ModelSpec m = io::load_model(e.path());
    CHECK(m.name == e.path().stem().string());
    CHECK_FALSE(m.source.empty());
    ++n;
  }
  CHECK(n == 24);
}

TEST_CASE("model loader: published parameter counts") {
  // GPT-3 175B: 12·l·h² + 13·l·h + (V + s)·h + 2h = 174.6e9 (Brown et al. report 175.0B).
  const auto gpt3 = io::load_model(std::string(MEGASIM_SOURCE_DIR) + "/models/gpt3-175b.json");
  CHECK(static_cast<double>(workload::total_parameters(gpt3)) ==
        doctest::Approx(174.6e9).epsilon(0.002));
  // Llama 3 405B: 405.8e9 with untied embeddings of 128256 (Llama 3 paper: "405B").
  const auto llama =
      io::load_model(std::string(MEGASIM_SOURCE_DIR) + "/models/llama3-405b-like.json");
  CHECK(static_cast<double>(workload::total_parameters(llama)) ==
        doctest::Approx(405.8e9).epsilon(0.002));
  // BLOOM: 176.2e9 (BigScience report: 176,247M).
  const auto bloom = io::load_model(std::string(MEGASIM_SOURCE_DIR) + "/models/bloom-176b.json");
  CHECK(static_cast<double>(workload::total_parameters(bloom)) ==
        doctest::Approx(176.25e9).epsilon(0.002));
}

TEST_CASE("model loader: strict keys and shape rules") {
  CHECK(load_error(kGood).empty());
  std::string missing = kGood;
  missing.replace(missing.find("\"hidden\""), 8, "\"hiden\"");
  CHECK(load_error(missing).find("hidden: missing required key") != std::string::npos);
  std::string typo = kGood;
  typo.replace(typo.find("\"seq\""), 5, "\"seq\": 16, \"tied_embedings\"");
  CHECK(load_error(typo).find("did you mean 'tied_embeddings'") != std::string::npos);
  std::string kv = kGood;
  kv.replace(kv.find("\"kv_heads\": 8"), 13, "\"kv_heads\": 3");
  CHECK(load_error(kv).find("kv_heads 3 must divide heads 8") != std::string::npos);
  std::string heads = kGood;
  heads.replace(heads.find("\"heads\": 8"), 10, "\"heads\": 7");
  CHECK(load_error(heads).find("hidden 64 is not divisible by heads 7") != std::string::npos);
  std::string act = kGood;
  act.replace(act.find("\"gelu\""), 6, "\"silu\"");
  CHECK(load_error(act).find("activation") != std::string::npos);
}

TEST_CASE("model loader: models/schema.json and the loader know the same keys") {
  io::KeyLog log;
  io::load_model(std::string(MEGASIM_SOURCE_DIR) + "/models/llama3-405b-like.json", &log);
  const auto schema = nlohmann::json::parse(
      test::read_all(std::string(MEGASIM_SOURCE_DIR) + "/models/schema.json"));
  std::set<std::string> keys;
  for (const auto& [k, v] : schema["properties"].items()) keys.insert(k);
  CHECK(keys == std::set<std::string>(log.begin(), log.end()));
}
