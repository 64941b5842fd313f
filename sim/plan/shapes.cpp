#include "plan/shapes.h"

#include <algorithm>
#include <variant>

#include "plan/assembly.h"

namespace megasim::plan {

std::vector<hw::GemmShape> calibration_gemm_shapes(const io::Inputs& inputs) {
  WorkloadOptions options;
  options.allow_oom = true;  // the shapes of a plan are worth measuring even if it is too big
  const step::AssembledWorkload w = assemble_workload(inputs, options);
  std::vector<hw::GemmShape> shapes;
  // Distinct by every field (GemmShape's ==): an FP8 forward GEMM (fast accumulation) and a
  // dgrad of the same dimensions (split: fc1's forward is fc2's dgrad) are two to measure.
  // A scenario runs tens of distinct shapes, so a linear search is enough.
  const auto add = [&](const hw::GemmShape& g) {
    if (std::find(shapes.begin(), shapes.end(), g) == shapes.end()) shapes.push_back(g);
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
