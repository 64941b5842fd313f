#include <doctest/doctest.h>

#include <map>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "reports/trace_writer.h"
#include "step/executor.h"
#include "step/pipeline_schedule.h"

using namespace megasim;

TEST_CASE("trace: a simulated step becomes Chrome trace events with PP flow arrows") {
  auto s = step::build_schedule(workload::Schedule::kOneFOneB, 2, 1, 2);
  step::StageCosts c;
  c.forward = {Time::from_us(10)};
  c.backward = {Time::from_us(20)};
  c.weight_grad = c.forward_tp = c.backward_tp = c.weight_grad_tp = {Time::zero()};
  c.dp_reduce_scatter = c.dp_all_gather = {Time::from_us(3)};
  c.pp_activation = c.pp_gradient = Time::from_us(1);
  for (const int tp : {1, 4}) {
    for (const bool overlap : {true, false}) {
      CAPTURE(tp);
      CAPTURE(overlap);
      step::ExecutorConfig cfg;
      cfg.pp_overlap = overlap;
      cfg.tp = tp;
      cfg.record_trace = true;
      auto r = step::execute_step(s, {c, c}, cfg);
      // Per stage: 4 passes on compute, one optimizer step; 2 PP sends per stage; RS + AG.
      const auto doc = nlohmann::json::parse(reports::chrome_trace_json(r.trace));
      int complete = 0, flow_starts = 0, flow_ends = 0, names = 0;
      std::set<int> processes;
      std::map<std::string, int> line_order;  // a rank's lines by name, in the viewer's order
      std::map<int, std::string> line_name;
      for (const auto& e : doc["traceEvents"]) {
        const std::string ph = e["ph"];
        if (ph == "M" && e["name"] == "process_name") processes.insert(e["pid"].get<int>());
        if (ph == "M" && e["pid"] == 0 && e["name"] == "thread_name")
          line_name[e["tid"].get<int>()] = e["args"]["name"];
      }
      for (const auto& e : doc["traceEvents"]) {
        if (e["ph"] == "M" && e["pid"] == 0 && e["name"] == "thread_sort_index")
          line_order[line_name.at(e["tid"].get<int>())] = e["args"]["sort_index"].get<int>();
      }
      // The PP lines side by side, below the compute line and above the DP ones.
      REQUIRE(line_order.size() == 6);
      CHECK(line_order["compute"] < line_order["pp activations"]);
      CHECK(line_order["pp gradients"] == line_order["pp activations"] + 1);
      CHECK(line_order["pp gradients"] < line_order["dp"]);
      // A sharded pass's collectives beside the step's DP calls, its waits below them.
      CHECK(line_order["dp in pass"] == line_order["dp"] + 1);
      CHECK(line_order["dp wait"] == line_order["dp in pass"] + 1);
      for (const auto& e : doc["traceEvents"]) {
        const std::string ph = e["ph"];
        complete += ph == "X";
        flow_starts += ph == "s";
        flow_ends += ph == "f";
        names += ph == "M" && e["name"] == "process_name";
        // Every arrow ends on a rank that has a process (rank = stage · tp for t = 0).
        if (ph == "f") CHECK(processes.count(e["pid"].get<int>()) == 1);
      }
      // Each arrow ends bound to the start of the pass that takes the data: a forward's
      // activation on the next stage's forward of that micro-batch, a gradient on the previous
      // stage's backward; activations and gradients are sent on lines of their own.
      std::map<std::pair<int, double>, std::string> slice_at;
      std::map<int, nlohmann::json> starts;
      for (const auto& e : doc["traceEvents"]) {
        if (e["ph"] == "X" && e["cat"] == "compute") {
          slice_at[{e["pid"].get<int>(), e["ts"].get<double>()}] = e["name"];
        }
        if (e["ph"] == "s") starts[e["id"].get<int>()] = e;
      }
      for (const auto& e : doc["traceEvents"]) {
        if (e["ph"] != "f") continue;
        CHECK(e["bp"] == "e");
        const auto it = slice_at.find({e["pid"].get<int>(), e["ts"].get<double>()});
        REQUIRE(it != slice_at.end());
        const auto& start = starts.at(e["id"].get<int>());
        CHECK(e["ts"].get<double>() >= start["ts"].get<double>());
        CHECK(it->second.substr(0, 1) == (start["tid"] == 1 ? "F" : "B"));
      }
      CHECK(names == 2);
      // Per stage also two waits on the DP line: for its reduce-scatter before the optimizer
      // and its all-gather after (dp_exposed, undrawn until 2026-12-05).
      CHECK(complete == 2 * 5 + 4 + 2 * 2 + 2 * 2);
      CHECK(flow_starts == 4);
      CHECK(flow_ends == 4);
      CHECK(doc["displayTimeUnit"] == "ms");
    }
  }
}
