// Internal to reports/: the files the HTML report is made of, compiled into the binary at build
// time (cmake/embed_files.cmake): the page template, its style sheet and scripts (reports/html/)
// and the charting library with its licences (installed by scripts/install-deps.sh with npm ci).
#pragma once

#include <string>
#include <string_view>

namespace megasim::reports {

// The text of an embedded file by its name ("page.html", "echarts.min.js", ...); a name that
// was not embedded is a logic_error (a build mistake, not a user's).
std::string embedded_file(std::string_view name);

}  // namespace megasim::reports
