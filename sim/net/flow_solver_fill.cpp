// FlowSolver's solve (flow_solver.h): the component a change touched, and max-min rates over it
// by progressive filling.
#include <algorithm>
#include <cassert>
#include <functional>
#include <limits>
#include <utility>

#include "net/flow_solver.h"

namespace megasim::net {

void FlowSolver::collect_component() {
  // The component the changes touched: links and flows reachable through shared links.
  comp_links_.clear();
  comp_flows_.clear();
  for (LinkId l : dirty_links_) {
    links_[l].dirty = false;
    if (links_[l].mark != epoch_) {
      links_[l].mark = epoch_;
      comp_links_.push_back(l);
    }
  }
  dirty_links_.clear();
  for (std::size_t i = 0; i < comp_links_.size(); ++i) {
    for (const Entry& e : links_[comp_links_[i]].flows) {
      Flow& f = flows_[e.flow];
      if (f.mark == epoch_) continue;
      f.mark = epoch_;
      comp_flows_.push_back(e.flow);
      for (const Use& u : f.uses) {
        if (links_[u.link].mark != epoch_) {
          links_[u.link].mark = epoch_;
          comp_links_.push_back(u.link);
        }
      }
    }
  }
}

void FlowSolver::queue_fill_order() {
  auto& order = fill_order_;
  order.clear();
  for (std::uint32_t s : comp_flows_) flows_[s].own_link = kNoLink;
  for (LinkId l : comp_links_) {
    LinkState& ls = links_[l];
    ls.rem = ls.capacity;
    ls.wsum = 0.0;
    for (const Entry& e : ls.flows) ls.wsum += e.weight;
    if (!(ls.wsum > 0.0)) continue;
    const double share = ls.rem / ls.wsum;
    if (ls.flows.size() > 1) {
      order.emplace_back(share, l);
      continue;
    }
    Flow& f = flows_[ls.flows.front().flow];
    if (f.own_link == kNoLink || std::pair(share, l) < std::pair(f.own_share, f.own_link)) {
      f.own_share = share;
      f.own_link = l;
    }
  }
  for (std::uint32_t s : comp_flows_) {
    Flow& f = flows_[s];
    if (f.max_rate < std::numeric_limits<double>::infinity() &&
        (f.own_link == kNoLink || f.max_rate < f.own_share)) {
      assert(s < kCapOfFlow && "FlowSolver: too many flows to mark a cap");
      f.own_share = f.max_rate;
      f.own_link = kCapOfFlow | s;
    }
    if (f.own_link != kNoLink) order.emplace_back(f.own_share, f.own_link);
  }
}

void FlowSolver::fill() {
  // Progressive filling: all unfrozen flows grow at one rate; the link with the least
  // remaining capacity per unit of unfrozen weight saturates first and freezes its flows.
  // Freezing a flow at the current (lowest) level can only raise the share of the other links
  // it crosses, so keys are lower bounds: a link taken whose share has grown since its key was
  // queued is queued again with its current share (one entry per link, no decrease-key).
  //
  // A link that carries one flow (a NIC or PCIe link of its own) keeps the share it starts with
  // until that flow freezes, and then drops out; of a flow's own links only the first in key
  // order can freeze it. So only that one is queued, under the key it would have had: the links
  // taken, and their order, are those of one heap of every link, less takes that do nothing.
  // A flow's rate cap is such a link too, its key the cap (kCapOfFlow marks it).
  queue_fill_order();
  auto& order = fill_order_;
  // Keys are pushed again rarely, so the links are sorted once and merged with a small heap of
  // the pushed-again ones: the same order as one heap of everything, at a sort's cost (a heap
  // built in linear time and popped only until every flow is frozen measured no faster on the
  // default scenario's full step). Filling stops once every flow is frozen.
  std::sort(order.begin(), order.end());
  std::size_t next = 0;
  auto& again = fill_again_;
  again.clear();
  std::size_t unfrozen = comp_flows_.size();
  double level = 0.0;
  while (unfrozen > 0 && (next < order.size() || !again.empty())) {
    std::pair<double, LinkId> top;
    if (again.empty() || (next < order.size() && order[next] < again.front())) {
      top = order[next++];
    } else {
      std::pop_heap(again.begin(), again.end(), std::greater<>());
      top = again.back();
      again.pop_back();
    }
    const auto [key, l] = top;
    if ((l & kCapOfFlow) != 0) {
      Flow& f = flows_[l & ~kCapOfFlow];
      if (f.frozen) continue;
      level = std::max(level, key);
      freeze(f, level);
      --unfrozen;
      continue;
    }
    LinkState& ls = links_[l];
    if (ls.wsum <= kTolerance) continue;  // every flow on it is frozen
    const double share = std::max(0.0, ls.rem) / ls.wsum;
    if (share > key * (1.0 + kTolerance) + kTolerance) {
      again.emplace_back(share, l);
      std::push_heap(again.begin(), again.end(), std::greater<>());
      continue;
    }
    // Shares never fall as filling proceeds; rounding may make one look smaller.
    level = std::max(level, share);
    for (const Entry& e : ls.flows) {
      Flow& f = flows_[e.flow];
      if (f.frozen) continue;
      freeze(f, level);
      --unfrozen;
    }
  }
}

void FlowSolver::freeze(Flow& f, double level) {
  f.frozen = true;
  f.rate = level;
  for (const Use& u : f.uses) {
    LinkState& ul = links_[u.link];
    ul.rem -= u.weight * level;
    ul.wsum -= u.weight;
  }
}

}  // namespace megasim::net
