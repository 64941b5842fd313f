// KeyLog: the JSON paths of every key a loader asked about (array elements as "[]"), so a test
// can hold a loader's key set against its schema. Kept apart from json_reader.h so that the
// headers which only pass a KeyLog along do not pull in nlohmann/json.
#pragma once

#include <set>
#include <string>

namespace megasim::io {

using KeyLog = std::set<std::string>;

}  // namespace megasim::io
