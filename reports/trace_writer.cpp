#include "reports/trace_writer.h"

#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "reports/json_text.h"

namespace megasim::reports {
namespace {

int thread_id(const std::string& stream) {
  if (stream == "compute") return 0;
  if (stream == "pp") return 1;
  if (stream == "dp wait") return 3;
  return 2;
}

}  // namespace

std::string chrome_trace_json(const std::vector<step::TraceRecord>& records) {
  using nlohmann::json;
  json events = json::array();
  std::map<int, int> rank_stage;
  for (const auto& r : records) rank_stage[r.rank] = r.stage;
  for (const auto& [rank, stage] : rank_stage) {
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", rank},
                      {"args", {{"name", "rank " + std::to_string(rank) + " (stage " +
                                             std::to_string(stage) + ")"}}}});
    events.push_back({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", rank},
                      {"args", {{"sort_index", rank}}}});
    for (const char* stream : {"compute", "pp", "dp", "dp wait"}) {
      events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", rank},
                        {"tid", thread_id(stream)}, {"args", {{"name", stream}}}});
    }
  }
  int flow = 0;
  for (const auto& r : records) {
    const double ts = r.start.to_us();
    const double dur = (r.end - r.start).to_us();
    events.push_back({{"name", r.name}, {"cat", r.stream}, {"ph", "X"}, {"pid", r.rank},
                      {"tid", thread_id(r.stream)}, {"ts", ts}, {"dur", dur}});
    if (r.flow_to_rank >= 0 && rank_stage.count(r.flow_to_rank)) {
      ++flow;
      events.push_back({{"name", "pp transfer"}, {"cat", "pp"}, {"ph", "s"}, {"id", flow},
                        {"pid", r.rank}, {"tid", thread_id(r.stream)}, {"ts", ts}});
      // The arrow ends on the receiver's next compute slice, the pass that takes the data
      // (no "bp": "e", which would need a slice running at the arrival, often none there).
      events.push_back({{"name", "pp transfer"},
                        {"cat", "pp"},
                        {"ph", "f"},
                        {"id", flow},
                        {"pid", r.flow_to_rank},
                        {"tid", 0},
                        {"ts", r.end.to_us()}});
    }
  }
  return json_text(json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}, -1);
}

}  // namespace megasim::reports
