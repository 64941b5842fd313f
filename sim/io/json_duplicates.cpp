#include "io/json_duplicates.h"

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace megasim::io {

Json::parser_callback_t duplicate_key_finder(std::optional<std::string>& first) {
  struct Frame {
    bool object = false;
    std::string path;            // of this object or array
    std::set<std::string> keys;  // an object's keys so far
    std::string key;             // an object's current key
    std::size_t index = 0;       // an array's next element
  };
  auto stack = std::make_shared<std::vector<Frame>>();
  const auto child = [stack] {
    if (stack->empty()) return std::string();
    const Frame& f = stack->back();
    return f.object ? (f.path.empty() ? f.key : f.path + "." + f.key)
                    : fmt::format("{}[{}]", f.path, f.index);
  };
  const auto element_done = [stack] {
    if (!stack->empty() && !stack->back().object) ++stack->back().index;
  };
  return [stack, child, element_done, &first](int, Json::parse_event_t event, Json& parsed) {
    switch (event) {
      case Json::parse_event_t::object_start:
      case Json::parse_event_t::array_start: {
        Frame f;
        f.object = event == Json::parse_event_t::object_start;
        f.path = child();
        stack->push_back(std::move(f));
        break;
      }
      case Json::parse_event_t::object_end:
      case Json::parse_event_t::array_end:
        stack->pop_back();
        element_done();
        break;
      case Json::parse_event_t::key: {
        Frame& f = stack->back();
        f.key = parsed.get<std::string>();
        if (!f.keys.insert(f.key).second && !first) first = child();
        break;
      }
      case Json::parse_event_t::value:
        element_done();
        break;
    }
    return true;
  };
}

}  // namespace megasim::io
