// Internal to reports/: the step's timeline as the HTML report draws it, from the trace records
// the step executor keeps when asked (`--trace`, `--html`). One traced rank per pipeline stage
// (the executor traces data-parallel replica 0 of each stage, so at 12,288 GPUs it is still a
// handful of lanes). All times are integer nanoseconds from the start of the step.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "step/executor.h"

namespace megasim::reports {

// {"ranks": [{"rank", "stage", "compute": {PASS: [[start, end], ...]}, "pp_send": [...],
// "dp": [...]}]}, ranks by stage. Compute tasks are grouped by the first word of their name
// (the pass: F, B, W, optimizer); PP sends and DP collectives are merged into busy intervals
// (several can be in flight at once).
nlohmann::json timeline_json(const std::vector<step::TraceRecord>& records);

}  // namespace megasim::reports
