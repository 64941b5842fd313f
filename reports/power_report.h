// The `power` section of a run's JSON and text: the job's IT and facility power by activity,
// its peaks and swing, the spares' idle draw, energy, CO2 and cost. Internal to reports/:
// run_report.cpp calls it for the run it renders.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "run/run_simulation.h"

namespace megasim::reports {

nlohmann::json power_json(const run::RunResult& r, const run::StepProfile& step,
                          const run::PowerInputs& power);
// The power, energy and cost lines of the run's text.
void append_power(std::string& o, const run::RunResult& r, const run::PowerInputs& power);

}  // namespace megasim::reports
