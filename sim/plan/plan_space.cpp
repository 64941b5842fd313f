#include "plan/plan_space.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "engine/error.h"
#include "plan/assembly.h"
#include "step/workload_assembly.h"
#include "workload/memory.h"

namespace megasim::plan {
namespace {

using workload::Recompute;

constexpr std::array<Recompute, 3> kRecomputes{Recompute::kNone, Recompute::kSelective,
                                               Recompute::kFull};
constexpr std::int64_t kMaxInt = std::numeric_limits<int>::max();

// An axis of the plan is an int (`most`): a larger value is refused, not wrapped
// (tp=4294967304 ran tp=8 until 2026-12-05).
std::int64_t parse_int(const std::string& what, const std::string& v,
                       std::int64_t most = std::numeric_limits<std::int64_t>::max()) {
  std::int64_t x = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (ec != std::errc() || end != v.data() + v.size() || x < 1) {
    throw InputError(fmt::format("{}: '{}' is not a positive integer", what, v));
  }
  if (x > most) {
    throw InputError(fmt::format("{}: {} is more than any plan takes ({} at most)", what, v, most));
  }
  return x;
}

bool parse_bool(const std::string& what, const std::string& v) {
  if (v == "true" || v == "1") return true;
  if (v == "false" || v == "0") return false;
  throw InputError(fmt::format("{}: '{}' is not true or false", what, v));
}

std::vector<int> divisors(int n) {
  std::vector<int> d;
  for (int i = 1; i <= n; ++i) {
    if (n % i == 0) d.push_back(i);
  }
  return d;
}

// The values each axis may take, after --fix / --vary; nullopt: the default domain.
struct Restrictions {
  std::optional<std::vector<int>> tp, pp, vpp, dp, mb;
  std::optional<std::vector<Recompute>> recompute;
  std::optional<std::vector<bool>> sp, dist_opt;
  std::vector<std::pair<std::size_t, std::vector<bool>>> switches;  // kSwitches index, values
};

// Two spellings of one value (4 and 04, true and 1) would put each plan in the space twice.
template <typename T>
void check_distinct(const std::optional<std::vector<T>>& values, const std::string& axis) {
  if (!values) return;
  std::vector<T> v = *values;
  std::sort(v.begin(), v.end());
  if (std::adjacent_find(v.begin(), v.end()) != v.end()) {
    throw InputError(fmt::format(
        "--fix/--vary {}: one value is listed twice (each plan would be ranked twice)", axis));
  }
}

Restrictions read_restrictions(const std::vector<Axis>& axes) {
  Restrictions r;
  std::set<std::string> seen;
  for (const Axis& a : axes) {
    std::string key = a.path;
    if (key.rfind("plan.", 0) == 0) key = key.substr(5);
    // The short names a plan's key prints (mb=, sp=, dist_opt=) name the same axes.
    if (key == "mb") key = "micro_batch";
    if (key == "sp") key = "sequence_parallel";
    if (key == "dist_opt") key = "distributed_optimizer";
    const std::string what = "--fix/--vary " + a.path;
    if (!seen.insert(key).second) {
      throw InputError(what + ": the axis is restricted twice; give it one --fix or one --vary");
    }
    // The scenario's own bounds (io/scenario.cpp): vpp=2147483646 ran out of memory.
    auto ints = [&](std::int64_t most = kMaxInt) {
      std::vector<int> v;
      for (const auto& s : a.values) v.push_back(static_cast<int>(parse_int(what, s, most)));
      return v;
    };
    auto bools = [&] {
      std::vector<bool> v;
      for (const auto& s : a.values) v.push_back(parse_bool(what, s));
      return v;
    };
    if (key == "tp")
      r.tp = ints(4096);
    else if (key == "pp")
      r.pp = ints(65536);
    else if (key == "vpp")
      r.vpp = ints(1024);
    else if (key == "dp")
      r.dp = ints(1 << 20);
    else if (key == "micro_batch")
      r.mb = ints(1 << 16);
    else if (key == "sequence_parallel")
      r.sp = bools();
    else if (key == "distributed_optimizer")
      r.dist_opt = bools();
    else if (key == "recompute") {
      std::vector<Recompute> v;
      for (const auto& s : a.values) {
        const auto it = std::find_if(kRecomputes.begin(), kRecomputes.end(),
                                     [&](Recompute x) { return s == workload::to_string(x); });
        if (it == kRecomputes.end()) {
          throw InputError(fmt::format("{}: '{}' is not none, selective or full", what, s));
        }
        v.push_back(*it);
      }
      r.recompute = v;
    } else if (key.rfind("optimizations.", 0) == 0) {
      const std::string name = key.substr(14);
      const auto it = std::find_if(step::kSwitches.begin(), step::kSwitches.end(),
                                   [&](const step::Switch& s) { return name == s.key; });
      if (it == step::kSwitches.end()) {
        throw InputError(fmt::format("{}: '{}' is not a system switch", what, name));
      }
      r.switches.emplace_back(static_cast<std::size_t>(it - step::kSwitches.begin()), bools());
    } else {
      throw InputError(fmt::format(
          "{}: search varies tp, pp, vpp, dp, micro_batch (mb), recompute, sequence_parallel "
          "(sp), distributed_optimizer (dist_opt) and optimizations.SWITCH, not '{}'",
          what, a.path));
    }
  }
  check_distinct(r.tp, "tp");
  check_distinct(r.pp, "pp");
  check_distinct(r.vpp, "vpp");
  check_distinct(r.dp, "dp");
  check_distinct(r.mb, "micro_batch");
  check_distinct(r.sp, "sequence_parallel");
  check_distinct(r.dist_opt, "distributed_optimizer");
  check_distinct(r.recompute, "recompute");
  for (const auto& [index, values] : r.switches) {
    check_distinct(std::optional(values),
                   std::string("optimizations.") + step::kSwitches[index].key);
  }
  return r;
}

template <typename T>
bool allowed(const std::optional<std::vector<T>>& set, T v) {
  return !set || std::find(set->begin(), set->end(), v) != set->end();
}

// Every system the switches' values give, the scenario's first.
std::vector<step::SystemOptions> systems(const step::SystemOptions& base, const Restrictions& r) {
  std::vector<step::SystemOptions> out{base};
  for (const auto& [index, values] : r.switches) {
    std::vector<step::SystemOptions> next;
    for (const auto& s : out) {
      for (const bool v : values) {
        step::SystemOptions x = s;
        x.*step::kSwitches[index].field = v;
        // As simulate refuses it: a window switched on needs its size (the plans were labelled
        // with it and ran without it).
        if (x.sliding_window && x.attention_window <= 0) {
          throw InputError(fmt::format(
              "--fix/--vary optimizations.{}: switches the sliding window on, but neither "
              "optimizations.attention_window nor the model gives a window size",
              step::kSwitches[index].key));
        }
        next.push_back(x);
      }
    }
    out = std::move(next);
  }
  return out;
}

}  // namespace

std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 14695981039346656037ull;
  for (const unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string canonical_key(const workload::ParallelPlan& p, const step::SystemOptions& system,
                          const step::SystemOptions& base) {
  std::string k =
      fmt::format("gpus={} tp={} pp={} vpp={} dp={} mb={} recompute={} sp={} dist_opt={}", p.gpus(),
                  p.tp, p.pp, p.vpp, p.dp, p.micro_batch, workload::to_string(p.recompute),
                  p.sequence_parallel ? 1 : 0, p.distributed_optimizer ? 1 : 0);
  // The space runs Megatron's group of pp; a plan with another group is a different plan.
  if (p.microbatch_group > 0 && p.microbatch_group != p.pp) k += fmt::format(" group={}", p.microbatch_group);
  for (const auto& s : step::kSwitches) {
    if (system.*s.field != base.*s.field)
      k += fmt::format(" {}={}", s.key, system.*s.field ? 1 : 0);
  }
  return k;
}

std::vector<std::int64_t> parse_gpus(const std::string& spec) {
  std::vector<std::int64_t> out;
  std::size_t start = 0;
  for (;;) {
    const auto comma = spec.find(',', start);
    const std::string item = spec.substr(start, comma == std::string::npos ? comma : comma - start);
    const auto c1 = item.find(':');
    if (c1 == std::string::npos) {
      out.push_back(parse_int("--gpus", item));
    } else {
      const auto c2 = item.find(':', c1 + 1);
      if (c2 == std::string::npos) {
        throw InputError("--gpus " + spec + ": a range is FIRST:LAST:STEP, e.g. 4096:12288:4096");
      }
      const std::int64_t first = parse_int("--gpus", item.substr(0, c1));
      const std::int64_t last = parse_int("--gpus", item.substr(c1 + 1, c2 - c1 - 1));
      const std::int64_t step = parse_int("--gpus", item.substr(c2 + 1));
      if (last < first) throw InputError("--gpus " + spec + ": the range ends before it starts");
      if ((last - first) / step >= 4096)
        throw InputError("--gpus " + spec + ": at most 4096 counts");
      // Counted, not stepped past `last`: g + step may overflow near INT64_MAX.
      const std::int64_t counts = (last - first) / step + 1;
      for (std::int64_t i = 0; i < counts; ++i) out.push_back(first + i * step);
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  std::sort(out.begin(), out.end());
  // Refused as two --gpus options naming one count are (dropped without a word until
  // 2026-12-06).
  const auto twice = std::adjacent_find(out.begin(), out.end());
  if (twice != out.end()) {
    throw InputError("--gpus " + spec + ": " + std::to_string(*twice) + " GPUs given twice");
  }
  return out;
}

namespace {

// Walks the axes in their fixed order, pruning and collecting into `space`.
class Walker {
 public:
  Walker(const io::Inputs& in, const Restrictions& r, Space& space)
      : in_(in), r_(r), space_(space), allowance_(memory_allowance(in)) {
    mbs_ = r.mb.value_or(std::vector<int>(kSpaceMicroBatches.begin(), kSpaceMicroBatches.end()));
    rcs_ = r.recompute.value_or(std::vector<Recompute>(kRecomputes.begin(), kRecomputes.end()));
    dist_ = r.dist_opt.value_or(std::vector<bool>{false, true});
  }

  // Every plan of `tp` × `pp` on `gpus` GPUs under `system`.
  void walk(std::int64_t gpus, const step::SystemOptions& system, int tp, int pp) {
    const workload::ModelSpec& model = in_.model;
    // Sequence parallelism needs TP: at tp 1 only sp=0 exists (--fix sp=1 leaves no plan).
    std::vector<bool> sps = r_.sp.value_or(std::vector<bool>{false, true});
    if (tp == 1) {
      const bool off = std::find(sps.begin(), sps.end(), false) != sps.end();
      sps = off ? std::vector<bool>{false} : std::vector<bool>{};
    }
    std::vector<int> vpps{1};
    if (r_.vpp) {
      vpps = *r_.vpp;
    } else if (model.layers % pp == 0 && pp > 1) {
      vpps = divisors(model.layers / pp);
    }
    // DeepSpeed's pipeline engine runs 1F1B only: interleaved plans are not in its space.
    if (system.pipe_engine.present && pp > 1) {
      const bool one = std::find(vpps.begin(), vpps.end(), 1) != vpps.end();
      vpps = one ? std::vector<int>{1} : std::vector<int>{};
    }
    const bool divides = gpus % (static_cast<std::int64_t>(tp) * pp) == 0;
    const bool fits = gpus <= in_.cluster.gpus && divides;
    const int dp = divides ? static_cast<int>(gpus / (static_cast<std::int64_t>(tp) * pp)) : 0;
    // With dp fixed, a tp × pp that does not divide the GPU count makes no plan of that dp:
    // outside the space asked for, not pruned (reported as pruned by cluster size until
    // 2026-12-06).
    if (r_.dp && !divides) return;
    dists_ = distributed_optimizers(dp, system);
    const auto inner = static_cast<std::int64_t>(vpps.size() * mbs_.size() * rcs_.size() *
                                                 sps.size() * dists_.size());
    space_.size += inner;
    // Whole sub-spaces first: the GPU count, then the model's heads.
    if (!allowed(r_.dp, dp)) {
      space_.size -= inner;  // not in the space the user asked for
      return;
    }
    if (!fits) {
      prune(Prune::kClusterSize, inner);
      return;
    }
    if (model.heads % tp != 0 || model.kv_heads % tp != 0 || model.ffn_hidden % tp != 0) {
      prune(Prune::kHeads, inner);
      return;
    }
    // Every plan keeps the scenario's rank order (not an axis of the search).
    workload::ParallelPlan p = in_.scenario.plan;
    to_normal_form(p);
    p.tp = tp;
    p.pp = pp;
    p.dp = dp;
    // Each candidate runs the optimizer its own system runs (varying optimizations.lamb off
    // gives the scenario's own optimizer back), and its ZeRO stage's gradient dtype.
    p.optimizer = step::system_optimizer(in_.written_optimizer, system);
    if (!in_.scenario.fp32_gradients_written)
      p.fp32_gradients = step::fp32_gradients_by_rule(system, p);
    for (const int vpp : vpps) {
      p.vpp = vpp;
      p.schedule = space_schedule(vpp);
      for (const int mb : mbs_) {
        p.micro_batch = mb;
        for (const Recompute rc : rcs_) {
          p.recompute = rc;
          for (const bool sp : sps) {
            p.sequence_parallel = sp && tp > 1;
            for (const bool dopt : dists_) {
              p.distributed_optimizer = dopt;
              add(p, system);
            }
          }
        }
      }
    }
  }

 private:
  void prune(Prune why, std::int64_t n = 1) { space_.pruned[static_cast<std::size_t>(why)] += n; }

  // The distributed optimizer's values at `dp` replicas: only dist_opt=0 at one (it shards
  // nothing), only dist_opt=1 under DeepSpeed's BF16_Optimizer (which shards always, decided
  // on the space's normal form: a scenario's ZeRO-2 left dist_opt=0 in until 2026-12-06).
  std::vector<bool> distributed_optimizers(int dp, const step::SystemOptions& system) const {
    const auto only = [this](bool v) {
      const bool held = std::find(dist_.begin(), dist_.end(), v) != dist_.end();
      return held ? std::vector<bool>{v} : std::vector<bool>{};
    };
    if (dp == 1) return only(false);
    workload::ParallelPlan normal = in_.scenario.plan;
    to_normal_form(normal);
    if (workload::bf16_optimizer_applies(system.pipe_engine.bf16_optimizer, normal))
      return only(true);
    return dist_;
  }

  // One plan: pruned, or a candidate with its peak memory.
  void add(const workload::ParallelPlan& p, const step::SystemOptions& system) {
    const workload::ModelSpec& model = in_.model;
    // Interleaving on two stages with blocking exchanges is refused too (io/inputs.cpp).
    if ((p.vpp > 1 && p.pp == 1) || (p.vpp > 1 && p.pp == 2 && !system.pp_overlap) ||
        model.layers % (p.pp * p.vpp) != 0 ||
        p.global_batch % (static_cast<std::int64_t>(p.dp) * p.micro_batch) != 0 ||
        (p.vpp > 1 && p.micro_batches() % p.pp != 0) ||
        (p.sequence_parallel && model.seq % p.tp != 0)) {
      prune(Prune::kDivisibility);
      return;
    }
    workload::validate_plan(model, p);  // the same rules, once more: a guard
    const workload::ModelSpec executed = step::executed_model(model, system);
    const workload::MemoryOptions memory = step::memory_options(system);
    // The first stage holds the most micro-batches in flight and the embedding, the last the
    // logits, every other fewer: one of the two is the peak. Pruned as simulate refuses: on
    // what must fit, without the fragmentation margin.
    const workload::MemoryEstimate first = workload::estimate_memory(executed, p, 0, memory);
    Bytes peak = first.total(), need = first.required();
    if (p.pp > 1) {
      const auto last = workload::estimate_memory(executed, p, p.pp - 1, memory);
      peak = std::max(peak, last.total());
      need = std::max(need, last.required());
    }
    // As simulate runs it: over the device by no more than validation.allow_oom's allowance.
    if (need > in_.device.memory + allowance_) {
      prune(Prune::kMemory);
      return;
    }
    Candidate c;
    c.plan = p;
    c.system = system;
    c.key = canonical_key(p, system, in_.system);
    c.hash = fnv1a(c.key);
    c.peak_memory = peak;
    c.required_memory = need;
    c.device_memory = in_.device.memory;
    space_.feasible.push_back(std::move(c));
  }

  const io::Inputs& in_;
  const Restrictions& r_;
  Space& space_;
  std::vector<int> mbs_;
  std::vector<Recompute> rcs_;
  std::vector<bool> dist_, dists_;
  Bytes allowance_;
};

}  // namespace

workload::Schedule space_schedule(int vpp) {
  return vpp > 1 ? workload::Schedule::kInterleaved : workload::Schedule::kOneFOneB;
}

void check_restrictions(const std::vector<Axis>& restrict) {
  (void)read_restrictions(restrict);
}

void check_space(const io::Inputs& in, const SpaceOptions& o) {
  const Restrictions r = read_restrictions(o.restrict);
  (void)systems(in.system, r);
  // Whole servers (net::Topology::spread_placement), else every plan is refused at event level.
  if (in.scenario.placement == "spread") {
    for (const std::int64_t g : o.gpus) {
      if (g % in.cluster.node.gpus != 0) {
        throw InputError(fmt::format(
            "--gpus {}: the scenario's placement 'spread' takes whole servers of {} GPUs", g,
            in.cluster.node.gpus));
      }
    }
  }
}

Space enumerate_space(const io::Inputs& in, const SpaceOptions& o) {
  const Restrictions r = read_restrictions(o.restrict);
  const std::vector<std::int64_t> gpu_counts =
      o.gpus.empty() ? std::vector<std::int64_t>{in.scenario.plan.gpus()} : o.gpus;
  std::vector<int> tps = r.tp.value_or(std::vector<int>{});
  if (!r.tp) {
    for (int t = 1; t <= in.cluster.node.gpus; ++t) tps.push_back(t);
  }
  // A framework without pipelines (fsdp's) at PP 1 unless asked (every PP until 2026-12-07).
  const std::vector<int> pps = r.pp.value_or(
      in.system.not_in_framework.pp ? std::vector<int>{1} : divisors(in.model.layers));
  Space space;
  Walker walker(in, r, space);
  for (const std::int64_t gpus : gpu_counts) {
    for (const step::SystemOptions& system : systems(in.system, r)) {
      for (const int tp : tps) {
        for (const int pp : pps) walker.walk(gpus, system, tp, pp);
      }
    }
  }
  return space;
}

}  // namespace megasim::plan
