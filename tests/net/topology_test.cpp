// The shipped clusters load strictly and build; up-down routes are shortest paths in the graph;
// ECMP is deterministic and spraying spreads a flow evenly.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <boost/graph/breadth_first_search.hpp>

#include "engine/error.h"
#include "input_error_of.h"
#include "io/cluster_loader.h"
#include "net/topology_graph.h"

using namespace megasim;

namespace {

std::filesystem::path topo(const std::string& name) {
  return std::filesystem::path(MEGASIM_SOURCE_DIR) / "topologies" / (name + ".json");
}

std::vector<int> bfs_distances(const net::Graph& g, int src) {
  std::vector<int> d(boost::num_vertices(g), -1);
  std::vector<std::size_t> queue{static_cast<std::size_t>(src)};
  d[static_cast<std::size_t>(src)] = 0;
  for (std::size_t i = 0; i < queue.size(); ++i) {
    for (auto [e, end] = boost::out_edges(queue[i], g); e != end; ++e) {
      const auto v = boost::target(*e, g);
      if (d[v] < 0) {
        d[v] = d[queue[i]] + 1;
        queue.push_back(v);
      }
    }
  }
  return d;
}

std::string write_temp(const std::string& name, const std::string& text) {
  const auto p = std::filesystem::temp_directory_path() / name;
  std::ofstream(p) << text;
  return p.string();
}

}  // namespace

TEST_CASE("every shipped cluster loads and builds") {
  std::vector<std::filesystem::path> files;
  for (const auto& f : std::filesystem::directory_iterator(
           std::filesystem::path(MEGASIM_SOURCE_DIR) / "topologies")) {
    if (f.path().extension() == ".json") files.push_back(f.path());
  }
  REQUIRE(files.size() >= 7);  // the seven of 2026-12-03; a new one joins by being there
  for (const auto& file : files) {
    CAPTURE(file.filename().string());
    const net::ClusterSpec spec = io::load_cluster(file);
    const net::Topology t(spec);
    CHECK(t.gpus() == spec.gpus);
    CHECK(boost::num_edges(t.graph().g) == t.links().size());
  }
}

TEST_CASE("MegaScale fabric has the switch counts its description implies") {
  // 1536 servers; a rail switch takes 32 x 2 = 64 servers, so 24 groups x 8 rails = 192 ToRs;
  // pods of 32 ToRs: 6 pods of 32 aggregation switches (64 - 32 uplinks each);
  // each plane: 6 pods x 32 uplinks / 64 ports = 3 spines.
  const net::Topology t(io::load_cluster(topo("megascale-a100-12288")));
  CHECK(t.nodes() == 1536);
  CHECK(t.tors() == 192);
  CHECK(t.aggs_per_pod() == 32);
  CHECK(t.spines_per_plane() == 3);
  // GPUs + NVSwitches + NICs + ToRs + 6 x 32 aggregation + 32 x 3 spines.
  CHECK(boost::num_vertices(t.graph().g) == 12288u + 1536u + 12288u + 192u + 192u + 96u);
  CHECK(t.switch_count() == 192 + 192 + 96);
  // 200G NIC at 98.0 % payload efficiency.
  CHECK(t.link(0).capacity.value() == doctest::Approx(300e9 * 0.8));
}

TEST_CASE("up-down routes are shortest paths") {
  const net::Topology t(io::load_cluster(topo("megascale-a100-12288")));
  const std::vector<int> d = bfs_distances(t.graph().g, 0);
  std::vector<net::Hop> p;
  // Same node: GPU -> NVSwitch -> GPU.
  t.route(0, 5, -1, net::Routing::kEcmp, 0, p);
  CHECK(p.size() == 2);
  CHECK(d[5] == 2);
  // Same rail ToR (servers 0 and 1): GPU -> NIC -> ToR -> NIC -> GPU.
  t.route(0, 8, -1, net::Routing::kEcmp, 0, p);
  CHECK(p.size() == 4);
  CHECK(d[8] == 4);
  // Same pod, other ToR group (server 64): + ToR -> agg -> ToR.
  t.route(0, 64 * 8, -1, net::Routing::kEcmp, 0, p);
  CHECK(p.size() == 6);
  CHECK(d[64 * 8] == 6);
  // Other pod (server 1535): + agg -> spine -> agg.
  t.route(0, 12280, -1, net::Routing::kEcmp, 0, p);
  CHECK(p.size() == 8);
  CHECK(d[12280] == 8);
}

TEST_CASE("ECMP hashes deterministically and spraying spreads the flow evenly") {
  const net::Topology t(io::load_cluster(topo("megascale-a100-12288")));
  std::vector<net::Hop> a, b;
  t.route(0, 12280, -1, net::Routing::kEcmp, 3, a);
  t.route(0, 12280, -1, net::Routing::kEcmp, 3, b);
  CHECK(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) CHECK(a[i].link == b[i].link);
  // Different entropy reaches more than one of the 32 uplinks.
  std::map<net::LinkId, int> uplinks;
  for (std::uint64_t e = 0; e < 64; ++e) {
    t.route(0, 12280, -1, net::Routing::kEcmp, e, a);
    ++uplinks[a[2].link];
  }
  CHECK(uplinks.size() > 8);
  // Spray: 4 single links, 32 uplinks, 32 x 3 agg -> spine and back, 32 downlinks; the
  // weights of the sprayed tiers sum to 4 (one per tier).
  t.route(0, 12280, -1, net::Routing::kSpray, 0, a);
  CHECK(a.size() == 4 + 32 + 2 * 96 + 32);
  double w = 0.0;
  for (const auto& h : a) w += h.weight;
  CHECK(w == doctest::Approx(8.0).epsilon(1e-5));
}

TEST_CASE("ECMP reaches every aggregation-to-spine link: the spine drawn apart from the plane") {
  // A flow leaving its pod hashes onto one of A aggregation switches (each its own spine
  // plane) and one of the plane's S spines: A x S agg -> spine links. The spine is drawn from
  // the hash's high half, the aggregation from its low: a spine index tied to the plane's
  // (the low half again) reaches lcm(A, S) of them where A and S share a factor (Selene's 20
  // and 6: 60 of 120), a fixed one A, and the flows that remain collide (the forty-second
  // session's mutation campaign found no test that saw it).
  struct Case {
    const char* cluster;
    int last_gpu, aggs, spines;
  };
  for (const Case& c :
       {Case{"megascale-a100-12288", 12280, 32, 3}, Case{"selene-a100-4480", 4472, 20, 6}}) {
    CAPTURE(c.cluster);
    const net::Topology t(io::load_cluster(topo(c.cluster)));
    REQUIRE(t.aggs_per_pod() == c.aggs);
    REQUIRE(t.spines_per_plane() == c.spines);
    std::vector<net::Hop> p;
    std::map<net::LinkId, int> spine_links;
    std::map<net::LinkId, std::map<net::LinkId, int>> by_plane;
    const int links = c.aggs * c.spines;
    for (std::uint64_t e = 0; e < static_cast<std::uint64_t>(40 * links); ++e) {
      t.route(0, c.last_gpu, -1, net::Routing::kEcmp, e, p);
      REQUIRE(p.size() == 8);
      ++spine_links[p[3].link];
      ++by_plane[p[2].link][p[3].link];
    }
    CHECK(spine_links.size() == static_cast<std::size_t>(links));
    // About evenly: 40 flows a link; none under a third of that.
    for (const auto& [link, n] : spine_links) CHECK(n > 13);
    CHECK(by_plane.size() == static_cast<std::size_t>(c.aggs));
    for (const auto& [up, spines] : by_plane)
      CHECK(spines.size() == static_cast<std::size_t>(c.spines));
  }
}

TEST_CASE("PXN: a flow to another rail crosses NVLink to the rail's GPU first") {
  // GPU 1 of server 0 to GPU 0 of server 1 leaves by rail 0: NVLink to GPU 0, then its NIC.
  const net::Topology t(io::load_cluster(topo("megascale-a100-12288")));
  std::vector<net::Hop> p;
  t.route(1, 8, -1, net::Routing::kEcmp, 0, p);
  REQUIRE(p.size() == 6);
  CHECK(t.link(p[0].link).kind == net::LinkKind::kNvlink);
  CHECK(t.link(p[1].link).kind == net::LinkKind::kNvlink);
  CHECK(t.link(p[2].link).kind == net::LinkKind::kPcie);
}

TEST_CASE("placement packs consecutive servers or spreads whole servers") {
  const net::Topology t(io::load_cluster(topo("megascale-a100-12288")));
  const auto packed = t.pack_placement(16);
  CHECK(packed.back() == 15);
  const auto spread = t.spread_placement(16);
  CHECK(spread[8] == 768 * 8);  // 2 servers over 1536: stride 768
  CHECK_THROWS_AS(t.pack_placement(20000), InputError);
  CHECK_THROWS_AS(t.spread_placement(12), InputError);
}

TEST_CASE("cluster loader rejects unknown keys and fabrics that cannot hold the cluster") {
  std::string text = R"({"name":"x","source":"s","gpus":16,
    "node":{"source":"s","gpus":8,"gpu":"a100-sxm4-80gb","nvlink_gbps_per_gpu":2400,"nvlink_efficiency":0.8,
            "nvlink_latency_ns":100,"nics":8,"nic_gbps":200,"nic_efficiency":0.98,"pcie_gbps":252,"pcie_latency_ns":500},
    "fabric":{"source":"s","tiers":2,"wiring":"rail","switch_radix":64,"port_gbps":400,"port_split":2,
              "tor_down_ports":32,"pod_tors":32,"link_efficiency":0.98,"hop_latency_ns":600,"tiers_":1}})";
  try {
    io::load_cluster(write_temp("megasim_bad_cluster.json", text));
    FAIL("expected InputError");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("fabric.tiers_") != std::string::npos);
    CHECK(std::string(e.what()).find("tiers") != std::string::npos);
  }
  // A 400G NIC on a split 200G port.
  std::string too_fast = text;
  too_fast.replace(too_fast.find(",\"tiers_\":1"), 11, "");
  too_fast.replace(too_fast.find("\"nic_gbps\":200"), 14, "\"nic_gbps\":400");
  CHECK_THROWS_WITH_AS(io::load_cluster(write_temp("megasim_fast_nic.json", too_fast)),
                       doctest::Contains("fabric.port_split: a NIC of 400 Gb/s does not fit a "
                                         "ToR port of 200 Gb/s"),
                       InputError);
}

TEST_CASE("cluster loader takes a one-server part of a rail-wired fabric") {
  // One server of MegaScale's fabric: its ToR group's 8 ToRs and their uplinks stand whole
  // (megasim builds them), which the link bound counts over the whole group.
  std::ifstream in(topo("megascale-a100-12288"));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string gpus = "\"gpus\": 12288";
  REQUIRE(text.find(gpus) != std::string::npos);
  text.replace(text.find(gpus), gpus.size(), "\"gpus\": 8");
  const net::ClusterSpec spec = io::load_cluster(write_temp("megasim_one_server.json", text));
  CHECK(net::Topology(spec).gpus() == 8);
}

TEST_CASE("a one-server cluster without NICs: each GPU owns its NVLink pair alone") {
  // node.nics 0 is a valid node (the loader refuses the NIC keys beside it); own_links divided
  // by the NIC count before it looked at the fabric, and a folded step on such a server died of
  // SIGFPE.
  std::ifstream in(topo("dgx-a100-8"));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const std::string key : {"nic_gbps", "nic_efficiency", "pcie_gbps", "pcie_latency_ns"}) {
    const auto at = text.find("\"" + key + "\"");
    REQUIRE(at != std::string::npos);
    text.erase(at, text.find('\n', at) - at + 1);
  }
  const std::string nics = "\"nics\": 8,";
  REQUIRE(text.find(nics) != std::string::npos);
  text.replace(text.find(nics), nics.size(), "\"nics\": 0");
  const net::Topology t(io::load_cluster(write_temp("megasim_no_nics.json", text)));
  std::vector<net::LinkId> own;
  for (int g = 0; g < t.gpus(); ++g) {
    t.own_links(g, own);
    CHECK(own.size() == 2);
  }
}

TEST_CASE(
    "switches are counted by the ports a build needs, an oversubscribed ToR's uplinks cabled") {
  // 64 servers of 4 NICs on 8 ToR-wired ToRs of 32 down ports, two tiers of 64-port switches.
  // At 1:1 a ToR cables 32 uplinks: 8 x 32 = 256 ToR ports over 64-port switches, 4 of them;
  // at 2:1 it cables 16 at the port's full rate (2 switches), at 4:1 8 (1). The graph built one
  // aggregation switch per uplink port, 32 whatever the pod or the oversubscription, and the
  // power model counted them (a user's trial, 2026-12-06: 40 switches where 10 do).
  const std::string text = R"({"name":"mine","source":"s","gpus":512,
    "node":{"source":"s","gpus":8,"gpu":"h100-sxm5-80gb","nvlink_gbps_per_gpu":3600,"nvlink_efficiency":0.824,
            "nvlink_latency_ns":150,"nics":4,"nic_gbps":400,"nic_efficiency":0.98,"pcie_gbps":504,"pcie_latency_ns":500},
    "fabric":{"source":"s","tiers":2,"wiring":"tor","switch_radix":64,"port_gbps":400,"port_split":1,
              "tor_down_ports":32,"pod_tors":8,"tor_oversubscription":OVER,"link_efficiency":0.98,"hop_latency_ns":500}})";
  // A ratio of no whole number of ports cables the next whole number, each at the port's rate
  // (6:1: 5.33 ports' worth on 6 uplinks of 400 Gb/s; until 2026-12-06 each ran at 356 Gb/s, and
  // a ring's flows hashed onto one ran slower than at 32:1 on one uplink).
  for (const auto& [over, uplinks, aggs] :
       {std::tuple{"1", 32, 4}, {"2", 16, 2}, {"4", 8, 1}, {"6", 6, 1}, {"1.5", 22, 3}}) {
    CAPTURE(over);
    std::string t = text;
    t.replace(t.find("OVER"), 4, over);
    const net::Topology topology(io::load_cluster(write_temp("megasim_switch_count.json", t)));
    CHECK(topology.tors() == 8);
    CHECK(topology.aggs_per_pod() == uplinks);
    CHECK(topology.switch_count() == 8 + aggs);
    for (const net::Link& link : topology.links()) {
      if (link.kind == net::LinkKind::kFabric) {
        CHECK(link.capacity.value() == doctest::Approx(400e9 / 8 * 0.98));
      }
    }
  }
  // Less than one uplink's worth is refused (64:1 on 32 NIC ports: one uplink ran at half rate).
  std::string half = text;
  half.replace(half.find("OVER"), 4, "64");
  const std::string refused = test::input_error_of(
      [&] { (void)io::load_cluster(write_temp("megasim_switch_count.json", half)); });
  CHECK(refused.find("fabric.tor_oversubscription: 64:1, but a ToR's 32 NIC ports (12800 Gb/s "
                     "down) fill one uplink of 400 Gb/s at 32:1") != std::string::npos);
  // NVIDIA's DGX SuperPOD of 4 scalable units (1,024 GPUs, two tiers of 64-port switches): 32
  // leaf and 16 spine switches, as its reference architecture builds it (the graph has 32).
  const net::Topology superpod(io::load_cluster(topo("dgx-h200-superpod-1024")));
  CHECK(superpod.switch_count() == 32 + 16);
  // MegaScale's three tiers fill every port: as many as the graph has (192 + 192 + 96, above).
  CHECK(net::Topology(io::load_cluster(topo("megascale-a100-12288"))).switch_count() ==
        192 + 192 + 96);
  // Selene: 224 ToRs in 14 pods of 16, 20 uplinks each: a pod's 320 down and 320 up ports over
  // 40-port switches, 16 a pod; 14 x 320 spine ports over 40, 112 spines (the graph: 20 a pod
  // and 20 planes of 6). Llama 3: 1,536 ToRs in 8 pods of 192, 16 uplinks each, 1:7 above: a
  // pod's 3,072 down and 439 up ports over 576, 7 a pod; 3,512 spine ports, 7 spines.
  CHECK(net::Topology(io::load_cluster(topo("selene-a100-4480"))).switch_count() ==
        224 + 14 * 16 + 112);
  CHECK(net::Topology(io::load_cluster(topo("llama3-h100-24576"))).switch_count() ==
        1536 + 8 * 7 + 7);
}
