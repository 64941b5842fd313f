// A parallel plan and a step's breakdown as the JSON reports print them (simulate, inspect,
// compare), one function each so that every report prints the same keys. Internal to reports/.
#pragma once

#include <nlohmann/json.hpp>

#include "step/step_model.h"
#include "workload/parallel_plan.h"

namespace megasim::reports {

nlohmann::json plan_json(const workload::ParallelPlan& p);
// The critical stage's breakdown in seconds: compute, tp/pp/dp_exposed, bubble, optimizer, other.
nlohmann::json breakdown_json(const step::Breakdown& b);

}  // namespace megasim::reports
