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
  finish_window_ = 0.0;
  finished_early_ = 0;
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
  return start_path_flow(path, bytes, latency, std::move(on_done), options.max_rate);
}

FlowId FlowSolver::start_path_flow(const std::vector<Hop>& path, Bytes bytes, Time latency,
                                   std::function<void()> on_done, BytesPerSec max_rate) {
  assert(max_rate.value() > 0.0 && "FlowSolver: a flow capped at no rate never ends");
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
  f.max_rate = max_rate.value();
  f.last_ns = sim_->now().ns();
  f.start_ns = f.last_ns;
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
  // Rounded up, less an absolute 1e-9 ns (kTolerance's value, not its relative sense) so that
  // a finish a rounding error past a whole nanosecond is not put a nanosecond later.
  f.finish_ns = now_ns + Time::from_ns_up(seconds * 1e9 - kTolerance).ns();
  heap_set(s);
}

void FlowSolver::on_finish_event() {
  finish_event_ = EventId{};
  finish_event_ns_ = -1;
  const std::int64_t now = sim_->now().ns();
  // Engine events never nest, so the finished callbacks can use one scratch list.
  auto& done = done_;
  done.clear();
  const auto finishes_now = [&](const Flow& f) {
    if (f.finish_ns <= now) return true;
    if (finish_window_ <= 0.0) return false;
    const bool early = static_cast<double>(f.finish_ns - now) <=
                       finish_window_ * static_cast<double>(f.finish_ns - f.start_ns);
    finished_early_ += early ? 1 : 0;
    return early;
  };
  while (!heap_.empty() && finishes_now(flows_[heap_.front()])) {
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
