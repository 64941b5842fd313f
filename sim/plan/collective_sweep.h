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
  std::string device;              // profile for the collective constants; "" = the node's GPU
};

struct SweepRow {
  double size = 0;  // bytes
  long long count = 0;  // fp32 elements, as nccl-tests counts them
  double algbw_gbps = 0, busbw_gbps = 0;  // of the fit's time when there is one, else simulated
  collective::Prediction prediction;
  // The device profile's measured fit, when it covers the call and this size lies within the
  // sizes its run measured (outside them it would extrapolate: a fit of large messages carries
  // an alpha far above the real small-message latency).
  std::optional<Time> fit_time;
};

struct Sweep {
  SweepRequest request;
  std::string cluster_name;
  int cluster_gpus = 0;
  std::string device;  // the profile the constants came from
  // A measured fit of the profile (imported nccl-tests logs or a calibration) of this operation
  // on exactly these ranks and nodes: it answers, as it does when a step is priced, and the
  // flow-level simulation stands beside it.
  std::optional<hw::CollectiveFit> fit;
  double fit_min_size = 0, fit_max_size = 0;  // bytes: the sizes the fit's run measured
  std::vector<SweepRow> rows;
};

// Throws InputError for a cluster, device, operation, algorithm or placement that cannot be had.
Sweep collective_sweep(const SweepRequest& request);

}  // namespace megasim::plan
