// A dense decoder-only transformer as the workload generator sees it: GPT-style (GeLU,
// LayerNorm, learned positions, biases) through Llama-style (GQA, SwiGLU, RMSNorm, rotary,
// untied embeddings). A plain value type loaded by io::load_model(); sizes are element
// counts, not bytes. `parallel_block` and `attention_window` are properties of the model but
// a scenario's optimisation switches may turn them on (MegaScale turns both on for its GPT
// runs) or off (step::apply_overrides, step::executed_model), so they are plain fields.
#pragma once

#include <cstdint>
#include <string>

namespace megasim::workload {

enum class Activation { kGelu, kSwiglu, kRelu };
enum class Norm { kLayerNorm, kRmsNorm };
enum class Position { kLearned, kRotary, kAlibi };

struct ModelSpec {
  std::string name;
  std::string source;
  int layers = 1;
  std::int64_t hidden = 1;
  int heads = 1;
  int kv_heads = 1;  // == heads for multi-head attention, fewer for GQA
  std::int64_t ffn_hidden = 4;
  Activation activation = Activation::kGelu;
  Norm norm = Norm::kLayerNorm;
  Position position = Position::kLearned;
  bool parallel_block = false;        // attention and MLP read the same norm output (PaLM)
  std::int64_t attention_window = 0;  // sliding window in tokens; 0 = full causal attention
  bool tied_embeddings = true;        // output projection shares the input embedding
  bool bias = true;                   // linear layers carry biases (GPT, BLOOM) or not (Llama)
  bool dropout = true;                // residual and attention dropout (GPT) or none (Llama)
  std::int64_t vocab = 1;
  std::int64_t seq = 1;

  std::int64_t head_dim() const { return hidden / heads; }
  std::int64_t q_dim() const { return static_cast<std::int64_t>(heads) * head_dim(); }
  std::int64_t kv_dim() const { return static_cast<std::int64_t>(kv_heads) * head_dim(); }
  // Keys each query is charged for under the MFU convention: the full sequence (non-causal
  // s², as the published formula counts it) or the window.
  std::int64_t attended_keys() const {
    return attention_window > 0 && attention_window < seq ? attention_window : seq;
  }
};

// Parameters of one transformer layer (weights, biases and norm gains).
std::int64_t layer_parameters(const ModelSpec& m);
// Input embedding (word + learned positions when present).
std::int64_t embedding_parameters(const ModelSpec& m);
// The output projection when it is not tied to the input embedding (0 when tied), plus the
// final norm.
std::int64_t head_parameters(const ModelSpec& m);
std::int64_t total_parameters(const ModelSpec& m);
// Norm parameters (gains and biases) of one norm over `hidden`.
std::int64_t norm_parameters(const ModelSpec& m);

const char* to_string(Activation a);
const char* to_string(Norm n);
const char* to_string(Position p);

}  // namespace megasim::workload
