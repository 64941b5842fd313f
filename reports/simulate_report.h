// `megasim simulate`'s result as a person reads it (a text table) and as a machine reads it
// (one JSON object: step_time_s, tokens_per_s, mfu, hfu, breakdown_s, memory_per_stage,
// costs, and `run` and `power` when run.tokens is set). JSON numbers carry their unit in the
// key name.
#pragma once

#include <string>

#include "plan/evaluate.h"

namespace megasim::reports {

// Pretty-printed with a trailing newline.
std::string simulate_json(const plan::Evaluation& e);
std::string simulate_text(const plan::Evaluation& e);

}  // namespace megasim::reports
