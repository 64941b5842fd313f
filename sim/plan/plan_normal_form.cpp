// A plan's normal form in `search`'s space and what keeps a written plan out of it
// (plan_space.h).
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "plan/plan_space.h"

namespace megasim::plan {

void to_normal_form(workload::ParallelPlan& p) {
  p.layer_split.clear();
  p.schedule = space_schedule(p.vpp);
  p.microbatch_group = 0;
  p.cp = 1;
  p.zero2 = false;
  p.zero3 = false;
}

workload::ParallelPlan space_alike(workload::ParallelPlan p) {
  if (p.dp == 1) p.distributed_optimizer = false;
  if (p.tp == 1) p.sequence_parallel = false;
  return p;
}

std::string outside_space(const workload::ParallelPlan& p, int layers) {
  workload::ParallelPlan normal = p;
  to_normal_form(normal);
  std::vector<std::string> why;
  // An even split written out, and Megatron's group of pp written out, are the space's own.
  const int stages = p.pp * p.vpp;
  const bool even =
      layers % stages == 0 && std::all_of(p.layer_split.begin(), p.layer_split.end(),
                                          [&](int n) { return n == layers / stages; });
  if (p.layer_split != normal.layer_split && !even) why.emplace_back("its uneven layer_split");
  if (p.schedule != normal.schedule)
    why.push_back(fmt::format("its {} schedule", workload::to_string(p.schedule)));
  if (p.microbatch_group != normal.microbatch_group && p.microbatch_group != p.pp) {
    why.push_back(fmt::format("its microbatch_group {} (the space's is pp)", p.microbatch_group));
  }
  if (p.cp != normal.cp) why.emplace_back("context parallelism");
  if (p.zero2 != normal.zero2) why.emplace_back("ZeRO-2");
  if (p.zero3 != normal.zero3) why.emplace_back("ZeRO-3");
  std::string out;
  for (const auto& w : why) out += (out.empty() ? "" : ", ") + w;
  return out;
}

namespace {

// An axis's key as the space reads it: "plan." dropped, the short names a plan's key prints
// (mb, sp, dist_opt) taken for the axes they name.
std::string axis_key(std::string key) {
  if (key.rfind("plan.", 0) == 0) key = key.substr(5);
  if (key == "mb") return "micro_batch";
  if (key == "sp") return "sequence_parallel";
  if (key == "dist_opt") return "distributed_optimizer";
  return key;
}

bool is_flag(const std::string& key) {
  return key == "sequence_parallel" || key == "distributed_optimizer" ||
         key.rfind("optimizations.", 0) == 0;
}

// A value as the space reads it: a number without its spelling (08 is 8), a flag as true or
// false (1, 0); the values were read by the space's own checks before.
std::string axis_value(const std::string& key, const std::string& v) {
  if (is_flag(key)) return v == "true" || v == "1" ? "true" : "false";
  if (key == "recompute") return v;
  std::int64_t x = 0;
  std::from_chars(v.data(), v.data() + v.size(), x);
  return std::to_string(x);
}

// The plan's value of an axis (`key` as axis_key gives it), in the form of the space's plans
// (space_alike); nullopt for a key the plan does not hold.
std::optional<std::string> plan_value(const io::Inputs& in, const std::string& key) {
  const workload::ParallelPlan p = space_alike(in.scenario.plan);
  const auto flag = [](bool v) { return std::string(v ? "true" : "false"); };
  if (key == "tp") return std::to_string(p.tp);
  if (key == "pp") return std::to_string(p.pp);
  if (key == "vpp") return std::to_string(p.vpp);
  if (key == "dp") return std::to_string(p.dp);
  if (key == "micro_batch") return std::to_string(p.micro_batch);
  if (key == "recompute") return std::string(workload::to_string(p.recompute));
  if (key == "sequence_parallel") return flag(p.sequence_parallel);
  if (key == "distributed_optimizer") return flag(p.distributed_optimizer);
  for (const step::Switch& s : step::kSwitches) {
    if (key == std::string("optimizations.") + s.key) return flag(in.system.*s.field);
  }
  return std::nullopt;
}

}  // namespace

std::string not_searched(const io::Inputs& in, const SpaceOptions& o,
                         const std::vector<std::int64_t>& gpus) {
  const workload::ParallelPlan& p = in.scenario.plan;
  if (std::find(gpus.begin(), gpus.end(), p.gpus()) == gpus.end())
    return fmt::format("its {} GPUs are not among the counts --gpus names", p.gpus());
  std::vector<std::string> restricted;
  for (const Axis& a : o.restrict) {
    const std::string key = axis_key(a.path);
    restricted.push_back(key);
    const auto mine = plan_value(in, key);
    if (!mine) continue;
    const bool kept = std::any_of(a.values.begin(), a.values.end(), [&](const std::string& v) {
      return axis_value(key, v) == *mine;
    });
    if (kept) continue;
    // At dp 1 (tp 1) the space writes the plan without the distributed optimizer (SP).
    const char* alike = key == "distributed_optimizer" && p.dp == 1 ? " (at dp 1, as without it)"
                        : key == "sequence_parallel" && p.tp == 1   ? " (at tp 1, as without it)"
                                                                    : "";
    return fmt::format("--fix/--vary {} leaves out its {}{}", a.path, *mine, alike);
  }
  const auto free = [&](const char* key) {
    return std::find(restricted.begin(), restricted.end(), key) == restricted.end();
  };
  if (free("micro_batch") && std::find(kSpaceMicroBatches.begin(), kSpaceMicroBatches.end(),
                                       p.micro_batch) == kSpaceMicroBatches.end()) {
    return fmt::format(
        "its micro_batch {}: the space's are 1, 2, 4 and 8; --vary mb=1,2,4,8,{} "
        "adds it",
        p.micro_batch, p.micro_batch);
  }
  if (free("pp") && p.pp > 1 && in.system.not_in_framework.pp) {
    return fmt::format(
        "its pp {}: the preset's framework runs no pipeline, so the space keeps pp 1; --vary "
        "pp=1,{} adds it",
        p.pp, p.pp);
  }
  if (free("tp") && p.tp > in.cluster.node.gpus)
    return fmt::format("its tp {}: the space's reach a node's {} GPUs", p.tp, in.cluster.node.gpus);
  return "";
}

}  // namespace megasim::plan
