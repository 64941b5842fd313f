// Where referenced data files are found.
//
// A scenario names its model, cluster and device, and a reliability or power preset names its
// file, either by name ("gpt-175b-megascale") or by path ("../models/x.json", "mine.json"). A
// name (letters, digits, '.', '_' and '-', not ending in ".json") is looked up, with ".json"
// added, only in the built-in data folder of its kind (models/, topologies/,
// calibrate/profiles/, systems/, reliability/, power/ of the source tree, then the installed
// share folder): a stray file of the same name in the working directory never replaces a
// built-in one. A path is tried, as written and with ".json" added, relative to the scenario's
// folder, then the working directory. A miss is an InputError listing every place tried once;
// a reference that exists but is a directory or not a regular file says so.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace megasim::io {

enum class DataKind { kModel, kCluster, kDevice, kSystem, kReliability, kPower };

const char* data_kind_name(DataKind kind);
// The built-in folders searched for `kind`, in order.
std::vector<std::filesystem::path> builtin_data_dirs(DataKind kind);

// The source tree whose validation runs, residuals and data megasim reads: $MEGASIM_DATA_DIR
// when set (a copy of the tree elsewhere than the one built from), else the build's tree.
// Throws InputError when the variable names no folder.
std::filesystem::path data_root();
// The working directory, or an empty path where it cannot be read (removed under the
// process): a relative path is then tried as written, and found nowhere.
std::filesystem::path working_dir();
// True when `ref` is a name, found only in the built-in folders; false for a path.
bool is_data_name(const std::string& ref);

// `origin` and `json_path` name the referring file and key in errors ("model"); either may be
// empty. `scenario_dir` is where a relative path is tried first.
std::filesystem::path resolve_data_file(const std::string& ref, DataKind kind,
                                        const std::filesystem::path& scenario_dir,
                                        const std::string& origin, const std::string& json_path);

}  // namespace megasim::io
