// A plan's normal form in `search`'s space and what keeps a written plan out of it
// (plan_space.h).
#include <algorithm>
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

}  // namespace megasim::plan
