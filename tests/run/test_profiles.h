// Step profiles shared by the run tests. The step time of a large run is computed from the
// model's FLOPs at a stated MFU (the step simulator is not part of these tests).
#pragma once

#include <cmath>

#include "engine/units.h"
#include "run/power.h"
#include "run/run_simulation.h"
#include "run/step_profile.h"

namespace megasim::run::testing {

// MegaScale's 530B (105 layers, hidden 20480, seq 2048, vocab 64000) on `gpus` A100s with the
// global batch 6720 (MegaScale Table 2). Model FLOPs per token by megasim's MFU
// count 72·l·h²·(1 + s/(6h) + V/(12·l·h)) at 312 TFLOP/s per GPU and an assumed 50% MFU.
// Checkpoint: 530e9 parameters × 14 bytes (bf16 weights 2 + fp32 master 4 + Adam moments 8).
inline StepProfile megascale_530b(std::int64_t gpus, double global_batch = 6720.0) {
  const double l = 105, h = 20480, s = 2048, v = 64000;
  const double flops_per_token = 72.0 * l * h * h * (1.0 + s / (6.0 * h) + v / (12.0 * l * h));
  const double tokens = global_batch * s;
  const double mfu = 0.5;
  const double seconds = tokens * flops_per_token / (static_cast<double>(gpus) * 312e12 * mfu);
  StepProfile p = uniform_step(Time::from_seconds(seconds), tokens, gpus, 8, 0, Activity::kGemm);
  p.checkpoint_size = Bytes(530e9 * 14.0);
  return p;
}

// A run of `tokens` over `trials` Monte Carlo trials at the scenario's own checkpoint
// interval (no sweep of intervals).
inline RunSpec unswept_run(double tokens, int trials) {
  RunSpec spec;
  spec.tokens = tokens;
  spec.trials = trials;
  spec.sweep_checkpoint_interval = false;
  return spec;
}

// GPUs of 400 W under GEMMs, 60 W idle; no node overhead, no switches.
inline PowerInputs flat_power() {
  PowerInputs p;
  p.name = "flat";
  p.gpu = {Watts(400), Watts(300), Watts(150), Watts(60)};
  return p;
}

}  // namespace megasim::run::testing
