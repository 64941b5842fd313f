// JsonReader's arrays of numbers (tables a profile holds as lists, e.g. NCCL's per-size
// correction factors), apart from json_reader.cpp to keep each file short.
#include <fmt/format.h>

#include "io/json_reader.h"

namespace megasim::io {

std::vector<double> JsonReader::number_array(const std::string& key, double lo, double hi,
                                             std::size_t min_size, std::size_t max_size) {
  const Json& v = at(key);
  if (!v.is_array()) fail(key, fmt::format("expected an array, found {}", json_type_name(v)));
  if (v.size() < min_size || v.size() > max_size) {
    fail(key,
         min_size == max_size
             ? fmt::format("expected {} numbers, found {}", min_size, v.size())
             : fmt::format("expected {} to {} numbers, found {}", min_size, max_size, v.size()));
  }
  std::vector<double> out;
  out.reserve(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    const Json& e = v[i];
    if (!e.is_number())
      fail(key, fmt::format("element {}: expected a number, found {}", i, json_type_name(e)));
    const double d = e.get<double>();
    if (!(d >= lo && d <= hi))
      fail(key, fmt::format("element {}: {} is out of range [{}, {}]", i, d, lo, hi));
    out.push_back(d == 0.0 ? 0.0 : d);  // -0 reads as 0, as optional_number's
  }
  return out;
}

}  // namespace megasim::io
