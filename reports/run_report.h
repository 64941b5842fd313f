// Rendering a RunResult as the `run` and `power` sections of `megasim simulate`'s JSON and
// text output. JSON numbers carry their unit in the key name (days, hours, mw, mwh, usd).
// Internal to reports/: simulate_report.cpp merges these sections into its result.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "run/run_simulation.h"

namespace megasim::reports {

// {"run": {...}, "power": {...}}: merge both keys into the simulate result object.
nlohmann::json to_json(const run::RunResult& r, const run::StepProfile& step, const run::PowerInputs& power,
                       const run::ReliabilityModel& model);
// Two titled text blocks, "run" and "power", one figure per line.
std::string to_text(const run::RunResult& r, const run::StepProfile& step, const run::PowerInputs& power,
                    const run::ReliabilityModel& model);

}  // namespace megasim::reports
