#include "io/cluster_loader.h"

#include <fmt/format.h>

#include "engine/error.h"
#include "io/json_reader.h"
#include "io/resolve.h"

namespace megasim::io {
namespace {

constexpr double kMaxGbps = 1e5;       // a link of 100 Tb/s is surely a typo
constexpr double kMaxLatencyNs = 1e7;  // 10 ms per hop likewise
constexpr std::int64_t kMaxGpus = 1 << 22;

net::NodeSpec read_node(JsonReader r) {
  net::NodeSpec n;
  r.string("source");
  n.gpus = static_cast<int>(r.integer("gpus", 1, 1024));
  n.gpu = r.string("gpu");
  n.nvlink_per_gpu = gbit_per_s(r.number("nvlink_gbps_per_gpu", 1e-3, kMaxGbps));
  n.nvlink_efficiency = r.number("nvlink_efficiency", 0.01, 1.0);
  n.nvlink_latency = Time::from_ns(r.integer("nvlink_latency_ns", 0, static_cast<std::int64_t>(kMaxLatencyNs)));
  n.nics = static_cast<int>(r.integer("nics", 0, 64));
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
  if (n.nics > n.gpus)
    r.fail("nics", "more NICs (" + std::to_string(n.nics) + ") than GPUs (" + std::to_string(n.gpus) +
                       ") per node is not modelled");
  if (n.nics > 0 && n.gpus % n.nics != 0)
    r.fail("nics", std::to_string(n.gpus) + " GPUs do not share " + std::to_string(n.nics) + " NICs evenly");
  r.finish();
  return n;
}

net::FabricSpec read_fabric(JsonReader r) {
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
  f.agg_oversubscription = r.number_or("agg_oversubscription", 1.0, 1.0, 64.0);
  f.link_efficiency = r.number("link_efficiency", 0.01, 1.0);
  f.hop_latency = Time::from_ns(r.integer("hop_latency_ns", 0, static_cast<std::int64_t>(kMaxLatencyNs)));
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
  r.ignore("$schema");
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
    c.fabric = read_fabric(*f);
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
  return load_cluster(resolve_data_file(ref, DataKind::kCluster, std::filesystem::current_path(),
                                        "--cluster", "cluster"));
}

}  // namespace megasim::io
