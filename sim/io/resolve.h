// Where referenced data files are found.
//
// A scenario names its model, cluster and device by name ("gpt-175b-megascale") or by path
// ("../models/x.json"). A reference is tried, with and without an added ".json", (1) relative
// to the scenario file's folder, (2) relative to the working directory, (3) in the built-in
// data folder of its kind (models/, topologies/, calibrate/profiles/ of the source tree, then
// the installed share folder). A miss is an InputError listing every place that was tried.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace megasim::io {

enum class DataKind { kModel, kCluster, kDevice, kSystem };

const char* data_kind_name(DataKind kind);
// The built-in folders searched for `kind`, in order.
std::vector<std::filesystem::path> builtin_data_dirs(DataKind kind);

// `json_path` names the referring key in errors ("model").
std::filesystem::path resolve_data_file(const std::string& ref, DataKind kind,
                                        const std::filesystem::path& scenario_dir,
                                        const std::string& origin, const std::string& json_path);

}  // namespace megasim::io
