// The work a scenario asks for, counted from its plan before any of it is done, and refused
// when it passes a limit: a plan in range key by key can still ask for billions of pipeline
// passes (a global batch of 10^9) or run-level events (10^16 tokens checkpointed every few
// seconds, or 10^5 Monte Carlo trials), which would run for hours and take gigabytes.
//
// A step's count is a lower bound on its events (one per pipeline pass), computed exactly from
// the inputs; a run's is an estimate (one per checkpoint and per expected failure of each
// trial, from the closed form of the failures, and the checkpoint sweep's intervals as far as
// that form says it goes on). The message names the keys that set the count, the count and
// the limit (--max-events).
//
// The memory a step takes is estimated from the same counts before the work, as an upper bound
// measured on this build (the constants below) and refused past --max-memory.
#pragma once

#include <cstdint>

#include "engine/units.h"
#include "io/inputs.h"
#include "run/step_profile.h"

namespace megasim::plan {

// The default bound is far past the shipped scenarios' work (the largest, --full at 12,288
// GPUs, needs 6·10^5 passes) and short of what would not end in minutes: the default scenario
// at global_batch 3,840,000 (1.9·10^6 passes) took 11 s and 183 MB on the shared network, and
// at 3.84·10^7 (1.9·10^7 passes) 115 s and 1.5 GiB; --network apart took 239 s at 1.9·10^6
// (one AMD EPYC core, 2026-12-05; "seconds and well under 2 GiB" until then).
constexpr std::int64_t kDefaultMaxEvents = 20'000'000;

// The default --max-memory: room for a run beside the desktop on a 24 GiB machine.
constexpr Bytes kDefaultMaxMemory = kGiB * 8.0;

// Peak RSS of `megasim simulate` (release build, GCC 12, glibc, x86-64; /usr/bin/time -v,
// 2026-12-01), against the passes of step_passes():
//   default scenario (12,288 GPUs), folded, 3,072 passes: 30 MB; --trace: 32 MB
//   the same --full, 589,824 passes: 74 MB; --full with global_batch 24,576, 2.36 M: 196 MB
//   530B production (PP 35) folded, 29,400 passes: 34 MB; --full, 1.26 M passes: 120 MB
//   530B with --trace: 251 MB; global_batch ×2: 482 MB; ×4 (117,600 passes): 957 MB
//   default with global_batch 98,304 (49,152 passes) and --trace: 413 MB
//   530B --html (the trace's records without its JSON document): 41 MB; --trials 2000: 34 MB
// So: 68-75 bytes per pass beyond the base under MegaScale's preset, 7.7-8.1 KB per traced
// pass (the trace JSON document), the trials nothing measurable. The other presets keep more
// a pass (Megatron-LM's blocking exchanges: a program step per pass and per exchange),
// measured 2026-12-05 between global_batch 200,000 and 800,000 (peak RSS, same build):
//   Korthikanti 22B (megatron-lm, TP 8, PP 1, mb 1): 270 B a pass; at TP 1 × PP 8 × VPP 6:
//   234 B (18.0 GB at 76.8 M passes); MegaScale's 256-GPU row, megatron-lm: 232 B, megascale:
//   85 B; BLOOM (deepspeed): 300 B. A reviewer found 96 B (the first figures rounded up) let
//   a run estimated at 1.8 GB take 4.5 GB (2026-12-05).
// Each constant is rounded up from those figures; the base and the per-GPU term cover the
// topology (inputs.cpp: 262,144 GPUs took 0.6 GB).
constexpr Bytes kBaseMemory = kMiB * 32.0;
constexpr Bytes kMemoryPerClusterGpu = kKiB * 3.0;
constexpr Bytes kMemoryPerPass{320.0};
// A pipeline stage's own costs, program and sends, whatever its passes: 1-layer stages of a
// tiny model took 7.8 KiB a stage at PP 8,192, 9.4 at 12,288 and 9.7 at 65,536 beyond the
// other terms (peak RSS, 2026-12-06; the estimate missed them, 264 MiB against 885 at 65,536).
constexpr Bytes kMemoryPerStage = kKiB * 12.0;
constexpr Bytes kMemoryPerTracedPass = kKiB * 10.0;

struct WorkLimits {
  std::int64_t max_events = kDefaultMaxEvents;
  Bytes max_memory = kDefaultMaxMemory;
};

// Pipeline passes of one step: simulated ranks (a stage each folded, every TP group with
// `full`) × micro-batches × virtual stages × passes per micro-batch and stage.
double step_passes(const io::Inputs& inputs, bool full);
// The same of a plan (search's candidates).
double plan_passes(const workload::ParallelPlan& p, bool full);
// Throws InputError, naming the scenario and its plan, when step_passes passes the limit.
void check_step_work(const io::Inputs& inputs, bool full, const WorkLimits& limits);
// The memory estimate of one step: kBaseMemory + the cluster's GPUs × kMemoryPerClusterGpu +
// plan.pp × kMemoryPerStage + step_passes × kMemoryPerPass + with `trace`, the traced passes (those
// of one replica, as in folded mode) × kMemoryPerTracedPass.
Bytes step_memory(const io::Inputs& inputs, bool full, bool trace);
// Throws InputError, naming the scenario, the keys, the estimate and the limit, when
// step_memory passes limits.max_memory.
void check_step_memory(const io::Inputs& inputs, bool full, bool trace, const WorkLimits& limits);
// Throws InputError, naming run.tokens or the trial count, when the run simulation's events
// (trials × (checkpoints + expected failures)) pass the limit.
void check_run_work(const io::Inputs& inputs, const run::StepProfile& step,
                    const WorkLimits& limits);

}  // namespace megasim::plan
