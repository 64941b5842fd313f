// A parallel plan as the JSON reports print it (simulate and inspect), one function so that
// both print the same keys. Internal to reports/.
#pragma once

#include <nlohmann/json.hpp>

#include "workload/parallel_plan.h"

namespace megasim::reports {

nlohmann::json plan_json(const workload::ParallelPlan& p);

}  // namespace megasim::reports
