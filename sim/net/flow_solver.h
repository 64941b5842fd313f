// Flow-level network model: concurrent flows share link capacity max-min fairly (progressive
// filling, SimGrid lmm's model), with weighted link usage so a sprayed flow loads each of k
// parallel uplinks with 1/k of its rate.
//
// Incremental (STYLE.md 6): a flow's arrival or departure marks it dirty; at most one solve
// event is pending per instant, and it re-solves only the connected component (flows linked by
// shared links) that the changes touched, found by an epoch-marked BFS. Remaining bytes are
// updated lazily (remaining -= rate x elapsed) when a flow's rate changes; finish times live in
// an indexed binary heap with handles; the solver keeps one pending engine event, for the
// earliest finish. Traffic that cannot meet the fabric (a node's NVLink flows) forms its own
// small components, so it never pays for the global solve.
//
// on_done runs once the last byte has left plus the path latency. Not thread-safe; bound to one
// Simulator, which must outlive the solver.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "engine/simulator.h"
#include "engine/time.h"
#include "engine/units.h"
#include "net/topology.h"

namespace megasim::net {

struct FlowId {
  std::uint32_t slot = 0xffffffffu;
  std::uint32_t generation = 0;
  bool valid() const { return slot != 0xffffffffu; }
};

struct FlowOptions {
  int rail = -1;               // NIC rail to leave by; < 0: the destination GPU's rail
  std::uint64_t entropy = 0;   // mixed into the ECMP hash (NCCL: one QP per channel)
  // The most the flow can take, whatever its links leave it (a sender that cannot go faster:
  // NCCL's LL protocols are paced by the GPUs, not the wire). Infinite: its links alone.
  BytesPerSec max_rate = BytesPerSec(std::numeric_limits<double>::infinity());
};

class FlowSolver {
 public:
  // Relative tolerance of the solver: a link counts as saturated, a flow as finished, within
  // this fraction of capacity or size.
  static constexpr double kTolerance = 1e-9;

  // A solver over a topology, routing inter-node flows by `routing`. Of each pair of links in
  // series (Topology::series_links) the faster is left out of every flow it is given: it can
  // never limit one, and a solve then walks a quarter fewer links. Its link_load reads 0.
  FlowSolver(Simulator& sim, const Topology& topology, Routing routing);
  // A solver over bare links (for tests and custom graphs); only start_path_flow applies.
  FlowSolver(Simulator& sim, std::vector<BytesPerSec> capacities);
  FlowSolver(const FlowSolver&) = delete;
  // Back to the state of a solver just built over the same links, now on `sim` (settings such
  // as local updates back to their defaults too), keeping the memory of its tables. A caller
  // that runs many short, independent simulations over one fabric (the pricer) then allocates
  // the per-link table once instead of once a simulation: at 87k links that allocation, freed
  // and faulted in again each time, cost a fifth of a folded step.
  void reset(Simulator& sim);
  FlowSolver& operator=(const FlowSolver&) = delete;

  FlowId start_flow(int src_gpu, int dst_gpu, Bytes bytes, std::function<void()> on_done,
                    FlowOptions options = {});
  // A flow along `path`; a link the path crosses more than once carries the sum of those hops'
  // weights. One flow along the concatenated paths of several messages is a coflow: they move
  // together, at one rate, that of their most loaded link. `max_rate` caps the flow's rate
  // (FlowOptions::max_rate): max-min sharing treats it as a link of the flow's own.
  FlowId start_path_flow(
      const std::vector<Hop>& path, Bytes bytes, Time latency, std::function<void()> on_done,
      BytesPerSec max_rate = BytesPerSec(std::numeric_limits<double>::infinity()));
  // Removes a flow that has not finished; its on_done never runs. False if already gone.
  bool cancel_flow(FlowId id);

  // Current max-min rate; valid after the solve event at the flow's start time has run.
  BytesPerSec rate(FlowId id) const;
  Bytes remaining(FlowId id) const;
  bool active(FlowId id) const;
  std::size_t active_flows() const { return active_count_; }
  // Sum over active flows of weight x rate on a link.
  BytesPerSec link_load(LinkId link) const;
  BytesPerSec capacity(LinkId link) const { return BytesPerSec(links_[link].capacity); }
  Routing routing() const { return routing_; }
  std::uint64_t solves() const { return solves_; }
  // Local updates (flow_solver_local.cpp), off by default: an arrival or departure that
  // provably leaves every other flow's rate as it is skips the solve. An arriving flow whose
  // path has links of its own, and spare capacity on every shared one for the rate its own
  // links allow, gets that rate; a departing flow whose saturated shared links bottleneck no
  // other flow (each flow on them is held by a saturated link the departing flow does not
  // cross, at its top rate) just leaves. Max-min allocations are the ones where every flow has
  // such a bottleneck, so both are what a solve would give, up to kTolerance and rounding
  // (saturation is judged within kLocalMargin of capacity); a solve's figures may then differ
  // in the last bits, which is why pricing leaves it off.
  void set_local_updates(bool on) { local_updates_ = on; }
  std::uint64_t local_updates() const { return local_updates_done_; }
  static constexpr double kLocalMargin = 1e-6;
  // Finishing together, off (0) by default, and off again after reset(): when the earliest flow
  // finishes, the flows next in finish order whose own finish is within `relative` of their
  // projected duration (start to finish) finish with it (their last bytes counted as sent), so
  // that one solve follows them all. On a fabric whose uneven paths give every flow of a large
  // all-to-all its own rate, each departure re-solved the whole component, one finish at a time
  // (640 GPUs on a 4:1 ToR tier: 95 s a size). Each flow so finished ends at most `relative` of
  // its duration early.
  void set_finish_window(double relative) { finish_window_ = relative; }
  double finish_window() const { return finish_window_; }
  std::uint64_t finished_early() const { return finished_early_; }
  std::uint64_t flows_solved() const { return flows_solved_; }

 private:
  struct Use {
    LinkId link;
    float weight;
    std::uint32_t pos;  // index of this flow's entry in the link's list
  };
  struct Flow {
    std::vector<Use> uses;
    std::function<void()> on_done;
    double remaining = 0.0;  // bytes, as of last_ns
    double rate = 0.0;       // bytes per second
    double max_rate = 0.0;   // bytes per second; infinite when uncapped
    double previous_rate = 0.0;  // rate before the current solve
    std::int64_t last_ns = 0;
    std::int64_t start_ns = 0;
    std::int64_t finish_ns = 0;
    Time latency;
    std::uint32_t generation = 0;
    std::uint32_t heap_pos = kNotInHeap;
    std::uint32_t mark = 0;
    // In fill(): the first (share, link) of the links this flow alone crosses, or its cap
    // (kCapOfFlow | its slot) where that is lower.
    double own_share = 0.0;
    LinkId own_link = kNoLink;
    bool busy = false;
    bool frozen = false;
  };
  struct Entry {
    std::uint32_t flow;
    std::uint32_t use;  // index into the flow's uses
    float weight;       // the use's weight, kept here too: solves read it link by link
  };
  struct LinkState {
    double capacity = 0.0;
    std::vector<Entry> flows;
    double rem = 0.0;
    double wsum = 0.0;
    double load = 0.0;  // sum of weight x rate, kept only with local updates on
    std::uint32_t mark = 0;
    // Scratch of start_path_flow (merging a path's repeated links) and leaves_alone (the
    // departing flow's links): the stamp of the walk that last met the link, and its use.
    std::uint32_t stamp = 0;
    std::uint32_t stamp_use = 0;
    bool dirty = false;
    bool skipped = false;  // in series with a slower link (constructor)
  };
  static constexpr std::uint32_t kNotInHeap = 0xffffffffu;
  static constexpr LinkId kNoLink = 0xffffffffu;
  // In fill()'s order, a key whose id has this bit is flow (id without it)'s rate cap.
  static constexpr LinkId kCapOfFlow = 0x80000000u;

  std::uint32_t acquire();
  // Unlinks a flow; `resolve`: marks its links for the next solve.
  void detach(std::uint32_t f, bool resolve = true);
  void schedule_finish(std::uint32_t f, std::int64_t now_ns);
  // Local updates: whether flow f (linked, not yet solved) can take its own links' rate
  // without a solve, and does; whether f can leave without one; links' load after a solve.
  bool admit_alone(std::uint32_t f);
  bool leaves_alone(std::uint32_t f);
  bool bottlenecked_elsewhere(const Flow& h, std::uint32_t leaving_stamp) const;
  bool saturated(const LinkState& l) const {
    return l.load >= l.capacity * (1.0 - kLocalMargin);
  }
  void refresh_loads();
  void mark_dirty(LinkId l);
  void request_solve();
  void solve();
  // Into comp_links_ and comp_flows_: what the dirty links reach through shared links.
  void collect_component();
  // Max-min rates of comp_flows_ by progressive filling.
  void fill();
  // fill()'s start: every comp link's capacity and weight reset, and into fill_order_ the
  // (share, link) keys filling takes in order (a flow's own links and cap as one key).
  void queue_fill_order();
  // fill(): flow f's rate is `level`; its links' remaining capacity and unfrozen weight drop.
  void freeze(Flow& f, double level);
  void on_finish_event();
  void update_remaining(Flow& f, std::int64_t now_ns);
  void reschedule_engine_event();
  // Indexed min-heap of flows by (finish_ns, slot).
  bool heap_less(std::uint32_t a, std::uint32_t b) const;
  void heap_set(std::uint32_t f);
  void heap_erase(std::uint32_t f);
  void heap_up(std::size_t i);
  void heap_down(std::size_t i);
  void heap_swap(std::size_t i, std::size_t j);

  Simulator* sim_;
  const Topology* topology_ = nullptr;
  Routing routing_ = Routing::kEcmp;
  std::vector<Flow> flows_;
  std::vector<std::uint32_t> free_;
  std::vector<LinkState> links_;
  std::vector<LinkId> dirty_links_;
  std::vector<std::uint32_t> heap_;
  std::vector<Hop> scratch_path_;
  // Scratch of solve() and on_finish_event(), kept to spare an allocation per call.
  std::vector<LinkId> comp_links_;
  std::vector<std::uint32_t> comp_flows_;
  std::vector<std::pair<double, LinkId>> fill_order_, fill_again_;
  std::vector<std::pair<Time, std::function<void()>>> done_;
  EventId solve_event_;
  EventId finish_event_;
  std::int64_t finish_event_ns_ = -1;
  std::uint32_t epoch_ = 0;
  std::uint32_t stamp_ = 0;
  std::size_t active_count_ = 0;
  std::uint64_t solves_ = 0;
  std::uint64_t flows_solved_ = 0;
  bool local_updates_ = false;
  std::uint64_t local_updates_done_ = 0;
  double finish_window_ = 0.0;
  std::uint64_t finished_early_ = 0;
};

}  // namespace megasim::net
