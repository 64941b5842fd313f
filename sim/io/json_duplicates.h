// JSON leaves the meaning of a key repeated in one object open, and nlohmann::json keeps the
// last: parse_json_text refuses such a document instead, naming the key's path.
#pragma once

#include <optional>
#include <string>

#include "io/json_reader.h"

namespace megasim::io {

// A parser callback for Json::parse that records in `first` the path ("plan.tp",
// "runs[3].id", "" for an empty key at the top) of the first key repeated within one object;
// `first` must outlive the parse.
Json::parser_callback_t duplicate_key_finder(std::optional<std::string>& first);

}  // namespace megasim::io
