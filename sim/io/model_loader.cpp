#include "io/model_loader.h"

#include <fmt/format.h>

#include "io/json_reader.h"

namespace megasim::io {

using workload::Activation;
using workload::ModelSpec;
using workload::Norm;
using workload::Position;

workload::ModelSpec load_model(const std::filesystem::path& file, KeyLog* log, FilesRead* read) {
  const Json doc = parse_json_file(file, read);
  const std::string origin = file.string();
  JsonReader r(doc, "", origin, log);
  r.ignore("$schema");
  ModelSpec m;
  m.name = r.string("name");
  m.source = r.text_or("source", "");
  if (m.source.empty()) r.fail("source", "every model names the source of its figures");
  r.text_or("notes", "");
  m.layers = static_cast<int>(r.integer("layers", 1, 1 << 16));
  m.hidden = r.integer("hidden", 1, std::int64_t{1} << 24);
  m.heads = static_cast<int>(r.integer("heads", 1, 1 << 16));
  m.kv_heads = static_cast<int>(r.integer_or("kv_heads", m.heads, 1, 1 << 16));
  m.ffn_hidden = r.integer("ffn_hidden", 1, std::int64_t{1} << 26);
  const std::string act = r.choice("activation", {"gelu", "swiglu", "relu"});
  m.activation = act == "swiglu" ? Activation::kSwiglu
                 : act == "relu" ? Activation::kRelu
                                 : Activation::kGelu;
  m.norm =
      r.choice("norm", {"layernorm", "rmsnorm"}) == "rmsnorm" ? Norm::kRmsNorm : Norm::kLayerNorm;
  const std::string pos = r.choice("position", {"learned", "rotary", "alibi"});
  m.position = pos == "rotary"  ? Position::kRotary
               : pos == "alibi" ? Position::kAlibi
                                : Position::kLearned;
  m.parallel_block = r.boolean_or("parallel_block", false);
  if (doc.contains("attention_window") && doc["attention_window"].is_null()) {
    r.ignore("attention_window");
  } else {
    m.attention_window = r.integer_or("attention_window", 0, 1, std::int64_t{1} << 30);
  }
  m.tied_embeddings = r.boolean_or("tied_embeddings", true);
  m.bias = r.boolean_or("bias", true);
  m.dropout = r.boolean_or("dropout", true);
  m.vocab = r.integer("vocab", 1, std::int64_t{1} << 24);
  m.seq = r.integer("seq", 1, std::int64_t{1} << 24);
  r.finish();

  if (m.hidden % m.heads != 0) {
    r.fail("heads", fmt::format("hidden {} is not divisible by heads {}", m.hidden, m.heads));
  }
  if (m.kv_heads > m.heads || m.heads % m.kv_heads != 0) {
    r.fail("kv_heads", fmt::format("kv_heads {} must divide heads {} (grouped-query attention)",
                                   m.kv_heads, m.heads));
  }
  return m;
}

}  // namespace megasim::io
