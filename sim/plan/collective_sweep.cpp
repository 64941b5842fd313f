#include "plan/collective_sweep.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "engine/error.h"
#include "engine/simulator.h"
#include "io/cluster_loader.h"
#include "io/collective_constants_reader.h"
#include "io/device_profile_loader.h"
#include "io/link_bound.h"
#include "io/resolve.h"
#include "net/flow_solver.h"
#include "net/topology.h"
#include "plan/evaluate.h"

namespace megasim::plan {
namespace {

// A sweep's flows finish together within this share of their duration
// (net::FlowSolver::set_finish_window): a flow ends at most 0.1 % early. An all-to-all of 640
// GPUs one a node on the Llama 3 fabric with its ToRs at 4:1 took 95 s a size, one solve of
// its 409k flows per departure, and takes 2.7 s with the same time to 0.01 µs (1,024 GPUs:
// past 300 s, now 9.5 s; a 2-core EPYC, 2026-12-07).
constexpr double kFinishWindow = 1e-3;

std::filesystem::path device_file(const net::ClusterSpec& spec, const SweepRequest& r,
                                  std::string& device_ref) {
  device_ref = r.device.empty() ? spec.node.gpu : r.device;
  return io::resolve_data_file(device_ref, io::DataKind::kDevice, io::working_dir(),
                               r.device.empty() ? "--cluster" : "",
                               r.device.empty() ? "node.gpu" : "--device");
}

int nodes_of(const net::Topology& topology, const std::vector<int>& gpus) {
  std::set<int> nodes;
  for (int g : gpus) nodes.insert(topology.node_of(g));
  return static_cast<int>(nodes.size());
}

// The first `per_node` GPUs of each node the whole-node placement of as many servers uses (a DP
// group of a TP-8 job has one GPU a node, on one rail).
std::vector<int> placement_of(const net::Topology& topology, const SweepRequest& r) {
  const int g = topology.spec().node.gpus;
  // cmd_collective takes "pack" (a scenario's spelling) as "packed".
  if (r.placement != "packed" && r.placement != "spread")
    throw InputError("--placement: expected packed (or pack) or spread, found '" + r.placement +
                     "'");
  const bool packed = r.placement != "spread";
  if (r.per_node > 0 && (r.per_node > g || r.gpus % r.per_node != 0))
    throw InputError("--per-node: " + std::to_string(r.per_node) + " GPUs a node must divide --gpus " +
                     std::to_string(r.gpus) + " and be at most the node's " + std::to_string(g));
  if (r.per_node <= 0 || r.per_node == g)
    return packed ? topology.pack_placement(r.gpus) : topology.spread_placement(r.gpus);
  const int servers = r.gpus / r.per_node;
  if (servers > topology.spec().gpus / g)
    throw InputError("--per-node: " + std::to_string(r.gpus) + " GPUs at " + std::to_string(r.per_node) +
                     " a node need " + std::to_string(servers) + " servers; the cluster has " +
                     std::to_string(topology.spec().gpus / g));
  const std::vector<int> whole =
      packed ? topology.pack_placement(servers * g) : topology.spread_placement(servers * g);
  std::vector<int> p;
  for (std::size_t i = 0; i < whole.size(); i += static_cast<std::size_t>(g))
    for (int l = 0; l < r.per_node; ++l) p.push_back(whole[i + static_cast<std::size_t>(l)]);
  return p;
}

// nccl-tests' element: a 4-byte float, and where the buffer is split among the ranks
// (all-gather, reduce-scatter, all-to-all) a whole number of them for each rank: a size is
// taken down to a multiple of this, as nccl-tests' getCollByteCount does (count / nranks).
double size_multiple(hw::CollectiveOp op, int gpus) {
  return 4.0 * (hw::splits_buffer(op) ? gpus : 1);
}

// nccl-tests' size is a rank's buffer: one larger than a GPU's memory cannot be allocated
// (16 TiB a rank was timed on 80 GiB GPUs until 2026-12-05).
void check_fits_device(const SweepRequest& r, const hw::DeviceProfile& profile) {
  const double largest = r.sizes.empty() ? 0.0 : *std::max_element(r.sizes.begin(), r.sizes.end());
  if (largest > profile.memory.value()) {
    throw InputError(fmt::format(
        "--bytes: {:g} bytes a rank (nccl-tests' size is each rank's buffer) is more than "
        "{}'s {:.1f} GiB of memory",
        largest, profile.name, profile.memory.value() / (1024.0 * 1024 * 1024)));
  }
}

// What the request asks that no sweep can give, refused before the topology is built.
void check_request(const SweepRequest& r, hw::CollectiveOp op, hw::CollProtocol protocol) {
  if (r.routing != "ecmp" && r.routing != "spray") {
    throw InputError("--routing: expected ecmp or spray, found '" + r.routing + "'");
  }
  // One GPU moves nothing between GPUs (it printed 0 µs and an algbw of 0 for every size).
  if (r.gpus < 2) {
    throw InputError("--gpus: a collective of " + std::to_string(r.gpus) +
                     " GPU moves nothing between GPUs; give 2 or more");
  }
  // The count column is of 4-byte floats, as nccl-tests' default: a smaller size is no element.
  // A sweep's sizes under one element (a rank's, where split) are left out; a sweep of none
  // else is refused.
  const double least = size_multiple(op, r.gpus);
  for (const double size : r.sizes) {
    if (size < least && size == *std::max_element(r.sizes.begin(), r.sizes.end())) {
      throw InputError(
          least > 4.0
              ? fmt::format("--bytes: {:g} bytes is under one 4-byte element for each of the {} "
                            "ranks of {} (the float of nccl-tests' count); give {:g} or more",
                            size, r.gpus, r.op, least)
              : fmt::format("--bytes: {:g} bytes is under one 4-byte element (the float "
                            "of nccl-tests' count); give 4 or more",
                            size));
    }
  }
  // Every other collective's cost grows as about the 2.3th power of the ranks, and is worst
  // from about 256 MiB (the Simple protocol's pipeline): all-reduce on a DGX H100 SuperPOD took
  // 1.1 s a large size on 2,048 GPUs, 4.6 s on 4,096 and 11-13 s on 6,144, where 16-128 MiB
  // took 1.0 s and 8 B-1 MiB 0.35 s (one AMD EPYC core, 2026-12-05). Each size is charged the
  // worst from 128 MiB and a tenth of it below; a request past ten minutes is refused: a
  // reviewer's 24,576-GPU sweep had printed nothing after 11 minutes. With the Simple protocol
  // forced every size costs the worst (1 MiB took 15 s on 6,144 GPUs, 64 MiB 18 s; a 100-size
  // sweep of them, estimated at 130 s, ran past ten minutes until 2026-12-05). The solver has
  // grown faster since: on 2026-12-07 1 GiB on 6,144 H100s took 1.78 s, 0.36 s on 2,048, and
  // with Simple forced 1 MiB 0.78 s and 64 MiB 1.59 s, so the charge is 4 s, over twice that
  // (at 13 s the default sweep on MegaScale's 12,288 GPUs, 41 s of work, was refused at 602 s);
  // an oversubscribed fabric grows faster with the ranks (1 GiB on the 24,576-GPU Llama 3
  // cluster: 46 s), still under the charge's 97 s there.
  constexpr double kWorstSizeSecondsAt6144 = 4.0;
  constexpr double kSmallShare = 0.1;
  constexpr double kLargeBytes = 128.0 * 1024 * 1024;
  constexpr double kMaxSeconds = 600.0;
  const double per_size = kWorstSizeSecondsAt6144 * std::pow(r.gpus / 6144.0, 2.3);
  const bool simple = protocol == hw::CollProtocol::kSimple;
  double estimate = 0.0;
  for (const double size : r.sizes)
    estimate += size >= kLargeBytes || simple ? per_size : kSmallShare * per_size;
  if (op != hw::CollectiveOp::kAllToAll && estimate > kMaxSeconds) {
    throw InputError(fmt::format(
        "--gpus {} with {} size{} (--bytes): up to {:.0f} s of flow-level simulation ({:.0f} s "
        "a size {}, measured on one core: the time grows as about the 2.3th power of the "
        "ranks), more than the {:.0f} s megasim takes on; give fewer sizes or GPUs",
        r.gpus, r.sizes.size(), r.sizes.size() == 1 ? "" : "s", estimate, per_size,
        simple ? "with the Simple protocol forced" : "from 128 MiB, a tenth of it below",
        kMaxSeconds));
  }
  // An all-to-all is a flow from every rank to every other: 2,048 ranks take 10 s and 2 GB a
  // size here (Xeon, one core), 4,096 ranks 96 s and 9 GB, so larger ones are refused.
  constexpr std::int64_t kMaxAllToAllRanks = 2048;
  if (op == hw::CollectiveOp::kAllToAll && r.gpus > kMaxAllToAllRanks) {
    throw InputError(fmt::format(
        "--gpus {}: an all-to-all of {} ranks is {} flows a size, more than the {} of {} ranks "
        "megasim simulates in seconds; give {} GPUs or fewer",
        r.gpus, r.gpus, static_cast<std::int64_t>(r.gpus) * (r.gpus - 1),
        kMaxAllToAllRanks * (kMaxAllToAllRanks - 1), kMaxAllToAllRanks, kMaxAllToAllRanks));
  }
}

// An all-to-all's work grows with its flows and with their paths' hops: a flow sprayed over
// every uplink of two tiers holds a hop a link, 262 on 2,048 GPUs of the H100 SuperPOD against
// 10 hashed. Its time and memory, measured on one Xeon core (2026-12-06; 1,024 GPUs: 3.8 s and
// 0.53 GB hashed, 8 hops; 12.8 s and 2.5 GB sprayed, 70 hops; spread, 262 hops, 62.7 s and
// 10.0 GiB, which 30 bytes a hop put at 7.9 GiB, a review's run), are charged by the hops of the
// communicator's farthest pair, its first rank to its last, at or above each of these; past ten
// minutes of sizes, or past 8 GiB, the sweep is refused. Until then only the ranks were counted
// (18 s a size at 2,048, whatever the routing): a sprayed 1 GiB all-to-all on 2,048 GPUs grew
// past 21 GB, a reviewer's run.
void check_all_to_all_work(const SweepRequest& r, const net::Topology& topology,
                           const std::vector<int>& placement, net::Routing routing) {
  constexpr double kSecondsPerFlow = 2.9e-6, kHopsPerFlowWork = 13.0;
  constexpr double kBytesPerFlow = 260.0, kBytesPerHop = 40.0;
  constexpr double kMaxSeconds = 600.0, kMaxBytes = 8.0 * 1024 * 1024 * 1024;
  std::vector<net::Hop> path;
  topology.route(placement.front(), placement.back(), -1, routing, 0, path);
  const double hops = static_cast<double>(path.size());
  const double flows = static_cast<double>(r.gpus) * (r.gpus - 1);
  const double per_size = kSecondsPerFlow * flows * (1.0 + hops / kHopsPerFlowWork);
  const double seconds = per_size * static_cast<double>(r.sizes.size());
  const double bytes = flows * (kBytesPerFlow + kBytesPerHop * hops);
  if (bytes > kMaxBytes) {
    throw InputError(fmt::format(
        "--gpus {} --routing {}: an all-to-all of {} flows of up to {:.0f} hops each ({}) "
        "holds about {:.1f} GiB, more than the {:.0f} GiB megasim takes on; give fewer GPUs{}",
        r.gpus, r.routing, static_cast<std::int64_t>(flows), hops,
        routing == net::Routing::kSpray ? "a hop for every uplink a flow is sprayed over"
                                        : "one path a flow",
        bytes / (1024.0 * 1024 * 1024), kMaxBytes / (1024.0 * 1024 * 1024),
        routing == net::Routing::kSpray ? " or --routing ecmp" : ""));
  }
  if (seconds > kMaxSeconds) {
    throw InputError(fmt::format(
        "--gpus {} with {} size{} (--bytes): an all-to-all of up to {:.0f} s of flow-level "
        "simulation ({:.0f} s a size: {} flows of up to {:.0f} hops), more than the {:.0f} s "
        "megasim takes on; give fewer sizes or GPUs",
        r.gpus, r.sizes.size(), r.sizes.size() == 1 ? "" : "s", seconds, per_size,
        static_cast<std::int64_t>(flows), hops, kMaxSeconds));
  }
}

}  // namespace

const char* to_string(SweepAnswer a) {
  switch (a) {
    case SweepAnswer::kMeasured: return "measured table";
    case SweepAnswer::kFittedModel: return "fitted model";
    case SweepAnswer::kModel: return "NCCL model";
  }
  return "?";
}

namespace {

// The cluster is one a sweep may build, and holds the GPUs asked for: named by the option that
// asked for them (until 2026-12-05 the placement's message was).
void check_cluster_holds(const net::ClusterSpec& spec, const SweepRequest& r) {
  io::check_cluster_size(spec, r.gpus, "--cluster");
  if (r.gpus > spec.gpus) {
    throw InputError(
        fmt::format("--gpus {}: cluster '{}' has {} GPUs", r.gpus, spec.name, spec.gpus));
  }
}

}  // namespace

Sweep collective_sweep(const SweepRequest& r) {
  Sweep out;
  out.request = r;
  const net::ClusterSpec spec = io::load_cluster_ref(r.cluster);
  check_cluster_holds(spec, r);
  out.cluster_name = spec.name;
  out.cluster_gpus = spec.gpus;
  const std::filesystem::path device = device_file(spec, r, out.device);
  hw::CollectiveConstants constants = io::read_collective_constants(device);
  const hw::DeviceProfile profile = io::load_device_profile(device).profile;
  io::check_profile_against_links(profile, device.string(), spec);
  out.device_mismatch = cluster_device_mismatch(spec, profile, "the sweep");
  const hw::CollectiveOp op = collective::parse_op(r.op);
  const hw::CollAlgorithm algorithm = collective::parse_algorithm(r.algorithm);
  const hw::CollProtocol protocol = collective::parse_protocol(r.protocol);
  check_request(r, op, protocol);
  check_fits_device(r, profile);
  const net::Topology topology(spec);
  const std::vector<int> placement = placement_of(topology, r);
  const auto routing = r.routing == "ecmp" ? net::Routing::kEcmp : net::Routing::kSpray;
  if (op == hw::CollectiveOp::kAllToAll) check_all_to_all_work(r, topology, placement, routing);
  out.nodes = nodes_of(topology, placement);
  constants.scale = hw::collective_scale(profile.collective_scales);
  out.scale = constants.scale;
  // Fitted for this call when a run of its link class (one node or several) pinned a regime.
  out.fitted_scale = std::any_of(
      profile.collective_scales.begin(), profile.collective_scales.end(),
      [&](const hw::CollectiveScaleFit& f) {
        return (f.nodes > 1) == (out.nodes > 1) && (f.bandwidth_rows >= hw::kRowsToPinRegime ||
                                                    f.latency_rows >= hw::kRowsToPinRegime);
      });

  Simulator sim;
  net::FlowSolver solver(sim, topology, routing);
  solver.set_finish_window(kFinishWindow);
  collective::CollectiveEngine engine(sim, topology, solver, constants);
  const double bus_factor = hw::bus_factor(op, r.gpus);
  const double multiple = size_multiple(op, r.gpus);
  for (const double asked : r.sizes) {
    const double size = std::floor(asked / multiple) * multiple;
    // No element, or the size of the row before once taken down: no row of its own.
    if (size == 0.0 || (!out.rows.empty() && out.rows.back().size == size)) continue;
    collective::CollectiveCall call;
    call.op = op;
    call.gpus = placement;
    call.bytes = Bytes(size);
    call.algorithm = algorithm;
    call.protocol = protocol;
    SweepRow row;
    row.size = size;
    // A rank's share where the buffer is split, as nccl-tests prints it (size / 4 / ranks).
    row.count = static_cast<long long>(size / size_multiple(op, r.gpus));
    row.prediction = engine.predict(call);
    row.measured_time =
        hw::measured_collective_time(profile.collective_table, op, r.gpus, out.nodes, Bytes(size));
    // Fitted where a scale fitted to this link class moves what the row ran (one pinned on
    // another algorithm leaves it as NCCL's model gives it: until 2026-12-06 every row of the
    // class read "fitted model").
    const bool fitted =
        out.fitted_scale &&
        constants.scale.moves(out.nodes > 1, row.prediction.algorithm, row.prediction.protocol);
    row.answer = row.measured_time ? SweepAnswer::kMeasured
                 : fitted          ? SweepAnswer::kFittedModel
                                   : SweepAnswer::kModel;
    // A forced algorithm or protocol is not what the measured rows (NCCL's choice) ran.
    if (algorithm != hw::CollAlgorithm::kAuto || protocol != hw::CollProtocol::kAuto) {
      row.measured_time.reset();
      row.answer = fitted ? SweepAnswer::kFittedModel : SweepAnswer::kModel;
    }
    const double seconds =
        (row.measured_time ? *row.measured_time : row.prediction.time).to_seconds();
    row.algbw_gbps = seconds > 0.0 ? size / seconds * 1e-9 : 0.0;
    row.busbw_gbps = row.algbw_gbps * bus_factor;
    out.rows.push_back(row);
  }
  return out;
}

}  // namespace megasim::plan
