// The cluster as a graph: GPU, NVSwitch, NIC and switch vertices joined by directed links,
// each with a payload capacity and a latency, held as a Boost.Graph adjacency list whose edge
// property is the index of the link in links(). Built once from a ClusterSpec; immutable after,
// so any number of solvers and threads may share one Topology. The graph lives behind an opaque
// TopologyGraph (net/topology_graph.h) so that the many files including this header do not
// parse Boost.Graph; only code that walks the graph includes that header.
//
// GPUs are vertices 0..gpus()-1, numbered server by server (GPU g sits in node g / gpus per
// node). A job's rank r runs on GPU placement[r] (see pack_placement / spread_placement).
//
// Routing is up-down and computed from the Clos structure, not searched: a path inside a node
// goes GPU -> NVSwitch -> GPU; across nodes it leaves through the NIC of the chosen rail (the
// destination GPU's own rail by default, as NCCL's PXN does: the data first crosses NVLink to
// the GPU that owns that rail's NIC), climbs only as high as the common ancestor tier, and comes
// down. Where several uplinks are equal (ToR -> aggregation, aggregation -> spine) ECMP picks
// one by a deterministic hash of (src, dst, entropy), so collisions happen as in real fabrics;
// spraying instead spreads the flow evenly over all of them (a weighted multi-link path).
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "engine/time.h"
#include "engine/units.h"
#include "net/cluster_spec.h"

namespace megasim::net {

using LinkId = std::uint32_t;

enum class VertexKind { kGpu, kNvSwitch, kNic, kTor, kAgg, kSpine };
enum class LinkKind { kNvlink, kPcie, kNicLink, kFabric };
enum class Routing { kEcmp, kSpray };

struct Link {
  BytesPerSec capacity;  // payload bytes per second
  Time latency;
  LinkKind kind = LinkKind::kFabric;
};

// One link of a path and the fraction of the flow's rate it carries (1 for a single path,
// 1/k for each of k sprayed uplinks).
struct Hop {
  LinkId link = 0;
  float weight = 1.0f;
};

struct VertexInfo {
  VertexKind kind = VertexKind::kGpu;
  int index = 0;  // index within its kind
};
struct EdgeInfo {
  LinkId link = 0;
};
// The Boost.Graph adjacency list; defined in net/topology_graph.h.
struct TopologyGraph;

class Topology {
 public:
  // Throws InputError when the fabric cannot hold the cluster (radix too small, ...).
  explicit Topology(const ClusterSpec& spec);
  Topology(const Topology&) = delete;
  Topology& operator=(const Topology&) = delete;
  ~Topology();

  const ClusterSpec& spec() const { return spec_; }
  // Complete only where net/topology_graph.h is included.
  const TopologyGraph& graph() const { return *graph_; }
  const std::vector<Link>& links() const { return links_; }
  const Link& link(LinkId id) const { return links_[id]; }

  int gpus() const { return spec_.gpus; }
  int nodes() const { return nodes_; }
  int gpus_per_node() const { return spec_.node.gpus; }
  int node_of(int gpu) const { return gpu / spec_.node.gpus; }
  int local_index(int gpu) const { return gpu % spec_.node.gpus; }
  // The NIC (rail) a GPU owns: GPUs share NICs evenly when there are fewer NICs than GPUs.
  int rail_of(int gpu) const { return local_index(gpu) * spec_.node.nics / spec_.node.gpus; }
  int tors() const { return tors_; }
  int tor_of_nic(int node, int rail) const;
  int pod_of_tor(int tor) const { return tor / spec_.fabric.pod_tors; }
  int aggs_per_pod() const { return aggs_per_pod_; }
  int spines_per_plane() const { return spines_per_plane_; }
  // Switches of every tier (ToR, aggregation, spine) a build of the cluster needs, by ports
  // (topology.cpp says why not the graph's vertices).
  int switch_count() const;

  // Appends the hops of the path src -> dst to `out` (cleared first). rail < 0 picks the
  // destination GPU's rail. Precondition: src != dst, both < gpus().
  void route(int src, int dst, int rail, Routing routing, std::uint64_t entropy,
             std::vector<Hop>& out) const;
  // The links that serve one GPU alone, or its node's NIC of which it is the owner, in a fixed
  // order: GPU <-> NVSwitch, and for a NIC's owner GPU <-> NIC and NIC <-> ToR. Two GPUs of
  // the same role on two servers list links of the same roles, position by position.
  void own_links(int gpu, std::vector<LinkId>& out) const;
  // Pairs of links that every path crosses both or neither of, with the same weight: a NIC's
  // owner GPU's PCIe link and the NIC's port to its switch, each way. Of such a pair only the
  // slower can limit a flow.
  std::vector<std::pair<LinkId, LinkId>> series_links() const;
  // A coflow's joined paths (FlowSolver::start_path_flow) in their shortest form: each link
  // once, by link order, with the weights of its hops summed. For a path used many times.
  static void merge_repeated_links(std::vector<Hop>& path);
  // Sum of link latencies along the path (the ECMP branch for sprayed paths).
  Time path_latency(const std::vector<Hop>& path) const;

  // The first `gpus` GPUs (consecutive servers: fewest ToRs). Throws InputError if too many.
  std::vector<int> pack_placement(int gpus) const;
  // `gpus` GPUs on servers spread evenly over the cluster (whole servers, stride between them).
  std::vector<int> spread_placement(int gpus) const;

 private:
  LinkId add_link(int from, int to, BytesPerSec capacity, Time latency, LinkKind kind);
  int add_vertex(VertexKind kind, int index);
  void build_fabric();
  void build_spines(BytesPerSec tor_agg_cap);
  void nic_side(int gpu, int rail, bool sending, std::vector<Hop>& out) const;

  ClusterSpec spec_;
  std::unique_ptr<TopologyGraph> graph_;
  std::vector<Link> links_;
  int nodes_ = 0;
  int tors_ = 0;
  int pods_ = 0;
  int aggs_per_pod_ = 0;
  int spines_per_plane_ = 0;
  int servers_per_tor_ = 0;
  // Link ids by structural position (vectors indexed as commented).
  std::vector<LinkId> gpu_up_, gpu_down_;    // GPU <-> NVSwitch, by GPU
  std::vector<LinkId> gpu_nic_, nic_gpu_;    // GPU <-> its NIC, by GPU (owners only)
  std::vector<LinkId> nic_up_, nic_down_;    // NIC <-> ToR, by node * nics + rail
  std::vector<LinkId> tor_up_, tor_down_;    // ToR <-> agg, by tor * aggs_per_pod + a
  std::vector<LinkId> agg_up_, agg_down_;    // agg <-> spine, by (pod * A + a) * S + s
  std::vector<int> nic_vertex_, tor_vertex_, agg_vertex_, spine_vertex_;
};

// Deterministic 64-bit mix (splitmix64 finaliser), the ECMP flow hash.
std::uint64_t flow_hash(std::uint64_t a, std::uint64_t b, std::uint64_t c);

}  // namespace megasim::net
