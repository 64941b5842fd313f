// Rendering a RunResult as the `run` and `power` sections of `megasim simulate`'s JSON and
// text output. JSON numbers carry their unit in the key name (days, hours, mw, mwh, usd).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "run/run_simulation.h"

namespace megasim::run {

// {"run": {...}, "power": {...}}: merge both keys into the simulate result object.
nlohmann::json to_json(const RunResult& r, const StepProfile& step, const PowerInputs& power,
                       const ReliabilityModel& model);
// Two titled text blocks, "run" and "power", one figure per line.
std::string to_text(const RunResult& r, const StepProfile& step, const PowerInputs& power,
                    const ReliabilityModel& model);

}  // namespace megasim::run
