#include "reports/timeline_json.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

namespace megasim::reports {
namespace {

using Interval = std::pair<std::int64_t, std::int64_t>;

// Overlapping or touching intervals merged into one.
nlohmann::json busy(std::vector<Interval> spans) {
  std::sort(spans.begin(), spans.end());
  nlohmann::json out = nlohmann::json::array();
  for (std::size_t i = 0; i < spans.size();) {
    Interval cur = spans[i];
    for (++i; i < spans.size() && spans[i].first <= cur.second; ++i) {
      cur.second = std::max(cur.second, spans[i].second);
    }
    out.push_back({cur.first, cur.second});
  }
  return out;
}

struct Lanes {
  int rank = 0;
  std::map<std::string, std::vector<Interval>> compute;  // by pass
  std::vector<Interval> pp, dp;
};

}  // namespace

nlohmann::json timeline_json(const std::vector<step::TraceRecord>& records) {
  std::map<int, Lanes> stages;
  for (const auto& r : records) {
    auto [it, fresh] = stages.try_emplace(r.stage);
    if (fresh) it->second.rank = r.rank;
    Lanes& l = it->second;
    if (r.rank != l.rank) continue;  // one rank per stage
    if (r.stream == "dp wait") continue;  // the compute lane's gap shows it
    const Interval span{r.start.ns(), r.end.ns()};
    if (r.stream == "compute") {
      l.compute[r.name.substr(0, r.name.find(' '))].push_back(span);
    } else if (r.stream == "pp") {
      l.pp.push_back(span);
    } else {
      l.dp.push_back(span);
    }
  }
  nlohmann::json ranks = nlohmann::json::array();
  for (auto& [stage, l] : stages) {
    nlohmann::json compute = nlohmann::json::object();
    for (auto& [pass, spans] : l.compute) compute[pass] = busy(std::move(spans));
    ranks.push_back({{"rank", l.rank}, {"stage", stage}, {"compute", compute},
                     {"pp_send", busy(std::move(l.pp))}, {"dp", busy(std::move(l.dp))}});
  }
  return {{"ranks", ranks}};
}

}  // namespace megasim::reports
