// What the collective and calibration tests share: the path of a file in the source tree,
// collective calls, nccl-tests' bus bandwidth, and a collective engine on a shipped cluster
// and device profile.
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "collective/collective_engine.h"
#include "engine/simulator.h"
#include "engine/time.h"
#include "hw/device_profile.h"
#include "io/cluster_loader.h"
#include "io/collective_constants_reader.h"
#include "net/flow_solver.h"
#include "net/topology.h"

namespace megasim::testing {

inline std::filesystem::path source(const std::string& rel) {
  return std::filesystem::path(MEGASIM_SOURCE_DIR) / rel;
}

inline collective::CollectiveCall call(hw::CollectiveOp op, std::vector<int> gpus, double bytes,
                                       hw::CollAlgorithm a = hw::CollAlgorithm::kAuto,
                                       hw::CollProtocol p = hw::CollProtocol::kAuto) {
  collective::CollectiveCall c;
  c.op = op;
  c.gpus = std::move(gpus);
  c.bytes = Bytes(bytes);
  c.algorithm = a;
  c.protocol = p;
  return c;
}

inline collective::CollectiveCall all_reduce(std::vector<int> gpus, double bytes,
                                             hw::CollAlgorithm a = hw::CollAlgorithm::kAuto,
                                             hw::CollProtocol p = hw::CollProtocol::kAuto) {
  return call(hw::CollectiveOp::kAllReduce, std::move(gpus), bytes, a, p);
}

// nccl-tests' busbw of a call that took `t`, GB/s.
inline double busbw_gbps(const collective::CollectiveCall& c, Time t) {
  return c.bytes.value() / t.to_seconds() * 1e-9 *
         hw::bus_factor(c.op, static_cast<int>(c.gpus.size()));
}

// A collective engine on topologies/CLUSTER.json with calibrate/profiles/PROFILE.json's
// constants (which a test may change before it predicts: the engine reads them by reference).
struct CollectiveBench {
  CollectiveBench(const std::string& cluster, const std::string& profile,
                  net::Routing routing = net::Routing::kEcmp)
      : CollectiveBench(io::load_cluster(source("topologies/" + cluster + ".json")), profile,
                        routing) {}
  // The same on a cluster a test wrote (a node shape no shipped topology has).
  CollectiveBench(net::ClusterSpec cluster, const std::string& profile,
                  net::Routing routing = net::Routing::kEcmp)
      : topology(std::move(cluster)),
        constants(io::read_collective_constants(source("calibrate/profiles/" + profile + ".json"))),
        solver(sim, topology, routing),
        engine(sim, topology, solver, constants) {}
  Simulator sim;
  net::Topology topology;
  hw::CollectiveConstants constants;
  net::FlowSolver solver;
  collective::CollectiveEngine engine;
};

// The same on DGX H100 nodes (NCCL 2.30's Hopper constants) unless told otherwise.
struct Hopper : CollectiveBench {
  explicit Hopper(const std::string& cluster = "dgx-h100-superpod-6144",
                  const std::string& profile = "h100-sxm5-80gb")
      : CollectiveBench(cluster, profile) {}
  explicit Hopper(net::ClusterSpec cluster)
      : CollectiveBench(std::move(cluster), "h100-sxm5-80gb") {}
};

}  // namespace megasim::testing
