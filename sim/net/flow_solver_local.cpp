// FlowSolver's local updates (flow_solver.h, set_local_updates): arrivals and departures that
// provably change no other flow's rate skip the solve.
//
// Why they are exact: an allocation is max-min fair if and only if every flow has a bottleneck,
// a saturated link on which no flow has a higher rate. An arriving flow alone on some of its
// links, with spare capacity for the least of their shares on every link it shares, gets that
// share: its own link saturates under it, its shared links were not saturated (spare capacity),
// so no other flow's bottleneck moves. A departing flow leaves other flows' bottlenecks where
// they were when each flow on its saturated shared links keeps a bottleneck the departing flow
// does not cross. Links a pending solve will revisit (dirty) are never trusted. A flow's rate
// cap is a bottleneck of its own, one no other flow crosses.
#include <algorithm>
#include <limits>

#include "net/flow_solver.h"

namespace megasim::net {

bool FlowSolver::admit_alone(std::uint32_t s) {
  Flow& f = flows_[s];
  double rate = std::numeric_limits<double>::infinity();
  for (const Use& u : f.uses) {  // each link once (start_path_flow merges repeats)
    const LinkState& l = links_[u.link];
    if (l.dirty || !(u.weight > 0.0f)) return false;
    if (l.flows.size() == 1) rate = std::min(rate, l.capacity / u.weight);
  }
  rate = std::min(rate, f.max_rate);  // a cap is a link of its own
  if (!(rate < std::numeric_limits<double>::infinity())) return false;  // no link of its own
  for (const Use& u : f.uses) {
    const LinkState& l = links_[u.link];
    if (l.flows.size() > 1 && l.load + u.weight * rate > l.capacity * (1.0 + kTolerance)) return false;
  }
  for (const Use& u : f.uses) links_[u.link].load += u.weight * rate;
  f.rate = rate;
  schedule_finish(s, sim_->now().ns());
  reschedule_engine_event();
  ++local_updates_done_;
  return true;
}

bool FlowSolver::leaves_alone(std::uint32_t s) {
  const Flow& f = flows_[s];
  const std::uint32_t stamp = ++stamp_;
  for (const Use& u : f.uses) links_[u.link].stamp = stamp;
  for (const Use& u : f.uses) {
    const LinkState& l = links_[u.link];
    if (l.dirty) return false;
    if (l.flows.size() == 1 || !saturated(l)) continue;
    for (const Entry& e : l.flows) {
      if (e.flow != s && !bottlenecked_elsewhere(flows_[e.flow], stamp)) return false;
    }
  }
  return true;
}

bool FlowSolver::bottlenecked_elsewhere(const Flow& h, std::uint32_t leaving_stamp) const {
  if (h.rate >= h.max_rate * (1.0 - kLocalMargin)) return true;  // held by its own cap
  for (const Use& b : h.uses) {
    const LinkState& l = links_[b.link];
    const bool crossed = l.stamp == leaving_stamp;  // the leaving flow crosses it
    if (crossed || l.dirty || !saturated(l)) continue;
    double top = 0.0;
    for (const Entry& e : l.flows) top = std::max(top, flows_[e.flow].rate);
    if (h.rate >= top * (1.0 - kLocalMargin)) return true;
  }
  return false;
}

void FlowSolver::refresh_loads() {
  for (LinkId id : comp_links_) {
    LinkState& l = links_[id];
    l.load = 0.0;
    for (const Entry& e : l.flows) l.load += e.weight * flows_[e.flow].rate;
  }
}

}  // namespace megasim::net
