// FLOP accounting in closed form, per token, for one model: what the MFU and HFU figures of
// papers count. Only matrix multiplications count (norms, activations and the optimizer are
// left out, as in every published MFU convention); a multiply-add is 2 FLOPs.
//
// Four counts, because published MFU and HFU figures count what a step computes in
// different ways:
//  * `model` is the MFU numerator: every GEMM of the model three times (forward, and twice that
//    backward), 72·l·h²·(1 + s/6h + V/12lh) for GPT (1.0774e12 for MegaScale 175B), as
//    Korthikanti et al. 2022, Megatron-Core's num_floating_point_operations and NeMo count it
//    (the logits 6·h·V: they are never recomputed). It charges attention the full non-causal
//    s², or s·window with a sliding window: MegaScale's published figures count its window so
//    (Table 2's 256-GPU row: 65.3 % MFU at 49.0k tokens/s is 1.064e12 a token, 32.0 s a step
//    1.061e12, against 1.0774e12 for the full count and 1.0629e12 for a window of 1,024; its
//    Megatron-LM row, no window, 1.077e12). Generalised here to GQA, SwiGLU and sliding
//    windows per layer; by test the sum of the model FLOPs of the ops the generator emits.
//    (Until 2026-12-03 megasim charged the logits 4.5·h·V, Narayanan et al.'s 4-pass
//    96·B·s·l·h²(1 + s/6h + V/16lh) scaled by 3/4 as a whole, which scales the never
//    recomputed logits too.)
//  * `hardware` adds what recomputation runs again (HFU numerator): a full forward of every
//    layer with full recompute, the attention core with selective recompute. Unfused attention
//    (`every_score`) runs its two batched GEMMs over all s² scores, a window applied as a mask:
//    its hardware count charges the core s keys a query, window or not (until 2026-12-06 it
//    charged the window's, 1.8 % under what MegaScale's 175B runs unfused with a window).
//  * `hardware_published` is the HFU numerator as Korthikanti et al. 2022 publish it: their
//    selective-recompute count 72·l·h²·(1 + s/3h + V/12lh) charges the recomputed attention
//    core three times its forward (the published HFU/MFU ratios of their four models, 1.053,
//    1.027, 1.018 and 1.012, follow from it); equal to `hardware` for the other modes. Their
//    MFU numerator, 72·l·h²·(1 + s/6h + V/12lh), is `model`.
//  * `useful` is what causal (and windowed) fused attention kernels actually compute: about
//    half the attention FLOPs of the convention. It is the sum of the kernels' own FLOPs
//    over a fused-attention program without recompute.
#pragma once

#include "engine/units.h"
#include "hw/kernel.h"
#include "workload/model_spec.h"
#include "workload/parallel_plan.h"

namespace megasim::workload {

// Forward FLOPs per token of one transformer layer, MFU convention (non-causal attention).
struct LayerFlops {
  Flops qkv, attention_core, attention_out, mlp;
  Flops total() const { return qkv + attention_core + attention_out + mlp; }
};
LayerFlops layer_forward_flops_per_token(const ModelSpec& m);
// Forward FLOPs per token of the logits GEMM (2·h·V).
Flops logits_forward_flops_per_token(const ModelSpec& m);

struct FlopsPerToken {
  Flops model;               // MFU numerator: sum over generated ops (fwd + bwd)
  Flops hardware;            // model + recomputation
  Flops hardware_published;  // Korthikanti et al.'s HFU convention
  Flops useful;              // causal/windowed kernels, no recompute
};

FlopsPerToken flops_per_token(const ModelSpec& m, Recompute recompute = Recompute::kNone,
                              bool every_score = false);
// The MFU numerator per token (FlopsPerToken::model).
Flops model_flops_per_token(const ModelSpec& m);
Flops hardware_flops_per_token(const ModelSpec& m, Recompute recompute, bool every_score = false);

// The peak MFU and HFU are taken against: the training dtype's (bf16 or fp16). An FP8 plan's
// too, as Megatron-Core and Transformer Engine report MFU against the 16-bit dense peak.
hw::DType mfu_peak_dtype(const ParallelPlan& p);

}  // namespace megasim::workload
