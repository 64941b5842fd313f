// A plan's normal form in `search`'s space and what keeps a written plan out of it
// (plan_space.h).
#include <algorithm>
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

// The plan's value of a --fix/--vary axis, as its values are written ("8", "true"), with the
// spellings the axis also takes ("1" for true); nullopt for a key the plan does not hold.
std::optional<std::vector<std::string>> plan_value(const io::Inputs& in, std::string key) {
  const workload::ParallelPlan& p = in.scenario.plan;
  if (key.rfind("plan.", 0) == 0) key = key.substr(5);
  const auto number = [](std::int64_t v) { return std::vector<std::string>{std::to_string(v)}; };
  const auto flag = [](bool v) {
    return v ? std::vector<std::string>{"true", "1"} : std::vector<std::string>{"false", "0"};
  };
  if (key == "tp") return number(p.tp);
  if (key == "pp") return number(p.pp);
  if (key == "vpp") return number(p.vpp);
  if (key == "dp") return number(p.dp);
  if (key == "micro_batch" || key == "mb") return number(p.micro_batch);
  if (key == "recompute") return std::vector<std::string>{workload::to_string(p.recompute)};
  if (key == "sequence_parallel" || key == "sp") return flag(p.sequence_parallel);
  if (key == "distributed_optimizer" || key == "dist_opt") return flag(p.distributed_optimizer);
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
  for (const Axis& a : o.restrict) {
    const auto mine = plan_value(in, a.path);
    if (!mine) continue;
    const bool kept = std::any_of(mine->begin(), mine->end(), [&](const std::string& v) {
      return std::find(a.values.begin(), a.values.end(), v) != a.values.end();
    });
    if (!kept) return fmt::format("--fix/--vary {} leaves out its {}", a.path, mine->front());
  }
  const bool mb_restricted = std::any_of(o.restrict.begin(), o.restrict.end(), [](const Axis& a) {
    return a.path == "mb" || a.path == "micro_batch" || a.path == "plan.micro_batch";
  });
  if (!mb_restricted && std::find(kSpaceMicroBatches.begin(), kSpaceMicroBatches.end(),
                                  p.micro_batch) == kSpaceMicroBatches.end()) {
    return fmt::format(
        "its micro_batch {}: the space's are 1, 2, 4 and 8; --vary mb=1,2,4,8,{} "
        "adds it",
        p.micro_batch, p.micro_batch);
  }
  if (p.tp > in.cluster.node.gpus)
    return fmt::format("its tp {}: the space's reach a node's {} GPUs", p.tp, in.cluster.node.gpus);
  return "";
}

}  // namespace megasim::plan
