// `megasim inspect`'s result: text (the model, plan, FLOPs per token, then per stage its op
// table and memory against the device) or one JSON object with the same figures in bytes and
// FLOPs.
#pragma once

#include <string>

#include "plan/inspect.h"

namespace megasim::reports {

std::string inspect_json(const plan::Inspection& i);
std::string inspect_text(const plan::Inspection& i);

}  // namespace megasim::reports
