// The offline HTML report of simulate, compare and validate (`--html FILE`): one
// self-contained page, every script and style inlined, the charts drawn in the browser by
// Apache ECharts (compiled in; its licences are shown at the foot of the page). The page
// embeds exactly the JSON object that the command's `--json` prints for the same command line,
// and draws nothing else. Same input, same bytes.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "plan/compare.h"
#include "plan/evaluate.h"
#include "plan/validate.h"

namespace megasim::reports {

std::string simulate_html(const plan::Evaluation& e);
std::string compare_html(const std::vector<plan::Variant>& variants);
std::string validate_html(const plan::Validation& v);

// A page of `kind` ("simulate", "compare" or "validate": the script that draws it) titled
// `title` (any text: it is escaped) around `json`, a JSON document: embedded on one line and
// escaped for a script element (a '<' in a string becomes \u003c, which JSON.parse reads back
// the same).
std::string html_page(std::string_view kind, std::string_view title, std::string_view json);

}  // namespace megasim::reports
