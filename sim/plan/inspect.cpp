#include "plan/inspect.h"

#include "plan/assembly.h"

#include <fmt/format.h>

#include "engine/error.h"

namespace megasim::plan {
namespace {

// Each op `times` over (a step that runs it more than once).
void tally(OpTable& t, const std::vector<workload::Op>& ops, std::int64_t times = 1) {
  const auto n = static_cast<double>(times);
  for (const workload::Op& op : ops) {
    KindTotals& k = t[workload::to_string(op.kind())];
    k.count += times;
    k.model += op.model_flops * n;
    k.hardware += op.hardware_flops * n;
    k.bytes += op.bytes() * n;
  }
}

}  // namespace

Inspection inspect(const io::Inputs& in, const InspectOptions& o) {
  WorkloadOptions wo;
  if (o.unfused_attention && in.scenario.plan.cp > 1) {
    // The unfused path's s² score matrices have no context-parallel form (io::load_inputs
    // refuses the same plan when a preset or override picks unfused attention).
    throw InputError(fmt::format("{}: plan.cp {} needs a fused attention kernel, but "
                                 "--unfused-attention asks for the unfused one",
                                 in.scenario.file.string(), in.scenario.plan.cp));
  }
  if (o.unfused_attention) wo.attention = step::AttentionKernel::kUnfused;
  wo.allow_oom = o.allow_oom;
  const step::AssembledWorkload w = assemble_workload(in, wo);

  Inspection out;
  out.inputs = in;
  out.executed = w.executed;
  out.fused_attention = w.fused_attention;
  // Every count is of the executed model: a window the system switches on lowers what the
  // kernels run and the MFU numerator alike (flops.h).
  out.flops = workload::flops_per_token(w.executed, in.scenario.plan.recompute, !w.fused_attention);
  out.capacity = in.device.memory;
  for (std::size_t s = 0; s < w.program.size(); ++s) {
    const workload::StageProgram& st = w.program[s];
    StageInspection si;
    si.stage = st.stage;
    for (const auto& ch : st.chunks) {
      tally(si.per_micro_batch, ch.forward);
      tally(si.per_micro_batch, ch.backward);
      si.layers += ch.layers.count;
    }
    // ZeRO-2 reduces a chunk's gradients after every backward pass, as the executor runs it
    // (step::ExecutorConfig::reduce_every_backward); until 2026-12-06 counted once a step.
    tally(si.per_step, st.dp_gradient_comm,
          in.scenario.plan.zero2 ? in.scenario.plan.micro_batches() : 1);
    tally(si.per_step, st.optimizer);
    tally(si.per_step, st.dp_param_comm);
    si.parameters_per_rank = st.parameters_per_rank;
    si.pp_send_bytes = st.pp_send_bytes;
    si.memory = w.memory[s];
    si.fit = workload::fit(si.memory, out.capacity);
    out.stages.push_back(std::move(si));
  }
  return out;
}

}  // namespace megasim::plan
