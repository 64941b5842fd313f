// JSON leaves the meaning of a key repeated in one object open, and nlohmann::json keeps the
// last: parse_json_text refuses such a document instead, naming the key's path.
#pragma once

#include <string>

#include "io/json_reader.h"

namespace megasim::io {

// A parser callback for Json::parse that records in `first` the path ("plan.tp",
// "runs[3].id") of the first key repeated within one object; `first` must outlive the parse.
Json::parser_callback_t duplicate_key_finder(std::string& first);

}  // namespace megasim::io
