// Internal to reports/: a JSON document as text with a trailing newline. A string that holds an
// invalid UTF-8 byte (a name or message a user typed) is written with U+FFFD in its place
// rather than failing the whole report.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace megasim::reports {

// indent -1: one line; otherwise pretty-printed with that many spaces.
inline std::string json_text(const nlohmann::json& j, int indent = 2) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace megasim::reports
