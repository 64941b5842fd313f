// A parallel plan and a step's breakdown as the JSON reports print them (simulate, inspect,
// compare), one function each so that every report prints the same keys, and the plan's rank
// order as the text reports name it. Internal to reports/.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "step/step_model.h"
#include "workload/parallel_plan.h"

namespace megasim::reports {

nlohmann::json plan_json(const workload::ParallelPlan& p);
// The critical stage's breakdown in seconds: compute, slowest_gpu, power_cap, tp/pp/dp_exposed,
// bubble, optimizer, other (reports/simulate_json.md says what each counts).
nlohmann::json breakdown_json(const step::Breakdown& b);
// ", ranks tp-cp-pp-dp" for an order other than Megatron-LM's default, else nothing.
std::string rank_order_suffix(workload::RankOrder order);

}  // namespace megasim::reports
