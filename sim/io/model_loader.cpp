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
  check_input_kind(doc, InputKind::kModel, origin);
  JsonReader r(doc, "", origin, log);
  r.string_or("$schema", "");  // a string when given, as the schemas say
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
  // Each key is in range alone; together they can pass what megasim counts in 64-bit integers
  // (parameters, bytes) or enumerates (gradient buckets). An upper bound, in floating point:
  // attention 4·h², a gated FFN 3·h·ffn, embedding and output 2·vocab·h.
  const double h = static_cast<double>(m.hidden);
  const double parameters = m.layers * (4.0 * h * h + 3.0 * h * static_cast<double>(m.ffn_hidden)) +
                            2.0 * static_cast<double>(m.vocab) * h;
  constexpr double kMaxParameters = 1e14;
  if (parameters > kMaxParameters) {
    r.fail("hidden",
           fmt::format("layers {}, hidden {}, ffn_hidden {} and vocab {} make a model of "
                       "about {:.3g} parameters, past the {:.0e} megasim models",
                       m.layers, m.hidden, m.ffn_hidden, m.vocab, parameters, kMaxParameters));
  }
  // One sequence's attention scores, seq² per head, counted in 64-bit integers.
  const double scores = static_cast<double>(m.seq) * static_cast<double>(m.seq) * m.heads;
  constexpr double kMaxScores = 1e17;
  if (scores > kMaxScores) {
    r.fail("seq", fmt::format("seq {} and heads {} make {:.3g} attention scores a sequence, past "
                              "the {:.0e} megasim counts",
                              m.seq, m.heads, scores, kMaxScores));
  }
  return m;
}

}  // namespace megasim::io
