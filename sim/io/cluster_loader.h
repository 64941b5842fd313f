// Loads a cluster description (topologies/*.json) into a net::ClusterSpec, strictly: every
// key is read through JsonReader, unknown keys are rejected with a did-you-mean, ranges are
// checked, and a fabric that cannot hold the cluster is reported with the numbers that clash.
// Format: README of sim/net and the shipped files in topologies/.
#pragma once

#include <filesystem>
#include <string>

#include "io/files_read.h"
#include "net/cluster_spec.h"

namespace megasim::io {

net::ClusterSpec load_cluster(const std::filesystem::path& file, FilesRead* read = nullptr);
// By name or path, resolved like a scenario's "cluster" key (topologies/ searched).
net::ClusterSpec load_cluster_ref(const std::string& ref);

}  // namespace megasim::io
