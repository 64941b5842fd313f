#include "net/flow_solver.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <utility>

namespace megasim::net {

FlowSolver::FlowSolver(Simulator& sim, const Topology& topology, Routing routing)
    : sim_(&sim), topology_(&topology), routing_(routing) {
  links_.resize(topology.links().size());
  for (std::size_t i = 0; i < links_.size(); ++i) links_[i].capacity = topology.links()[i].capacity.value();
  for (const auto& [a, b] : topology.series_links()) {
    links_[links_[a].capacity >= links_[b].capacity ? a : b].skipped = true;
  }
}

FlowSolver::FlowSolver(Simulator& sim, std::vector<BytesPerSec> capacities) : sim_(&sim) {
  links_.resize(capacities.size());
  for (std::size_t i = 0; i < links_.size(); ++i) links_[i].capacity = capacities[i].value();
}

void FlowSolver::reset(Simulator& sim) {
  sim_ = &sim;
  flows_.clear();
  free_.clear();
  for (LinkState& l : links_) {
    std::vector<Entry> flows = std::move(l.flows);  // its buffer, kept
    flows.clear();
    const double capacity = l.capacity;
    const bool skipped = l.skipped;
    l = LinkState{};
    l.capacity = capacity;
    l.flows = std::move(flows);
    l.skipped = skipped;
  }
  dirty_links_.clear();
  heap_.clear();
  done_.clear();
  solve_event_ = EventId{};
  finish_event_ = EventId{};
  finish_event_ns_ = -1;
  epoch_ = 0;
  stamp_ = 0;
  active_count_ = 0;
  solves_ = 0;
  flows_solved_ = 0;
  local_updates_ = false;
  local_updates_done_ = 0;
}

std::uint32_t FlowSolver::acquire() {
  if (!free_.empty()) {
    const std::uint32_t s = free_.back();
    free_.pop_back();
    return s;
  }
  flows_.emplace_back();
  return static_cast<std::uint32_t>(flows_.size() - 1);
}

FlowId FlowSolver::start_flow(int src_gpu, int dst_gpu, Bytes bytes, std::function<void()> on_done,
                              FlowOptions options) {
  assert(topology_ != nullptr && "start_flow needs a solver built over a Topology");
  std::vector<Hop> path;
  topology_->route(src_gpu, dst_gpu, options.rail, routing_, options.entropy, path);
  const Time latency = topology_->path_latency(path);
  return start_path_flow(path, bytes, latency, std::move(on_done));
}

FlowId FlowSolver::start_path_flow(const std::vector<Hop>& path, Bytes bytes, Time latency,
                                   std::function<void()> on_done) {
  if (path.empty() || bytes.value() <= 0.0) {
    sim_->after(latency, std::move(on_done));
    return FlowId{};
  }
  const std::uint32_t s = acquire();
  Flow& f = flows_[s];
  f.uses.clear();
  f.uses.reserve(path.size());
  // A link crossed more than once (a coflow's paths meet on it) is one use of their summed
  // weight: max-min sees the same load, and every later walk over the flow's links is linear.
  const std::uint32_t stamp = ++stamp_;
  for (const Hop& h : path) {
    assert(h.link < links_.size());
    LinkState& l = links_[h.link];
    if (l.skipped) continue;
    if (l.stamp == stamp) {
      Use& u = f.uses[l.stamp_use];
      u.weight += h.weight;
      l.flows[u.pos].weight = u.weight;
      continue;
    }
    l.stamp = stamp;
    l.stamp_use = static_cast<std::uint32_t>(f.uses.size());
    f.uses.push_back(Use{h.link, h.weight, static_cast<std::uint32_t>(l.flows.size())});
    l.flows.push_back(Entry{s, static_cast<std::uint32_t>(f.uses.size() - 1), h.weight});
  }
  if (f.uses.empty()) {  // every hop in series with one left out: no path of ours can be so
    free_.push_back(s);
    sim_->after(latency, std::move(on_done));
    return FlowId{};
  }
  f.on_done = std::move(on_done);
  f.remaining = bytes.value();
  f.rate = 0.0;
  f.last_ns = sim_->now().ns();
  f.finish_ns = std::numeric_limits<std::int64_t>::max();
  f.latency = latency;
  f.busy = true;
  ++active_count_;
  if (local_updates_ && admit_alone(s)) return FlowId{s, f.generation};
  for (const Use& u : f.uses) mark_dirty(u.link);
  request_solve();
  return FlowId{s, f.generation};
}

bool FlowSolver::active(FlowId id) const {
  return id.valid() && id.slot < flows_.size() && flows_[id.slot].busy &&
         flows_[id.slot].generation == id.generation;
}

bool FlowSolver::cancel_flow(FlowId id) {
  if (!active(id)) return false;
  heap_erase(id.slot);
  detach(id.slot, !(local_updates_ && leaves_alone(id.slot)));
  flows_[id.slot].on_done = nullptr;
  request_solve();
  reschedule_engine_event();
  return true;
}

BytesPerSec FlowSolver::rate(FlowId id) const {
  return active(id) ? BytesPerSec(flows_[id.slot].rate) : BytesPerSec(0.0);
}

Bytes FlowSolver::remaining(FlowId id) const {
  if (!active(id)) return Bytes(0.0);
  const Flow& f = flows_[id.slot];
  const double elapsed = static_cast<double>(sim_->now().ns() - f.last_ns) * 1e-9;
  return Bytes(std::max(0.0, f.remaining - f.rate * elapsed));
}

BytesPerSec FlowSolver::link_load(LinkId link) const {
  double sum = 0.0;
  for (const Entry& e : links_[link].flows)
    sum += e.weight * flows_[e.flow].rate;
  return BytesPerSec(sum);
}

void FlowSolver::detach(std::uint32_t s, bool resolve) {
  Flow& f = flows_[s];
  for (const Use& u : f.uses) {
    LinkState& l = links_[u.link];
    const Entry last = l.flows.back();
    l.flows[u.pos] = last;
    flows_[last.flow].uses[last.use].pos = u.pos;
    l.flows.pop_back();
    l.load = l.flows.empty() ? 0.0 : l.load - u.weight * f.rate;
    if (resolve) mark_dirty(u.link);
  }
  if (!resolve) ++local_updates_done_;
  f.uses.clear();
  f.busy = false;
  ++f.generation;
  --active_count_;
  free_.push_back(s);
}

void FlowSolver::mark_dirty(LinkId l) {
  if (!links_[l].dirty) {
    links_[l].dirty = true;
    dirty_links_.push_back(l);
  }
}

void FlowSolver::request_solve() {
  if (!sim_->pending(solve_event_)) solve_event_ = sim_->at(sim_->now(), [this] { solve(); });
}

void FlowSolver::update_remaining(Flow& f, std::int64_t now_ns) {
  const double elapsed = static_cast<double>(now_ns - f.last_ns) * 1e-9;
  f.remaining = std::max(0.0, f.remaining - f.rate * elapsed);
  f.last_ns = now_ns;
}

void FlowSolver::solve() {
  if (dirty_links_.empty()) return;
  ++epoch_;
  ++solves_;
  const std::int64_t now = sim_->now().ns();
  collect_component();
  flows_solved_ += comp_flows_.size();
  for (std::uint32_t s : comp_flows_) {
    update_remaining(flows_[s], now);
    flows_[s].frozen = false;
    flows_[s].previous_rate = flows_[s].rate;
  }
  fill();
  for (std::uint32_t s : comp_flows_) {
    Flow& f = flows_[s];
    assert(f.frozen && f.rate > 0.0 && "FlowSolver: a flow left the solve without a rate");
    // A flow whose rate did not change (within kTolerance) keeps its finish time and heap slot:
    // most flows of a large component are not affected by one arrival or departure.
    if (f.heap_pos != kNotInHeap && std::abs(f.rate - f.previous_rate) <= kTolerance * f.previous_rate) {
      f.rate = f.previous_rate;
      continue;
    }
    schedule_finish(s, now);
  }
  if (local_updates_) refresh_loads();
  reschedule_engine_event();
}

void FlowSolver::schedule_finish(std::uint32_t s, std::int64_t now_ns) {
  Flow& f = flows_[s];
  const double seconds = f.remaining / f.rate;
  f.finish_ns = now_ns + static_cast<std::int64_t>(std::ceil(seconds * 1e9 - kTolerance));
  heap_set(s);
}

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
    if (flows_[s].own_link != kNoLink) order.emplace_back(flows_[s].own_share, flows_[s].own_link);
  }
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
      f.frozen = true;
      --unfrozen;
      f.rate = level;
      for (const Use& u : f.uses) {
        LinkState& ul = links_[u.link];
        ul.rem -= u.weight * level;
        ul.wsum -= u.weight;
      }
    }
  }
}

void FlowSolver::on_finish_event() {
  finish_event_ = EventId{};
  finish_event_ns_ = -1;
  const std::int64_t now = sim_->now().ns();
  // Engine events never nest, so the finished callbacks can use one scratch list.
  auto& done = done_;
  done.clear();
  while (!heap_.empty() && flows_[heap_.front()].finish_ns <= now) {
    const std::uint32_t s = heap_.front();
    heap_erase(s);
    done.emplace_back(flows_[s].latency, std::move(flows_[s].on_done));
    flows_[s].on_done = nullptr;
    detach(s, !(local_updates_ && leaves_alone(s)));
  }
  solve();
  reschedule_engine_event();
  // By index: a callback may start flows, never finish them, so `done` does not change.
  for (std::size_t i = 0; i < done.size(); ++i) {
    auto& [latency, callback] = done[i];
    if (!callback) continue;
    if (latency > Time::zero()) {
      sim_->after(latency, std::move(callback));
    } else {
      callback();
    }
  }
  done.clear();
}

void FlowSolver::reschedule_engine_event() {
  if (heap_.empty()) {
    if (finish_event_.valid()) sim_->cancel(finish_event_);
    finish_event_ = EventId{};
    finish_event_ns_ = -1;
    return;
  }
  const std::int64_t top = std::max(flows_[heap_.front()].finish_ns, sim_->now().ns());
  if (finish_event_.valid() && sim_->pending(finish_event_) && finish_event_ns_ == top) return;
  if (finish_event_.valid()) sim_->cancel(finish_event_);
  finish_event_ns_ = top;
  finish_event_ = sim_->at(Time::from_ns(top), [this] { on_finish_event(); });
}

bool FlowSolver::heap_less(std::uint32_t a, std::uint32_t b) const {
  const Flow& fa = flows_[a];
  const Flow& fb = flows_[b];
  return fa.finish_ns != fb.finish_ns ? fa.finish_ns < fb.finish_ns : a < b;
}

void FlowSolver::heap_swap(std::size_t i, std::size_t j) {
  std::swap(heap_[i], heap_[j]);
  flows_[heap_[i]].heap_pos = static_cast<std::uint32_t>(i);
  flows_[heap_[j]].heap_pos = static_cast<std::uint32_t>(j);
}

void FlowSolver::heap_up(std::size_t i) {
  while (i > 0) {
    const std::size_t p = (i - 1) / 2;
    if (!heap_less(heap_[i], heap_[p])) break;
    heap_swap(i, p);
    i = p;
  }
}

void FlowSolver::heap_down(std::size_t i) {
  for (;;) {
    const std::size_t l = 2 * i + 1, r = l + 1;
    std::size_t m = i;
    if (l < heap_.size() && heap_less(heap_[l], heap_[m])) m = l;
    if (r < heap_.size() && heap_less(heap_[r], heap_[m])) m = r;
    if (m == i) return;
    heap_swap(i, m);
    i = m;
  }
}

void FlowSolver::heap_set(std::uint32_t s) {
  Flow& f = flows_[s];
  if (f.heap_pos == kNotInHeap) {
    f.heap_pos = static_cast<std::uint32_t>(heap_.size());
    heap_.push_back(s);
    heap_up(heap_.size() - 1);
  } else {
    heap_up(f.heap_pos);
    heap_down(flows_[s].heap_pos);
  }
}

void FlowSolver::heap_erase(std::uint32_t s) {
  const std::uint32_t pos = flows_[s].heap_pos;
  if (pos == kNotInHeap) return;
  const std::size_t last = heap_.size() - 1;
  if (pos != last) {
    heap_swap(pos, last);
    heap_.pop_back();
    const std::uint32_t moved = heap_[pos];
    heap_up(pos);
    heap_down(flows_[moved].heap_pos);
  } else {
    heap_.pop_back();
  }
  flows_[s].heap_pos = kNotInHeap;
}

}  // namespace megasim::net
