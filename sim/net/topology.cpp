#include "net/topology.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "net/topology_graph.h"

#include "engine/error.h"

namespace megasim::net {
namespace {

constexpr LinkId kNoLink = 0xffffffffu;

int ceil_div(long long a, long long b) { return static_cast<int>((a + b - 1) / b); }

}  // namespace

std::uint64_t flow_hash(std::uint64_t a, std::uint64_t b, std::uint64_t c) {
  std::uint64_t x = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull) * 0xbf58476d1ce4e5b9ull ^
                    (c + 0x2545f4914f6cdd1dull) * 0x94d049bb133111ebull;
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

int Topology::add_vertex(VertexKind kind, int index) {
  // The property-less overload: the one taking a property looks the vertex up by name first,
  // which GCC 12 at -O2 with sanitizers flags as a use of an uninitialised boost::optional.
  Graph& g = graph_->g;
  const auto v = boost::add_vertex(g);
  g[v] = VertexInfo{kind, index};
  return static_cast<int>(v);
}

LinkId Topology::add_link(int from, int to, BytesPerSec capacity, Time latency, LinkKind kind) {
  const auto id = static_cast<LinkId>(links_.size());
  links_.push_back(Link{capacity, latency, kind});
  boost::add_edge(static_cast<std::size_t>(from), static_cast<std::size_t>(to), EdgeInfo{id},
                  graph_->g);
  return id;
}

Topology::~Topology() = default;

int Topology::switch_count() const {
  const FabricSpec& f = spec_.fabric;
  if (f.tiers == 0) return 0;
  // The graph's aggregation switches are one per ToR uplink with a port per ToR of the pod, and
  // its spines one plane per aggregation switch: routes, not boxes. A pod of a few ToRs (8 of
  // 64 ports) or a 2-tier fabric uses a fraction of each, so the switches a build needs are
  // counted by ports: each pod's ToR uplinks and (three tiers) spine uplinks over agg_radix,
  // and every pod's spine uplinks over agg_radix. MegaScale's and the H100 SuperPOD's fabrics
  // fill theirs (the counts agree); Selene's aggregation switches use 32 of 40 ports (624
  // switches in the graph, 560 by ports) and Llama 3's 576-port ones a third (1,680, 1,599).
  // Until 2026-12-06 the graph's were counted, 32 aggregation switches for a user's 8-ToR pod
  // that needs 2.
  const auto per_agg = static_cast<double>(f.agg_radix);
  double aggs = 0.0, up_ports = 0.0;
  for (int p = 0; p < pods_; ++p) {
    const int pod_tors = std::min(f.pod_tors, tors_ - p * f.pod_tors);
    const double down = static_cast<double>(pod_tors) * aggs_per_pod_;
    const double up = f.tiers == 3 ? std::ceil(down / f.agg_oversubscription - 1e-9) : 0.0;
    aggs += std::ceil((down + up) / per_agg - 1e-9);
    up_ports += up;
  }
  const double spines = f.tiers == 3 ? std::ceil(up_ports / per_agg - 1e-9) : 0.0;
  return tors_ + static_cast<int>(aggs + spines);
}

Topology::Topology(const ClusterSpec& spec)
    : spec_(spec), graph_(std::make_unique<TopologyGraph>()) {
  const NodeSpec& n = spec_.node;
  if (n.gpus <= 0 || spec_.gpus % n.gpus != 0)
    throw InputError(spec_.name + ": gpus " + std::to_string(spec_.gpus) +
                     " is not a whole number of " + std::to_string(n.gpus) + "-GPU nodes");
  if (n.nics > n.gpus)
    throw InputError(spec_.name + ": node.nics " + std::to_string(n.nics) +
                     " exceeds node.gpus " + std::to_string(n.gpus) + " (not modelled)");
  nodes_ = spec_.gpus / n.gpus;
  // GPUs first so that GPU g is vertex g.
  for (int g = 0; g < spec_.gpus; ++g) add_vertex(VertexKind::kGpu, g);
  const BytesPerSec nvlink = n.nvlink_per_gpu * n.nvlink_efficiency;
  gpu_up_.resize(static_cast<std::size_t>(spec_.gpus));
  gpu_down_.resize(gpu_up_.size());
  gpu_nic_.assign(gpu_up_.size(), kNoLink);
  nic_gpu_.assign(gpu_up_.size(), kNoLink);
  for (int node = 0; node < nodes_; ++node) {
    const int sw = add_vertex(VertexKind::kNvSwitch, node);
    for (int l = 0; l < n.gpus; ++l) {
      const int g = node * n.gpus + l;
      gpu_up_[static_cast<std::size_t>(g)] = add_link(g, sw, nvlink, n.nvlink_latency, LinkKind::kNvlink);
      gpu_down_[static_cast<std::size_t>(g)] = add_link(sw, g, nvlink, n.nvlink_latency, LinkKind::kNvlink);
    }
    if (spec_.fabric.tiers == 0) continue;
    for (int r = 0; r < n.nics; ++r) {
      const int v = add_vertex(VertexKind::kNic, node * n.nics + r);
      nic_vertex_.push_back(v);
      const int owner = node * n.gpus + r * n.gpus / n.nics;
      gpu_nic_[static_cast<std::size_t>(owner)] = add_link(owner, v, n.pcie, n.pcie_latency, LinkKind::kPcie);
      nic_gpu_[static_cast<std::size_t>(owner)] = add_link(v, owner, n.pcie, n.pcie_latency, LinkKind::kPcie);
    }
  }
  if (spec_.fabric.tiers != 0) build_fabric();
}

int Topology::tor_of_nic(int node, int rail) const {
  const int group = node / servers_per_tor_;
  return spec_.fabric.wiring == Wiring::kRail ? group * spec_.node.nics + rail : group;
}

FabricLayout fabric_layout(const FabricSpec& f, const NodeSpec& n, std::int64_t gpus) {
  FabricLayout l;
  l.nic_ports = std::int64_t{f.tor_down_ports} * f.port_split;
  const bool rail = f.wiring == Wiring::kRail;
  l.servers_per_tor = rail ? l.nic_ports : (n.nics > 0 ? l.nic_ports / n.nics : 0);
  l.nodes = n.gpus > 0 ? gpus / n.gpus : 0;
  const std::int64_t groups =
      l.servers_per_tor > 0 ? (l.nodes + l.servers_per_tor - 1) / l.servers_per_tor : 0;
  l.tors = rail ? groups * n.nics : groups;
  l.uplinks = f.radix - f.tor_down_ports;
  // A ToR-wired ToR's ports beyond its whole servers carry no NIC.
  l.attached = rail ? l.nic_ports : l.servers_per_tor * n.nics;
  // Down capacity over the oversubscription in whole ports, within a part in 10^9 of a whole
  // number (the shipped fabrics' 1:1 fill their uplinks exactly).
  const double needed = static_cast<double>(l.attached) / static_cast<double>(f.port_split) /
                        std::max(f.tor_oversubscription, 1e-9);
  l.cabled = std::clamp<std::int64_t>(static_cast<std::int64_t>(std::ceil(needed - 1e-9)), 1,
                                      std::max<std::int64_t>(l.uplinks, 1));
  return l;
}

void Topology::build_fabric() {
  const FabricSpec& f = spec_.fabric;
  const NodeSpec& n = spec_.node;
  const std::string where = spec_.name + ": fabric: ";
  if (f.tiers != 2 && f.tiers != 3)
    throw InputError(where + "tiers must be 2 or 3, found " + std::to_string(f.tiers));
  const FabricLayout layout = fabric_layout(f, n, spec_.gpus);
  const auto nic_ports = static_cast<int>(layout.nic_ports);
  const BytesPerSec nic_port = f.port / static_cast<double>(f.port_split);
  if (n.nic > nic_port * 1.000001)
    throw InputError(where + "a NIC of " + std::to_string(n.nic.value() * 8e-9) +
                     " Gb/s does not fit a ToR port of " + std::to_string(nic_port.value() * 8e-9) +
                     " Gb/s (port_gbps / port_split)");
  servers_per_tor_ = static_cast<int>(layout.servers_per_tor);
  if (servers_per_tor_ < 1)
    throw InputError(where + "a ToR has " + std::to_string(nic_ports) +
                     (nic_ports == 1 ? " NIC port" : " NIC ports") + ", fewer than the " +
                     std::to_string(n.nics) + " NICs of one server");
  tors_ = static_cast<int>(layout.tors);
  aggs_per_pod_ = static_cast<int>(layout.cabled);
  if (layout.uplinks < 1)
    throw InputError(where + "tor_down_ports " + std::to_string(f.tor_down_ports) +
                     " leaves no uplink on a radix-" + std::to_string(f.radix) + " ToR");
  if (f.pod_tors > f.agg_radix)
    throw InputError(where + "pod_tors " + std::to_string(f.pod_tors) + " exceeds agg_radix " +
                     std::to_string(f.agg_radix));
  pods_ = ceil_div(tors_, f.pod_tors);
  if (f.tiers == 2 && pods_ > 1)
    throw InputError(where + "two tiers hold " + std::to_string(f.pod_tors) +
                     (f.pod_tors == 1 ? " ToR" : " ToRs") + ", the cluster needs " +
                     std::to_string(tors_) + "; use three tiers or a larger pod_tors");

  const double link_eff = f.link_efficiency;
  const BytesPerSec nic_cap = n.nic * n.nic_efficiency;
  // NIC <-> ToR.
  for (int t = 0; t < tors_; ++t) tor_vertex_.push_back(add_vertex(VertexKind::kTor, t));
  nic_up_.resize(nic_vertex_.size());
  nic_down_.resize(nic_vertex_.size());
  for (int node = 0; node < nodes_; ++node) {
    for (int r = 0; r < n.nics; ++r) {
      const auto i = static_cast<std::size_t>(node * n.nics + r);
      const int tor = tor_vertex_[static_cast<std::size_t>(tor_of_nic(node, r))];
      nic_up_[i] = add_link(nic_vertex_[i], tor, nic_cap, f.hop_latency, LinkKind::kNicLink);
      nic_down_[i] = add_link(tor, nic_vertex_[i], nic_cap, f.hop_latency, LinkKind::kNicLink);
    }
  }
  // ToR <-> aggregation: every ToR of a pod reaches every aggregation switch of the pod by one
  // uplink at the port's rate; the uplinks cabled carry the ToR's downlink capacity over its
  // oversubscription, rounded up to whole ports (fabric_layout). Until 2026-12-06 a ratio that
  // gives no whole number of ports ran every cabled uplink below its port's rate (6:1 on 20
  // ports: 4 uplinks at 167 of 200 Gb/s, a ring's flows on one of them slower than at 20:1).
  const BytesPerSec tor_agg_cap = f.port * link_eff;
  for (int a = 0; a < pods_ * aggs_per_pod_; ++a) agg_vertex_.push_back(add_vertex(VertexKind::kAgg, a));
  tor_up_.resize(static_cast<std::size_t>(tors_ * aggs_per_pod_));
  tor_down_.resize(tor_up_.size());
  for (int t = 0; t < tors_; ++t) {
    for (int a = 0; a < aggs_per_pod_; ++a) {
      const int agg = agg_vertex_[static_cast<std::size_t>(pod_of_tor(t) * aggs_per_pod_ + a)];
      const auto i = static_cast<std::size_t>(t * aggs_per_pod_ + a);
      tor_up_[i] = add_link(tor_vertex_[static_cast<std::size_t>(t)], agg, tor_agg_cap, f.hop_latency, LinkKind::kFabric);
      tor_down_[i] = add_link(agg, tor_vertex_[static_cast<std::size_t>(t)], tor_agg_cap, f.hop_latency, LinkKind::kFabric);
    }
  }
  if (f.tiers == 3) build_spines(tor_agg_cap);
}

// Aggregation <-> spine: aggregation switch a of every pod joins spine plane a. Parallel links
// between one aggregation and one spine are merged into one link of their summed capacity (ECMP
// spreads over spines, not over parallel cables: an approximation).
void Topology::build_spines(BytesPerSec tor_agg_cap) {
  const FabricSpec& f = spec_.fabric;
  const double up_ports = static_cast<double>(f.pod_tors) / f.agg_oversubscription;
  spines_per_plane_ = std::max(1, ceil_div(static_cast<long long>(pods_ * up_ports + 0.999999), f.agg_radix));
  const BytesPerSec agg_up_cap = tor_agg_cap * static_cast<double>(f.pod_tors) / f.agg_oversubscription;
  const BytesPerSec agg_spine_cap = agg_up_cap / static_cast<double>(spines_per_plane_);
  for (int s = 0; s < aggs_per_pod_ * spines_per_plane_; ++s)
    spine_vertex_.push_back(add_vertex(VertexKind::kSpine, s));
  agg_up_.resize(static_cast<std::size_t>(pods_ * aggs_per_pod_ * spines_per_plane_));
  agg_down_.resize(agg_up_.size());
  for (int p = 0; p < pods_; ++p) {
    for (int a = 0; a < aggs_per_pod_; ++a) {
      const int agg = agg_vertex_[static_cast<std::size_t>(p * aggs_per_pod_ + a)];
      for (int s = 0; s < spines_per_plane_; ++s) {
        const int spine = spine_vertex_[static_cast<std::size_t>(a * spines_per_plane_ + s)];
        const auto i = static_cast<std::size_t>((p * aggs_per_pod_ + a) * spines_per_plane_ + s);
        agg_up_[i] = add_link(agg, spine, agg_spine_cap, f.hop_latency, LinkKind::kFabric);
        agg_down_[i] = add_link(spine, agg, agg_spine_cap, f.hop_latency, LinkKind::kFabric);
      }
    }
  }
}

// The GPU <-> NIC part of an inter-node path: over NVLink to the rail's owner GPU if needed,
// then PCIe to the NIC (sending), or the mirror image (receiving).
void Topology::nic_side(int gpu, int rail, bool sending, std::vector<Hop>& out) const {
  const int owner = node_of(gpu) * spec_.node.gpus + rail * spec_.node.gpus / spec_.node.nics;
  const auto g = static_cast<std::size_t>(gpu);
  const auto o = static_cast<std::size_t>(owner);
  const auto nic = static_cast<std::size_t>(node_of(gpu) * spec_.node.nics + rail);
  if (sending) {
    if (owner != gpu) {
      out.push_back({gpu_up_[g], 1.0f});
      out.push_back({gpu_down_[o], 1.0f});
    }
    out.push_back({gpu_nic_[o], 1.0f});
    out.push_back({nic_up_[nic], 1.0f});
  } else {
    out.push_back({nic_down_[nic], 1.0f});
    out.push_back({nic_gpu_[o], 1.0f});
    if (owner != gpu) {
      out.push_back({gpu_up_[o], 1.0f});
      out.push_back({gpu_down_[g], 1.0f});
    }
  }
}

void Topology::route(int src, int dst, int rail, Routing routing, std::uint64_t entropy,
                     std::vector<Hop>& out) const {
  out.clear();
  const int sn = node_of(src), dn = node_of(dst);
  if (sn == dn) {
    out.push_back({gpu_up_[static_cast<std::size_t>(src)], 1.0f});
    out.push_back({gpu_down_[static_cast<std::size_t>(dst)], 1.0f});
    return;
  }
  if (spec_.fabric.tiers == 0)
    throw InputError(spec_.name + ": GPU " + std::to_string(src) + " and GPU " + std::to_string(dst) +
                     " are on different nodes but the cluster has no fabric");
  if (rail < 0) rail = rail_of(dst);
  nic_side(src, rail, true, out);
  const int ts = tor_of_nic(sn, rail), td = tor_of_nic(dn, rail);
  if (ts != td) {
    const int ps = pod_of_tor(ts), pd = pod_of_tor(td);
    const int A = aggs_per_pod_, S = spines_per_plane_;
    const auto up = [&](int a) { return tor_up_[static_cast<std::size_t>(ts * A + a)]; };
    const auto down = [&](int a) { return tor_down_[static_cast<std::size_t>(td * A + a)]; };
    const auto a_up = [&](int a, int s) { return agg_up_[static_cast<std::size_t>((ps * A + a) * S + s)]; };
    const auto a_down = [&](int a, int s) { return agg_down_[static_cast<std::size_t>((pd * A + a) * S + s)]; };
    if (routing == Routing::kEcmp) {
      const std::uint64_t h = flow_hash(static_cast<std::uint64_t>(src), static_cast<std::uint64_t>(dst), entropy);
      const int a = static_cast<int>(h % static_cast<std::uint64_t>(A));
      out.push_back({up(a), 1.0f});
      if (ps != pd) {
        const int s = static_cast<int>((h >> 32) % static_cast<std::uint64_t>(S));
        out.push_back({a_up(a, s), 1.0f});
        out.push_back({a_down(a, s), 1.0f});
      }
      out.push_back({down(a), 1.0f});
    } else {
      const float wa = 1.0f / static_cast<float>(A);
      for (int a = 0; a < A; ++a) out.push_back({up(a), wa});
      if (ps != pd) {
        const float ws = wa / static_cast<float>(S);
        for (int a = 0; a < A; ++a)
          for (int s = 0; s < S; ++s) {
            out.push_back({a_up(a, s), ws});
            out.push_back({a_down(a, s), ws});
          }
      }
      for (int a = 0; a < A; ++a) out.push_back({down(a), wa});
    }
  }
  nic_side(dst, rail, false, out);
}

void Topology::own_links(int gpu, std::vector<LinkId>& out) const {
  out.clear();
  const auto g = static_cast<std::size_t>(gpu);
  out.push_back(gpu_up_[g]);
  out.push_back(gpu_down_[g]);
  // Without a fabric (one node) or NICs none is built: the GPU owns its NVLink pair alone (a
  // node of no NICs divided by zero here until 2026-12-03).
  if (spec_.fabric.tiers == 0 || spec_.node.nics == 0) return;
  const int rail = rail_of(gpu);
  const int owner = node_of(gpu) * spec_.node.gpus + rail * spec_.node.gpus / spec_.node.nics;
  if (owner != gpu) return;
  out.push_back(gpu_nic_[g]);
  out.push_back(nic_gpu_[g]);
  const auto nic = static_cast<std::size_t>(node_of(gpu) * spec_.node.nics + rail);
  out.push_back(nic_up_[nic]);
  out.push_back(nic_down_[nic]);
}

std::vector<std::pair<LinkId, LinkId>> Topology::series_links() const {
  std::vector<std::pair<LinkId, LinkId>> pairs;
  if (spec_.fabric.tiers == 0) return pairs;  // no NIC port: the PCIe links stand alone
  for (int node = 0; node < nodes_; ++node) {
    for (int rail = 0; rail < spec_.node.nics; ++rail) {
      const auto owner = static_cast<std::size_t>(node * spec_.node.gpus + rail * spec_.node.gpus / spec_.node.nics);
      const auto nic = static_cast<std::size_t>(node * spec_.node.nics + rail);
      pairs.emplace_back(gpu_nic_[owner], nic_up_[nic]);
      pairs.emplace_back(nic_down_[nic], nic_gpu_[owner]);
    }
  }
  return pairs;
}

void Topology::merge_repeated_links(std::vector<Hop>& path) {
  // Stable: a repeated link's weights are added in path order, whatever the standard library.
  std::stable_sort(path.begin(), path.end(),
                   [](const Hop& a, const Hop& b) { return a.link < b.link; });
  std::size_t kept = 0;
  for (std::size_t i = 0; i < path.size(); ++i) {
    if (kept > 0 && path[kept - 1].link == path[i].link) {
      path[kept - 1].weight += path[i].weight;
    } else {
      path[kept++] = path[i];
    }
  }
  path.resize(kept);
}

Time Topology::path_latency(const std::vector<Hop>& path) const {
  // A sprayed path lists the parallel links of a tier with weights summing to 1, so the
  // weighted sum is the latency of one branch.
  double total_ns = 0.0;
  for (const Hop& h : path) total_ns += static_cast<double>(links_[h.link].latency.ns()) * h.weight;
  return Time::from_ns_rounded(total_ns);
}

std::vector<int> Topology::pack_placement(int gpus) const {
  if (gpus < 1 || gpus > spec_.gpus)
    throw InputError(spec_.name + ": a job of " + std::to_string(gpus) + " GPUs does not fit the " +
                     std::to_string(spec_.gpus) + " GPUs of the cluster");
  std::vector<int> p(static_cast<std::size_t>(gpus));
  for (int i = 0; i < gpus; ++i) p[static_cast<std::size_t>(i)] = i;
  return p;
}

std::vector<int> Topology::spread_placement(int gpus) const {
  const int g = spec_.node.gpus;
  if (gpus < 1 || gpus > spec_.gpus || gpus % g != 0)
    throw InputError(spec_.name + ": a spread placement needs whole " + std::to_string(g) +
                     "-GPU servers, at most " + std::to_string(spec_.gpus) + " GPUs; asked for " +
                     std::to_string(gpus));
  const int servers = gpus / g;
  const int stride = nodes_ / servers;
  std::vector<int> p;
  p.reserve(static_cast<std::size_t>(gpus));
  for (int s = 0; s < servers; ++s)
    for (int l = 0; l < g; ++l) p.push_back(s * stride * g + l);
  return p;
}

}  // namespace megasim::net
