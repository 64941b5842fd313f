// `megasim compare`'s result: a table of variants (step time, MFU, peak memory per GPU,
// exposed communication, or why a variant cannot run), or one JSON object {"variants": [...]}.
#pragma once

#include <string>
#include <vector>

#include "plan/compare.h"

namespace megasim::reports {

std::string compare_json(const std::vector<plan::Variant>& variants);
std::string compare_text(const std::vector<plan::Variant>& variants);

}  // namespace megasim::reports
