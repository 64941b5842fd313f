// Chrome / Perfetto trace JSON of a simulated step ("Trace Event Format", the JSON that
// ui.perfetto.dev and chrome://tracing open): one process per rank, one thread per stream
// (compute, pp, dp), a complete ("X") event per task (a PP send's and a DP collective's with
// args.bytes, a rank's), and a flow arrow from each PP send to the rank that receives it.
#pragma once

#include <string>
#include <vector>

#include "step/executor.h"

namespace megasim::reports {

std::string chrome_trace_json(const std::vector<step::TraceRecord>& records);

}  // namespace megasim::reports
