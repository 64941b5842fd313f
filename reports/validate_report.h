// `megasim validate`'s result: a table of published against predicted rows with the summary
// lines (MAPE by role, worst row, ablation-chain gains), or one JSON object with the same.
#pragma once

#include <string>

#include "plan/validate.h"

namespace megasim::reports {

std::string validate_json(const plan::Validation& v);
std::string validate_text(const plan::Validation& v);

}  // namespace megasim::reports
