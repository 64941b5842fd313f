#include "workload/parallel_plan.h"

#include <cstdint>
#include <numeric>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "engine/error.h"

namespace megasim::workload {

namespace {

// The message leads with the JSON path of the plan key at fault, as the loader's do.
[[noreturn]] void plan_error(const ModelSpec& m, std::string_view path, const std::string& what) {
  throw InputError(fmt::format("{}: {} (plan does not fit model '{}')", path, what, m.name));
}

// The sequence's split over context-parallel ranks and, with SP, over TP ranks.
void validate_sequence_split(const ModelSpec& m, const ParallelPlan& p) {
  // Megatron-Core's context parallelism splits each sequence into 2·cp chunks and gives rank i
  // chunks i and 2·cp − 1 − i, so every rank has the same share of the causal attention work
  // (Megatron-LM, megatron/training/utils.py, get_batch_on_this_cp_rank).
  if (p.cp > 1 && m.seq % (2 * p.cp) != 0) {
    plan_error(m, "plan.cp",
               fmt::format("cp {}: context parallelism splits seq {} into 2 × cp = {} "
                           "load-balanced chunks, which it does not divide into",
                           p.cp, m.seq, 2 * p.cp));
  }
  if (p.sequence_parallel && (m.seq / p.cp) % p.tp != 0) {
    plan_error(m, "plan.sequence_parallel",
               p.cp == 1
                   ? fmt::format("sequence parallelism splits seq {} over tp {}, which does not "
                                 "divide it",
                                 m.seq, p.tp)
                   : fmt::format("sequence parallelism splits seq {} over tp {} ({} token{} on "
                                 "each of cp {} context-parallel ranks), which does not divide "
                                 "them",
                                 m.seq, p.tp, m.seq / p.cp, m.seq / p.cp == 1 ? "" : "s", p.cp));
  }
}

// Layers into pp × vpp equal chunks, or the explicit per-virtual-stage split.
void validate_layer_split(const ModelSpec& m, const ParallelPlan& p) {
  if (p.layer_split.empty()) {
    if (m.layers % (p.pp * p.vpp) != 0) {
      // pp's key where pp alone does not divide the layers (plan.pp=7 on 96 layers at vpp 3
      // blamed plan.vpp, until 2026-12-06).
      // A split holds at most layers + 2 chunks (only the first and the last may be empty):
      // past that no split helps (it was offered at pp 99 on 96 layers, until 2026-12-06).
      const int chunks = p.pp * p.vpp;
      plan_error(m, p.vpp > 1 && m.layers % p.pp == 0 ? "plan.vpp" : "plan.pp",
                 fmt::format("layers {} do not divide into pp × vpp = {} × {} = {} equal "
                             "chunks ({})",
                             m.layers, p.pp, p.vpp, chunks,
                             chunks <= m.layers + 2
                                 ? std::string("give plan.layer_split for an uneven split")
                                 : fmt::format("nor into an uneven split, which gives every chunk "
                                               "but the first and the last a layer: at most {}",
                                               m.layers + 2)));
    }
  } else {
    // One entry per virtual stage, in model order: pp entries, or pp × vpp interleaved.
    if (static_cast<int>(p.layer_split.size()) != p.pp * p.vpp) {
      plan_error(
          m, "plan.layer_split",
          p.vpp == 1
              ? fmt::format("layer_split has {} entries but pp = {}", p.layer_split.size(), p.pp)
              : fmt::format("layer_split has {} entries but the interleaved schedule "
                            "has pp × vpp = {} × {} = {} virtual stages, one entry each "
                            "in model order",
                            p.layer_split.size(), p.pp, p.vpp, p.pp * p.vpp));
    }
    // In 64 bits: 65,536 entries of 65,536 and one of 96 summed to 96 in an int.
    const std::int64_t sum =
        std::accumulate(p.layer_split.begin(), p.layer_split.end(), std::int64_t{0});
    if (sum != m.layers) {
      plan_error(m, "plan.layer_split",
                 fmt::format("layer_split sums to {} layers but the model has {}", sum, m.layers));
    }
    for (std::size_t i = 0; i < p.layer_split.size(); ++i) {
      // The first virtual stage keeps the embedding and the last the output layer, so either
      // may hold no transformer layer; every other one needs at least one.
      const bool end = i == 0 || i + 1 == p.layer_split.size();
      if (p.layer_split[i] < (end ? 0 : 1)) {
        plan_error(m, fmt::format("plan.layer_split[{}]", i),
                   fmt::format("layer_split[{}] = {}: every virtual stage but the first and "
                               "the last needs at least one layer",
                               i, p.layer_split[i]));
      }
    }
  }
}

// TP splits heads, KV heads and the FFN; interleaving needs stages to interleave over.
void validate_tp_and_vpp(const ModelSpec& m, const ParallelPlan& p) {
  if (m.heads % p.tp != 0) {
    plan_error(m, "plan.tp", fmt::format("heads {} is not divisible by tp {}", m.heads, p.tp));
  }
  // KV heads are split over the TP ranks: Megatron-Core divides num_query_groups by the TP
  // size (megatron/core/transformer/attention.py, divide() asserts), as Megatron-DeepSpeed
  // does; replicated KV heads would need their gradients all-reduced over the ranks sharing
  // them, which no preset's framework runs.
  if (m.kv_heads % p.tp != 0) {
    plan_error(m, "plan.tp",
               fmt::format("kv_heads {} is not divisible by tp {} (each TP rank holds "
                           "kv_heads / tp KV heads, as Megatron-Core splits them)",
                           m.kv_heads, p.tp));
  }
  if (m.ffn_hidden % p.tp != 0) {
    plan_error(m, "plan.tp",
               fmt::format("ffn_hidden {} is not divisible by tp {}", m.ffn_hidden, p.tp));
  }
  if (p.vpp > 1 && p.pp == 1) {
    // Interleaving assigns a stage several model chunks; with one stage there is nothing to
    // interleave (Megatron-LM refuses it too). The search prunes the same plans.
    plan_error(
        m, "plan.vpp",
        fmt::format("vpp {} interleaves model chunks over pipeline stages, but pp = 1", p.vpp));
  }
}

// The global batch into micro-batches per replica, and the interleaved schedule's groups.
void validate_batch(const ModelSpec& m, const ParallelPlan& p) {
  const std::int64_t per_step = static_cast<std::int64_t>(p.dp) * p.micro_batch;
  if (p.global_batch % per_step != 0) {
    plan_error(m, "plan.global_batch",
               fmt::format("global_batch {} is not divisible by dp × micro_batch = {} × {} = {}",
                           p.global_batch, p.dp, p.micro_batch, per_step));
  }
  if (p.microbatch_group > 0 && p.vpp == 1) {
    plan_error(m, "plan.microbatch_group",
               fmt::format("microbatch_group {} orders the interleaved schedule's model "
                           "chunks, but vpp = 1",
                           p.microbatch_group));
  }
  if (p.microbatch_group > 0 && p.microbatch_group < p.pp &&
      p.microbatch_group != p.micro_batches()) {
    // Megatron's warm-up, (pp − stage − 1)·2 + (vpp − 1)·group chunk-forwards, is too short
    // for a group under pp: a stage would wait for a backward that waits for its own forward.
    plan_error(m, "plan.microbatch_group",
               fmt::format("microbatch_group {} is less than pp {}: the interleaved "
                           "schedule then deadlocks unless the group holds all {} "
                           "micro-batches per replica",
                           p.microbatch_group, p.pp, p.micro_batches()));
  }
  if (p.vpp > 1 && p.micro_batches() % p.group() != 0) {
    plan_error(m, p.microbatch_group > 0 ? "plan.microbatch_group" : "plan.global_batch",
               fmt::format("the interleaved schedule needs the micro-batches per replica, "
                           "global_batch / (dp × micro_batch) = {} / ({} × {}) = {}, to be a "
                           "multiple of {} {}",
                           p.global_batch, p.dp, p.micro_batch, p.micro_batches(),
                           p.microbatch_group > 0 ? "microbatch_group" : "pp", p.group()));
  }
}

}  // namespace

std::vector<PlanCount> plan_counts(const ParallelPlan& p) {
  return {{"tp", p.tp},
          {"cp", p.cp},
          {"pp", p.pp},
          {"vpp", p.vpp},
          {"dp", p.dp},
          {"micro_batch", p.micro_batch},
          {"global_batch", p.global_batch}};
}

void validate_plan(const ModelSpec& m, const ParallelPlan& p) {
  for (const auto& [key, value] : plan_counts(p)) {
    if (value < 1) {
      plan_error(m, fmt::format("plan.{}", key),
                 fmt::format("{} {} must be at least 1", key, value));
    }
  }
  // With every degree at least 1 the checks below stand apart: each names its first clash,
  // and all of them are given together, a line each.
  std::string clashes;
  for (auto* check :
       {validate_tp_and_vpp, validate_sequence_split, validate_layer_split, validate_batch}) {
    try {
      check(m, p);
    } catch (const InputError& e) {
      clashes += (clashes.empty() ? "" : "\n") + std::string(e.what());
    }
  }
  if (!clashes.empty()) throw InputError(clashes);
}

LayerRange chunk_layers(const ModelSpec& m, const ParallelPlan& p, int stage, int chunk) {
  if (!p.layer_split.empty()) {
    // Virtual stage chunk·pp + stage, in model order.
    const int v = chunk * p.pp + stage;
    const int first = std::accumulate(p.layer_split.begin(), p.layer_split.begin() + v, 0);
    return {first, p.layer_split[static_cast<std::size_t>(v)]};
  }
  const int per_chunk = m.layers / (p.pp * p.vpp);
  return {chunk * (m.layers / p.vpp) + stage * per_chunk, per_chunk};
}

int interleaved_warmup(int pp, int v, int group, int stage, std::int64_t m) {
  // In 64 bits: m · v passed 2³¹ at a global batch of 715,827,888 (inspect then held no
  // activations, until 2026-12-06); the warm-up itself is at most pp · v passes.
  const std::int64_t total = m * v;
  if (m == group && group <= pp) return static_cast<int>(total);
  return static_cast<int>(std::min<std::int64_t>(
      (pp - stage - 1) * 2 + static_cast<std::int64_t>(v - 1) * group, total));
}

int interleaved_chunk(int k, int group, int v, bool backward) {
  const int chunk = (k % (group * v)) / group;
  return backward ? v - 1 - chunk : chunk;
}

int stage_layers(const ModelSpec& m, const ParallelPlan& p, int stage) {
  int n = 0;
  for (int c = 0; c < p.vpp; ++c) n += chunk_layers(m, p, stage, c).count;
  return n;
}

const char* to_string(Recompute r) {
  switch (r) {
    case Recompute::kNone:
      return "none";
    case Recompute::kSelective:
      return "selective";
    case Recompute::kFull:
      return "full";
  }
  return "?";
}

const char* to_string(Optimizer o) {
  return o == Optimizer::kAdam ? "adam" : "lamb";
}

const char* to_string(Precision p) {
  return p == Precision::kBf16 ? "bf16" : "fp16";
}

const char* to_string(Schedule s) {
  switch (s) {
    case Schedule::kGpipe:
      return "gpipe";
    case Schedule::kOneFOneB:
      return "1f1b";
    case Schedule::kInterleaved:
      return "interleaved";
    case Schedule::kZeroBubble:
      return "zero-bubble";
  }
  return "?";
}

const char* to_string(RankOrder o) {
  return o == RankOrder::kTpCpPpDp ? "tp-cp-pp-dp" : "tp-cp-dp-pp";
}

}  // namespace megasim::workload
