#include "reports/trace_writer.h"

#include <cmath>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "reports/json_text.h"

namespace megasim::reports {
namespace {

// PP sends go on two lines, activations and gradients: a blocking exchange sends both ways at
// once, and slices on one line must nest.
int thread_id(const step::TraceRecord& r) {
  if (r.stream == "compute") return 0;
  if (r.stream == "pp") return r.flow_to_pass.rfind("B", 0) == 0 ? 4 : 1;
  if (r.stream == "dp wait") return 3;
  if (r.stream == "dp in pass") return 5;
  return 2;
}

// A compute slice's pass, as a send names its consumer: the name without its " (...)" note.
std::string pass_of(const std::string& name) {
  return name.substr(0, name.find(" ("));
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
    // Listed in this order, the two PP lines side by side (a viewer sorted them by id, the
    // gradients' line below "dp wait", until 2026-12-07).
    const std::pair<int, const char*> threads[] = {{0, "compute"},      {1, "pp activations"},
                                                   {4, "pp gradients"}, {2, "dp"},
                                                   {5, "dp in pass"},   {3, "dp wait"}};
    int order = 0;
    for (const auto& [tid, name] : threads) {
      events.push_back({{"name", "thread_name"},
                        {"ph", "M"},
                        {"pid", rank},
                        {"tid", tid},
                        {"args", {{"name", name}}}});
      events.push_back({{"name", "thread_sort_index"},
                        {"ph", "M"},
                        {"pid", rank},
                        {"tid", tid},
                        {"args", {{"sort_index", order++}}}});
    }
  }
  // Where each pass's compute slice starts, by rank and pass: a send's arrow ends there.
  std::map<std::pair<int, std::string>, double> pass_start;
  for (const auto& r : records) {
    if (r.stream == "compute") pass_start.try_emplace({r.rank, pass_of(r.name)}, r.start.to_us());
  }
  int flow = 0;
  for (const auto& r : records) {
    const double ts = r.start.to_us();
    const double dur = (r.end - r.start).to_us();
    json slice = {{"name", r.name},      {"cat", r.stream}, {"ph", "X"}, {"pid", r.rank},
                  {"tid", thread_id(r)}, {"ts", ts},        {"dur", dur}};
    // What a send or a collective moves, a rank's bytes, where known (a viewer shows a slice's
    // args when it is picked; the slices carried none until 2026-12-07).
    if (r.bytes.value() > 0.0) slice["args"] = {{"bytes", std::llround(r.bytes.value())}};
    events.push_back(std::move(slice));
    if (r.flow_to_rank < 0) continue;
    const auto consumer = pass_start.find({r.flow_to_rank, r.flow_to_pass});
    if (consumer != pass_start.end()) {
      ++flow;
      events.push_back({{"name", "pp transfer"},
                        {"cat", "pp"},
                        {"ph", "s"},
                        {"id", flow},
                        {"pid", r.rank},
                        {"tid", thread_id(r)},
                        {"ts", ts}});
      // The arrow ends on the pass that takes the data: at its slice's start, bound to it.
      events.push_back({{"name", "pp transfer"},
                        {"cat", "pp"},
                        {"ph", "f"},
                        {"bp", "e"},
                        {"id", flow},
                        {"pid", r.flow_to_rank},
                        {"tid", 0},
                        {"ts", consumer->second}});
    }
  }
  return json_text(json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}, -1);
}

}  // namespace megasim::reports
