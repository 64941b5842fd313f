// The space `megasim search` walks: every plan of a model on a GPU count, enumerated in one
// deterministic order, and pruned before anything is priced, each pruned plan counted under
// the reason it cannot run.
//
// Axes (each restricted by --fix / --vary): the GPU count; the system switches the user varies
// (none by default: the scenario's system is what the cluster runs); tp in 1..GPUs per node;
// pp over the divisors of the layer count (1 alone under a preset whose framework runs no
// pipeline, fsdp's) and vpp over the divisors of layers / pp (vpp > 1
// only with pp > 1: the interleaved schedule); dp = GPUs / (tp × pp); micro-batch 1, 2, 4, 8;
// recompute none / selective / full; sequence parallelism (tp > 1); the distributed optimizer
// (ZeRO-1) on or off. Context parallelism and ZeRO-3 are not enumerated: the plan has no
// context-parallel axis yet, and ZeRO-3's per-layer gathers are not in the analytic estimate.
//
// Pruning reasons: cluster size (more GPUs than the cluster, or tp × pp not dividing the GPU
// count), heads (tp against heads, KV heads and the FFN width), divisibility (batch, the
// interleaved schedule's micro-batches, sequence parallelism's sequence split, an explicit
// pp not dividing the layers) and memory (workload::estimate_memory, the one memory model,
// over the device's capacity). A plan that survives also passes workload::validate_plan.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/units.h"
#include "io/inputs.h"
#include "plan/compare.h"
#include "step/system_options.h"
#include "workload/parallel_plan.h"

namespace megasim::plan {

enum class Prune { kClusterSize, kHeads, kDivisibility, kMemory };
inline constexpr std::array<const char*, 4> kPruneNames{"cluster size", "heads", "divisibility",
                                                        "memory"};

// One plan of the space with the system it runs under.
struct Candidate {
  workload::ParallelPlan plan;
  step::SystemOptions system;
  std::string key;         // canonical text, "gpus=256 tp=8 pp=8 vpp=1 dp=4 mb=1 ..."
  std::uint64_t hash = 0;  // FNV-1a 64 of key: the results file's key and the tie-break
  Bytes peak_memory;       // per GPU, the largest stage's (memory model)
  Bytes required_memory;   // the same without the fragmentation margin: what must fit
  Bytes device_memory;
  double headroom_gib() const { return (device_memory - peak_memory).value() / kGiB.value(); }
  // Over the device even without the margin: kept only by validation.allow_oom's allowance
  // (a published run over megasim's memory model), as simulate runs it.
  bool over() const { return required_memory > device_memory; }
  // Kept, so its tensors and reserve fit; over the device only with the fragmentation margin
  // that peak_memory includes (workload::Fit::kTight).
  bool tight() const { return peak_memory > device_memory && !over(); }
};

struct Space {
  std::int64_t size = 0;  // every combination of the axes' values
  std::array<std::int64_t, kPruneNames.size()> pruned{};
  std::vector<Candidate> feasible;  // in enumeration order
};

struct SpaceOptions {
  std::vector<std::int64_t> gpus;  // empty: the scenario's plan's (tp × pp × dp)
  // --fix KEY=V and --vary KEY=V1,V2: the values an axis may take. Keys: tp, pp, vpp, dp,
  // micro_batch, recompute, sequence_parallel, distributed_optimizer (with or without
  // "plan."), and optimizations.SWITCH for any step::kSwitches switch (true / false).
  std::vector<Axis> restrict;
};

// "8", "8,16", "256:1024:256" (first:last:step), or a comma list of those; InputError else.
std::vector<std::int64_t> parse_gpus(const std::string& spec);

// Enumerates and prunes the space of `inputs`' model on its cluster. InputError for an
// unknown key or an unreadable value in options.restrict.
Space enumerate_space(const io::Inputs& inputs, const SpaceOptions& options);
// The same InputError, without enumerating: every check enumerate_space makes of its options.
void check_restrictions(const std::vector<Axis>& restrict);
// check_restrictions, and what the options ask of the scenario: a switch the system cannot take
// (a sliding window without a size), GPU counts a spread placement cannot place. Before any
// work and on every rank alike (search's check_search_options).
void check_space(const io::Inputs& inputs, const SpaceOptions& options);

// The space's normal form, the one description of what every plan it builds has whatever the
// scenario wrote: the layers split evenly, 1F1B or, with vpp > 1, the interleaved schedule with
// Megatron's micro-batch group of pp, no context parallelism, no ZeRO-2/3.
workload::Schedule space_schedule(int vpp);
void to_normal_form(workload::ParallelPlan& p);

// The plan as the space writes it: no distributed optimizer at dp 1, no SP at tp 1 (each the
// same plan as without), so a written plan and the space's match.
workload::ParallelPlan space_alike(workload::ParallelPlan p);

// Why the scenario's own plan is not in the normal form above, or "" when it is. A plan outside
// is never marked as the scenario's: a space plan with its key would be another plan.
std::string outside_space(const workload::ParallelPlan& p, int layers);

// The micro-batch sizes the space holds unless --fix/--vary says others.
inline constexpr std::array<int, 4> kSpaceMicroBatches{1, 2, 4, 8};

// Why a plan in the space's form (outside_space "") is still none of the plans searched: its
// GPU count not among `gpus`, a value --fix/--vary leaves out, or one outside an axis's own
// domain (a micro-batch of 16, tp past a node); "" when none of these (a search said nothing
// of it until 2026-12-06).
std::string not_searched(const io::Inputs& in, const SpaceOptions& o,
                         const std::vector<std::int64_t>& gpus);

// The canonical key of a plan under a system (the switches that differ from `base` named).
std::string canonical_key(const workload::ParallelPlan& p, const step::SystemOptions& system,
                          const step::SystemOptions& base);
std::uint64_t fnv1a(const std::string& s);

}  // namespace megasim::plan
