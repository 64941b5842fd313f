// `megasim collective`'s sweep as nccl-tests prints it (size, count, type, redop, time, algbw,
// busbw, plus the algorithm and protocol chosen and NCCL's analytic estimate), or as one JSON
// object with the same rows.
#pragma once

#include <string>

#include "plan/collective_sweep.h"

namespace megasim::reports {

std::string collective_text(const plan::Sweep& s);
std::string collective_json(const plan::Sweep& s);

}  // namespace megasim::reports
