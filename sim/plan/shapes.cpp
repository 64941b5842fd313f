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
  // Distinct by every field: an FP8 forward GEMM (fast accumulation) and a dgrad of the same
  // dimensions (split: fc1's forward is fc2's dgrad) are two shapes to measure.
  using Key =
      std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, int, bool, bool, bool>;
  std::set<Key> seen;
  const auto add = [&](const hw::GemmShape& g) {
    if (seen.insert({g.m, g.n, g.k, g.batch, static_cast<int>(g.dtype), g.transpose_a,
                     g.transpose_b, g.fast_accum})
            .second) {
      shapes.push_back(g);
    }
  };
  // Where the preset cuts TP pairs as Transformer Engine does (step::Pricer::overlapped_pair),
  // a layer's forward and data-gradient GEMMs may also run as tp or pipeline_splits pieces.
  const step::SystemOptions& system = inputs.system;
  const bool pieces = system.tp_decomposition.enabled && system.tp_overlap;
  const auto add_piece = [&](hw::GemmShape g, std::int64_t n) {
    g.m = (g.m + n - 1) / n;
    add(g);
  };
  for (const auto& stage : w.program) {
    for (const auto& chunk : stage.chunks) {
      for (const auto* ops : {&chunk.forward, &chunk.backward}) {
        for (const auto& op : *ops) {
          const auto* k = op.kernel();
          const auto* g = k ? std::get_if<hw::GemmShape>(k) : nullptr;
          if (!g) continue;
          add(*g);
          if (pieces && op.layer >= 0 &&
              (op.gemm_role == workload::GemmRole::kForward ||
               op.gemm_role == workload::GemmRole::kDataGrad)) {
            add_piece(*g, inputs.scenario.plan.tp);
            add_piece(*g, system.tp_decomposition.pipeline_splits);
          }
        }
      }
    }
  }
  return shapes;
}

}  // namespace megasim::plan
