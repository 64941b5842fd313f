// `megasim search`'s result: the space and what was pruned, the event-level ranking (each
// plan's figures, its estimate, and why it loses to the best: the part of its step that grew
// most), the Pareto fronts; as a text table or one JSON object.
#pragma once

#include <string>

#include "plan/search.h"

namespace megasim::reports {

std::string search_json(const plan::SearchResult& r);
std::string search_text(const plan::SearchResult& r);

}  // namespace megasim::reports
