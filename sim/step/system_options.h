// How the training system runs a plan: Megatron-LM's placement of communication or
// MegaScale's, and each optimisation of MegaScale's Table 3 (NSDI'24) as its own switch.
// Resolved from a scenario's `optimizations` section: a preset gives every switch a value and
// an explicit switch overrides it.
#pragma once

#include <cstdint>
#include <string>

namespace megasim::step {

struct SystemOptions {
  std::string preset = "megatron-lm";
  bool parallel_block = false;       // attention and MLP in parallel: one AG/RS per layer
  bool sliding_window = false;       // attention restricted to `attention_window` keys
  std::int64_t attention_window = 0; // tokens; used when sliding_window is on
  bool tp_overlap = false;           // forward TP collectives fused into adjacent GEMMs
  bool pp_overlap = false;           // PP send/recv on their own stream
  bool dp_overlap = false;           // per-chunk reduce-scatter, prefetched all-gather
  bool efficient_operators = false;  // fused (flash) attention instead of unfused BMM+softmax
  bool misc = false;                 // data pipeline: not modelled (no published cost)
  bool lamb = false;                 // LAMB optimizer step instead of Adam
};

// The switches of a preset ("megatron-lm": all off; "megascale": all on).
SystemOptions preset_options(const std::string& preset);

}  // namespace megasim::step
