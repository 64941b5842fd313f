// Loads a cluster description (topologies/*.json) into a net::ClusterSpec, strictly: every
// key is read through JsonReader, unknown keys are rejected with a did-you-mean, ranges are
// checked, and a fabric that cannot hold the cluster is reported with the numbers that clash.
// Format: README of sim/net and the shipped files in topologies/.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "io/files_read.h"
#include "net/cluster_spec.h"

namespace megasim::io {

net::ClusterSpec load_cluster(const std::filesystem::path& file, FilesRead* read = nullptr);

// Every command builds the whole cluster's topology, whatever part of it the job uses. Measured
// (release build, the 175B 12,288-GPU scenario on a MegaScale fabric grown to N GPUs):
// 262,144 GPUs take 1 s and 0.6 GB, 4,194,304 more than 24 GB. So a cluster may have at most
// this many GPUs, or kMaxClusterPerJobGpu per GPU of the job when that is more: every shipped
// scenario is within it (the largest ratio, 8 GPUs on a 4,480-GPU cluster, is under the floor).
inline constexpr std::int64_t kMaxClusterGpusFloor = 65536;
inline constexpr std::int64_t kMaxClusterPerJobGpu = 8;
inline std::int64_t cluster_gpu_limit(std::int64_t job_gpus) {
  return job_gpus > kMaxClusterGpusFloor / kMaxClusterPerJobGpu ? kMaxClusterPerJobGpu * job_gpus
                                                                : kMaxClusterGpusFloor;
}
// Refuses a cluster past cluster_gpu_limit(job_gpus) for a command's `option` (--cluster).
void check_cluster_size(const net::ClusterSpec& spec, std::int64_t job_gpus,
                        const std::string& option);
// By name or path, resolved like a scenario's "cluster" key (topologies/ searched).
net::ClusterSpec load_cluster_ref(const std::string& ref);

}  // namespace megasim::io
