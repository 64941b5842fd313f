#include "plan/shapes.h"

#include <set>
#include <tuple>
#include <variant>

#include "plan/assembly.h"

namespace megasim::plan {

std::vector<hw::GemmShape> calibration_gemm_shapes(const io::Inputs& inputs) {
  WorkloadOptions options;
  options.allow_oom = true;  // the shapes of a plan are worth measuring even if it is too big
  const step::AssembledWorkload w = assemble_workload(inputs, options);
  std::vector<hw::GemmShape> shapes;
  std::set<std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, int, bool, bool>> seen;
  for (const auto& stage : w.program) {
    for (const auto& chunk : stage.chunks) {
      for (const auto* ops : {&chunk.forward, &chunk.backward}) {
        for (const auto& op : *ops) {
          const auto* k = op.kernel();
          const auto* g = k ? std::get_if<hw::GemmShape>(k) : nullptr;
          if (!g) continue;
          if (seen.insert({g->m, g->n, g->k, g->batch, static_cast<int>(g->dtype), g->transpose_a,
                           g->transpose_b})
                  .second) {
            shapes.push_back(*g);
          }
        }
      }
    }
  }
  return shapes;
}

}  // namespace megasim::plan
