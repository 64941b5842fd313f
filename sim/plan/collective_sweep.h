// `megasim collective`: an nccl-tests-style sweep of one collective over message sizes on a
// cluster, each size simulated alone at flow level, with NCCL's analytic estimate beside it,
// so a user can hold it line by line against an nccl-tests log.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "collective/collective_engine.h"
#include "hw/device_profile.h"

namespace megasim::plan {

struct SweepRequest {
  std::string cluster;            // name or file (topologies/)
  std::string op = "all_reduce";  // collective::parse_op's names
  int gpus = 8;
  std::vector<double> sizes;      // bytes, one row each
  std::string algorithm = "auto", protocol = "auto";
  std::string routing = "ecmp";    // or "spray"
  std::string placement = "packed";  // or "spread"
  int per_node = 0;                // the communicator's GPUs on each node; 0: all of a node's
  std::string device;              // profile for the collective constants; "" = the node's GPU
};

// Which answer a row gives, as the step's pricing takes it: the profile's measured table (the
// exact shape was measured and the size lies within its sizes), NCCL's model with the scales
// the profile fitted to imported logs, or NCCL's model with the profile's constants alone.
enum class SweepAnswer { kMeasured, kFittedModel, kModel };
const char* to_string(SweepAnswer a);

struct SweepRow {
  double size = 0;  // bytes
  long long count = 0;  // fp32 elements, as nccl-tests counts them (a rank's share where split)
  double algbw_gbps = 0, busbw_gbps = 0;  // of the measured time when there is one, else simulated
  collective::Prediction prediction;
  SweepAnswer answer = SweepAnswer::kModel;
  // Interpolated from the profile's measured rows of this shape (hw::measured_collective_time);
  // outside the measured sizes the model answers.
  std::optional<Time> measured_time;
};

struct Sweep {
  SweepRequest request;
  std::string cluster_name;
  int cluster_gpus = 0;
  std::string device;  // the profile the constants came from
  int nodes = 0;       // the communicator's
  // The scales the profile fitted to imported logs (neutral when it has none), and whether a
  // run of this call's link class (one node or several) pinned any of them.
  hw::CollectiveScale scale;
  bool fitted_scale = false;
  // Set when --device is another part than the cluster's GPUs (hw::node_part_mismatch): the
  // sweep runs the profile's GPU on the cluster's links, as simulate warns.
  std::string device_mismatch;
  std::vector<SweepRow> rows;
};

// Throws InputError for a cluster, device, operation, algorithm or placement that cannot be had.
Sweep collective_sweep(const SweepRequest& request);

}  // namespace megasim::plan
