// How the training system runs a plan: Megatron-LM's placement of communication or
// MegaScale's, and each optimisation of MegaScale's Table 3 (NSDI'24) as its own switch.
// A preset (systems/NAME.json, loaded by io::load_system_preset) gives every switch and the
// system's own constants; a scenario's `optimizations` section overrides switches.
#pragma once

#include <cstdint>
#include <string>

#include "engine/time.h"

namespace megasim::step {

enum class AttentionKernel { kUnfused, kFlashV1, kFlashV2 };
const char* to_string(AttentionKernel k);

struct SystemOptions {
  std::string preset = "megatron-lm";
  bool parallel_block = false;       // attention and MLP in parallel: one AG/RS per layer
  bool sliding_window = false;       // attention restricted to `attention_window` keys
  std::int64_t attention_window = 0; // tokens; used when sliding_window is on
  bool tp_overlap = false;           // forward TP collectives fused into adjacent GEMMs
  bool pp_overlap = false;           // PP send/recv on their own stream
  bool dp_overlap = false;           // per-chunk reduce-scatter, prefetched all-gather
  bool efficient_operators = false;  // FlashAttention-2 (whatever `attention` says)
  bool misc = false;                 // asynchronous data pipeline (see StepRequest)
  bool lamb = false;                 // LAMB optimizer step instead of Adam
  AttentionKernel attention = AttentionKernel::kFlashV1;  // without efficient_operators
  // Without tp_overlap: whether the backward pass's TP collectives still overlap dgrad/wgrad
  // (Megatron-LM issues them asynchronously) or sit on the critical path.
  bool backward_tp_overlap = false;
  // Host-side cost of each blocking point-to-point exchange (Megatron-LM synchronises the
  // device after batch_isend_irecv), paid once per exchange when !pp_overlap.
  Time blocking_p2p_overhead;

  AttentionKernel attention_kernel() const {
    return efficient_operators ? AttentionKernel::kFlashV2 : attention;
  }
};

}  // namespace megasim::step
