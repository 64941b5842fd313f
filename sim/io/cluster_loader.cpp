#include "io/cluster_loader.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "engine/error.h"
#include "hw/gpu_part.h"
#include "io/json_reader.h"
#include "io/resolve.h"

namespace megasim::io {
namespace {

constexpr double kMaxGbps = 1e5;       // a link of 100 Tb/s is surely a typo
constexpr double kMaxLatencyNs = 1e7;  // 10 ms per hop likewise
constexpr std::int64_t kMaxGpus = 1 << 22;
// Links a GPU of the fabric may take: the shipped fabrics have 2 to 4 (check_fabric_fits).
constexpr double kMaxLinksPerGpu = 64.0;

net::NodeSpec read_node(JsonReader r) {
  net::NodeSpec n;
  r.string("source");
  n.gpus = static_cast<int>(r.integer("gpus", 1, 1024));
  n.gpu = r.string("gpu");
  n.nvlink_per_gpu = gbit_per_s(r.number("nvlink_gbps_per_gpu", 1e-3, kMaxGbps));
  n.nvlink_efficiency = r.number("nvlink_efficiency", 0.01, 1.0);
  n.nvlink_latency = Time::from_ns(r.integer("nvlink_latency_ns", 0, static_cast<std::int64_t>(kMaxLatencyNs)));
  n.nics = static_cast<int>(r.integer("nics", 0, 1024));
  if (n.nics == 0) {
    for (const char* key : {"nic_gbps", "nic_efficiency", "pcie_gbps", "pcie_latency_ns"}) {
      if (r.has(key))
        r.fail(key, "given with node.nics 0: a node without NICs has none to describe");
    }
  }
  if (n.nics > 0) {
    n.nic = gbit_per_s(r.number("nic_gbps", 1e-3, kMaxGbps));
    n.nic_efficiency = r.number("nic_efficiency", 0.01, 1.0);
    n.pcie = gbit_per_s(r.number("pcie_gbps", 1e-3, kMaxGbps));
    n.pcie_latency = Time::from_ns(r.integer("pcie_latency_ns", 0, static_cast<std::int64_t>(kMaxLatencyNs)));
  }
  // Every server is built around an NVSwitch at the NVLink rate (net::Topology); a server of
  // PCIe cards, whose GPUs talk over PCIe (or NVLink bridges in pairs), is not modelled, and
  // described with a token NVLink it priced TP at that rate (26 s a step for a 2-layer model on
  // two GPUs; a new user's trial, 2026-12-06).
  if (hw::gpu_part(n.gpu).form == "pcie")
    r.fail("gpu", "'" + n.gpu +
                      "' names a PCIe card: megasim models servers whose GPUs share an "
                      "NVSwitch (SXM modules), not PCIe cards");
  if (n.nics > 0 && n.gpus > 1 && n.nvlink_per_gpu < n.pcie)
    r.fail("nvlink_gbps_per_gpu",
           fmt::format("{:g} Gb/s, below the {:g} Gb/s of node.pcie_gbps: megasim builds each "
                       "server around an NVSwitch at the NVLink rate, and a server whose GPUs "
                       "talk over PCIe is not modelled",
                       n.nvlink_per_gpu.value() * 8e-9, n.pcie.value() * 8e-9));
  if (n.nics > n.gpus)
    r.fail("nics", "more NICs (" + std::to_string(n.nics) + ") than GPUs (" + std::to_string(n.gpus) +
                       ") per node is not modelled");
  if (n.nics > 0 && n.gpus % n.nics != 0)
    r.fail("nics", std::to_string(n.gpus) + " GPUs do not share " + std::to_string(n.nics) + " NICs evenly");
  r.finish();
  return n;
}

// An aggregation switch's ToRs and spine uplinks fit its ports, and it has one uplink at least.
void check_aggregation_fits(JsonReader& r, const net::FabricSpec& f) {
  // As at the ToR, less than one uplink's worth is no switch a fabric has.
  if (f.agg_oversubscription > f.pod_tors * 1.000001) {
    r.fail("agg_oversubscription",
           fmt::format("{:g}:1, but an aggregation switch's pod_tors {} down ports fill one spine "
                       "uplink at {}:1: at most that with one uplink cabled",
                       f.agg_oversubscription, f.pod_tors, f.pod_tors));
  }
  const auto up = static_cast<std::int64_t>(std::ceil(f.pod_tors / f.agg_oversubscription));
  if (f.pod_tors + up > f.agg_radix) {
    r.fail("pod_tors", fmt::format("an aggregation switch takes pod_tors {} ToR{} and {} spine "
                                   "uplinks (agg_oversubscription {:g}), more than agg_radix {}",
                                   f.pod_tors, f.pod_tors == 1 ? "" : "s", up,
                                   f.agg_oversubscription, f.agg_radix));
  }
}

// What net::Topology builds from a fabric, checked against its ports here so that an error
// names the key: the NICs fit the ports, the tiers hold the cluster, the stated
// oversubscription is what the ports allow, and the fabric is of a size megasim can build.
void check_fabric_fits(JsonReader& r, const net::FabricSpec& f, const net::NodeSpec& n,
                       std::int64_t gpus) {
  const double port_gbps = f.port.value() * 8e-9;
  const double nic_port_gbps = port_gbps / f.port_split;
  if (n.nic.value() * 8e-9 > nic_port_gbps * 1.000001) {
    r.fail("port_split", fmt::format("a NIC of {:g} Gb/s does not fit a ToR port of {:g} Gb/s "
                                     "(port_gbps {:g} / port_split {})",
                                     n.nic.value() * 8e-9, nic_port_gbps, port_gbps, f.port_split));
  }
  const net::FabricLayout l = net::fabric_layout(f, n, gpus);
  if (l.servers_per_tor < 1) {
    r.fail("tor_down_ports", fmt::format("a ToR has {} NIC port{}, fewer than the {} NICs of one "
                                         "server",
                                         l.nic_ports, l.nic_ports == 1 ? "" : "s", n.nics));
  }
  if (f.tiers == 2 && l.tors > f.pod_tors) {
    r.fail("tiers", fmt::format("two tiers hold pod_tors {} ToR{}, the cluster's {} nodes need {}; "
                                "use three tiers or a larger pod_tors",
                                f.pod_tors, f.pod_tors == 1 ? "" : "s", l.nodes, l.tors));
  }
  // The ToR's uplinks are ports of the same speed: its down capacity over its
  // oversubscription must fit them.
  const double down_gbps = nic_port_gbps * static_cast<double>(l.attached);
  const double least = down_gbps / (port_gbps * static_cast<double>(l.uplinks));
  if (f.tor_oversubscription < least * 0.999999) {
    r.fail("tor_oversubscription",
           fmt::format("{:g}:1, but a ToR's {} NIC ports ({:g} Gb/s down) over its {} uplinks of "
                       "{:g} Gb/s are at least {:.3g}:1",
                       f.tor_oversubscription, l.attached, down_gbps, l.uplinks, port_gbps, least));
  }
  // Less than one uplink's worth is no ToR a fabric has (the one uplink cabled ran at a part of
  // its port's rate, until 2026-12-06).
  const double most = down_gbps / port_gbps;
  if (f.tor_oversubscription > most * 1.000001) {
    r.fail("tor_oversubscription",
           fmt::format("{:g}:1, but a ToR's {} NIC ports ({:g} Gb/s down) fill one uplink of {:g} "
                       "Gb/s at {:.3g}:1: at most that with one uplink cabled",
                       f.tor_oversubscription, l.attached, down_gbps, port_gbps, most));
  }
  if (f.tiers == 3) check_aggregation_fits(r, f);
  // The links the topology builds (both directions): NIC cables, cabled ToR uplinks, and with
  // three tiers every pod's aggregation switches to every spine of their planes, which grows
  // with the pods squared where aggregation switches are small (one ToR a pod under 2-port
  // switches: 1,024 pods join planes of 512 spines). The shipped fabrics have 2 to 4 a GPU.
  // Counted over whole ToR groups: a rail-wired group has all its ToRs and uplinks however few
  // of its servers the file describes. (Until 2026-12-06 every port above the down ports was
  // cabled, and the spine links were not counted.)
  const std::int64_t pods = (l.tors + f.pod_tors - 1) / f.pod_tors;
  double spine_links = 0.0;
  if (f.tiers == 3) {
    const double up = static_cast<double>(pods) * f.pod_tors / f.agg_oversubscription;
    const double per_plane = std::max(1.0, std::ceil(up / f.agg_radix - 1e-9));
    spine_links = static_cast<double>(pods) * static_cast<double>(l.cabled) * per_plane;
  }
  const double links =
      2.0 * (static_cast<double>(l.nodes * n.nics + l.tors * l.cabled) + spine_links);
  const std::int64_t group_gpus = l.servers_per_tor * n.gpus;
  if (links > kMaxLinksPerGpu * static_cast<double>(std::max(gpus, group_gpus))) {
    r.fail("pod_tors",
           fmt::format("{} ToR{} a pod under {}-port aggregation switches ({} ToR uplinks each, "
                       "{} pods) build {:.3g} links for {} GPUs, more than the {:g} a GPU megasim "
                       "builds",
                       f.pod_tors, f.pod_tors == 1 ? "" : "s", f.agg_radix, l.cabled, pods, links,
                       gpus, kMaxLinksPerGpu));
  }
}

net::FabricSpec read_fabric(JsonReader r, const net::NodeSpec& n, std::int64_t gpus) {
  net::FabricSpec f;
  r.string("source");
  f.tiers = static_cast<int>(r.integer("tiers", 2, 3));
  f.wiring = r.choice("wiring", {"rail", "tor"}) == "rail" ? net::Wiring::kRail : net::Wiring::kTor;
  f.radix = static_cast<int>(r.integer("switch_radix", 2, 4096));
  f.agg_radix = static_cast<int>(r.integer_or("agg_radix", f.radix, 2, 4096));
  f.port = gbit_per_s(r.number("port_gbps", 1e-3, kMaxGbps));
  f.port_split = static_cast<int>(r.integer_or("port_split", 1, 1, 16));
  f.tor_down_ports = static_cast<int>(r.integer("tor_down_ports", 1, 4096));
  if (f.tor_down_ports >= f.radix)
    r.fail("tor_down_ports", "tor_down_ports " + std::to_string(f.tor_down_ports) +
                                 " leaves no uplink on a switch of radix " + std::to_string(f.radix));
  f.pod_tors = static_cast<int>(r.integer("pod_tors", 1, 4096));
  if (f.pod_tors > f.agg_radix)
    r.fail("pod_tors", "pod_tors " + std::to_string(f.pod_tors) + " exceeds the aggregation radix " +
                           std::to_string(f.agg_radix));
  f.tor_oversubscription = r.number_or("tor_oversubscription", 1.0, 1.0, 64.0);
  if (f.tiers == 2 && r.has("agg_oversubscription"))
    r.fail("agg_oversubscription", "two tiers have no aggregation uplinks to oversubscribe");
  f.agg_oversubscription = r.number_or("agg_oversubscription", 1.0, 1.0, 64.0);
  f.link_efficiency = r.number("link_efficiency", 0.01, 1.0);
  f.hop_latency = Time::from_ns(r.integer("hop_latency_ns", 0, static_cast<std::int64_t>(kMaxLatencyNs)));
  check_fabric_fits(r, f, n, gpus);
  r.finish();
  return f;
}

}  // namespace

net::ClusterSpec load_cluster(const std::filesystem::path& file, FilesRead* read) {
  const Json doc = parse_json_file(file, read);
  if (!doc.is_object())
    throw InputError(file.string() + ": expected a JSON object describing a cluster, found " +
                     json_type_name(doc));
  check_input_kind(doc, InputKind::kCluster, file.string());
  JsonReader r(doc, "", file.string());
  net::ClusterSpec c;
  r.string_or("$schema", "");  // a string when given, as the schemas say
  c.name = r.string("name");
  r.string("source");
  r.text_or("notes", "");
  c.gpus = static_cast<int>(r.integer("gpus", 1, kMaxGpus));
  c.node = read_node(r.object("node"));
  if (c.gpus % c.node.gpus != 0)
    r.fail("gpus", std::to_string(c.gpus) + " GPUs are not a whole number of " +
                       std::to_string(c.node.gpus) + "-GPU nodes");
  if (auto f = r.optional_object("fabric")) {
    if (c.node.nics == 0) r.fail("fabric", "a fabric needs node.nics > 0");
    c.fabric = read_fabric(*f, c.node, c.gpus);
  } else if (c.gpus != c.node.gpus) {
    r.fail("fabric", "missing: " + std::to_string(c.gpus / c.node.gpus) +
                         " nodes need a fabric to reach each other");
  }
  r.finish();
  return c;
}

void check_cluster_size(const net::ClusterSpec& spec, std::int64_t job_gpus,
                        const std::string& option) {
  const std::int64_t limit = cluster_gpu_limit(job_gpus);
  if (spec.gpus > limit) {
    throw InputError(fmt::format(
        "{}: cluster '{}' has {} GPUs, more than the {} megasim builds for {} GPUs (the larger of "
        "{} and {} × those GPUs): the whole topology is built, so describe only the part of the "
        "cluster in use",
        option, spec.name, spec.gpus, limit, job_gpus, kMaxClusterGpusFloor, kMaxClusterPerJobGpu));
  }
}

net::ClusterSpec load_cluster_ref(const std::string& ref) {
  return load_cluster(resolve_data_file(ref, DataKind::kCluster, working_dir(), "--cluster", ""));
}

}  // namespace megasim::io
