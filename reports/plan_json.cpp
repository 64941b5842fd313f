#include "reports/plan_json.h"

namespace megasim::reports {

nlohmann::json plan_json(const workload::ParallelPlan& p) {
  return {{"tp", p.tp},
          {"pp", p.pp},
          {"vpp", p.vpp},
          {"dp", p.dp},
          {"cp", p.cp},
          {"gpus", p.gpus()},
          {"micro_batch", p.micro_batch},
          {"global_batch", p.global_batch},
          {"micro_batches_per_replica", p.micro_batches()},
          {"sequence_parallel", p.sequence_parallel},
          {"distributed_optimizer", p.distributed_optimizer},
          {"zero2", p.zero2},
          {"zero3", p.zero3},
          {"shard_group", p.shard_group},
          {"recompute", workload::to_string(p.recompute)},
          {"optimizer", workload::to_string(p.optimizer)},
          {"precision", workload::to_string(p.precision)},
          {"fp32_gradients", p.fp32_gradients},
          {"fp8", p.fp8},
          {"fp8_params", p.fp8_params},
          {"schedule", workload::to_string(p.schedule)},
          {"rank_order", workload::to_string(p.rank_order)},
          {"layer_split", p.layer_split}};
}

std::string rank_order_suffix(workload::RankOrder order) {
  if (order == workload::RankOrder::kTpCpDpPp) return "";
  return std::string(", ranks ") + workload::to_string(order);
}

nlohmann::json breakdown_json(const step::Breakdown& b) {
  const auto s = [](Time t) { return t.to_seconds(); };
  return {{"compute", s(b.compute)},
          {"slowest_gpu", s(b.slowest_gpu)},
          {"power_cap", s(b.power_cap)},
          {"tp_exposed", s(b.tp_exposed)},
          {"pp_exposed", s(b.pp_exposed)},
          {"dp_exposed", s(b.dp_exposed)},
          {"bubble", s(b.bubble)},
          {"optimizer", s(b.optimizer)},
          {"other", s(b.other)}};
}

}  // namespace megasim::reports
