#include "io/resolve.h"

#include <algorithm>
#include <cstdlib>
#include <system_error>

#include "engine/error.h"

namespace megasim::io {
namespace fs = std::filesystem;

const char* data_kind_name(DataKind kind) {
  switch (kind) {
    case DataKind::kModel: return "model";
    case DataKind::kCluster: return "cluster";
    case DataKind::kDevice: return "device";
    case DataKind::kSystem: return "system";
    case DataKind::kReliability: return "reliability preset";
    case DataKind::kPower: return "power preset";
  }
  return "data";
}

fs::path data_root() {
  const char* root = std::getenv("MEGASIM_DATA_DIR");
  if (root == nullptr || *root == '\0') return fs::path(MEGASIM_SOURCE_DIR);
  // A misspelt folder fell back to the build's tree without a word, its error band gone
  // (a trial, 2026-12-07).
  std::error_code ec;
  if (!fs::is_directory(root, ec))
    throw InputError(std::string("MEGASIM_DATA_DIR: '") + root +
                     "' is not a folder megasim can read (a copy of the source tree: models/, "
                     "topologies/, validation/...); unset it to read the build's own tree");
  return fs::path(root);
}

fs::path working_dir() {
  std::error_code ec;
  fs::path here = fs::current_path(ec);
  return ec ? fs::path() : here;
}

std::vector<fs::path> builtin_data_dirs(DataKind kind) {
  const char* sub = "";
  switch (kind) {
    case DataKind::kModel: sub = "models"; break;
    case DataKind::kCluster: sub = "topologies"; break;
    case DataKind::kDevice: sub = "calibrate/profiles"; break;
    case DataKind::kSystem: sub = "systems"; break;
    case DataKind::kReliability: sub = "reliability"; break;
    case DataKind::kPower: sub = "power"; break;
  }
  // The installed share folder keeps the profiles flat, without the source tree's calibrate/.
  const fs::path installed = fs::path(MEGASIM_SHARE_DIR) / fs::path(sub).filename();
  // A source tree elsewhere than the one built from (a copy on another machine, as the device
  // run's): data_root() names it, searched before the build's own tree.
  std::vector<fs::path> dirs{data_root() / sub};
  const fs::path built = fs::path(MEGASIM_SOURCE_DIR) / sub;
  if (built != dirs.front()) dirs.push_back(built);
  dirs.push_back(installed);
  return dirs;
}

bool is_data_name(const std::string& ref) {
  if (ref.empty() || ref == "." || ref == ".." || fs::path(ref).extension() == ".json") {
    return false;
  }
  return std::all_of(ref.begin(), ref.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '.' || c == '_' || c == '-';
  });
}

fs::path resolve_data_file(const std::string& ref, DataKind kind, const fs::path& scenario_dir,
                           const std::string& origin, const std::string& json_path) {
  std::string where;
  for (const std::string* part : {&origin, &json_path}) {
    if (!part->empty()) where += *part + ": ";
  }
  std::vector<fs::path> candidates;
  const auto add = [&](const fs::path& c) {
    const fs::path n = c.lexically_normal();
    if (std::find(candidates.begin(), candidates.end(), n) == candidates.end()) {
      candidates.push_back(n);
    }
  };
  if (is_data_name(ref)) {
    for (const auto& dir : builtin_data_dirs(kind)) add(dir / (ref + ".json"));
  } else {
    std::vector<fs::path> names{fs::path(ref)};
    if (fs::path(ref).extension() != ".json") names.emplace_back(ref + ".json");
    for (const auto& base : {scenario_dir, working_dir()}) {
      for (const auto& name : names) add(name.is_absolute() ? name : base / name);
    }
  }
  for (const auto& candidate : candidates) {
    std::error_code ec;
    const auto status = fs::status(candidate, ec);
    if (ec || !fs::exists(status)) continue;
    if (fs::is_regular_file(status)) return candidate;
    const std::string what = fs::is_directory(status)
                                 ? "the directory "
                                 : "something that is not a regular file (a device, FIFO or "
                                   "socket): ";
    throw InputError(where + "'" + ref + "' resolves to " + what + candidate.string() +
                     ", not a " + data_kind_name(kind) + " file");
  }
  std::string msg = where + data_kind_name(kind) + " '" + ref + "' not found; looked in:";
  for (const auto& t : candidates) msg += "\n  " + t.string();
  if (is_data_name(ref)) {
    msg += "\n(a name is looked up only in the built-in folders; give a path such as ./" + ref +
           ".json for a file of your own)";
  } else if (const fs::path p(ref);
             !p.has_parent_path() && p.extension() == ".json" && is_data_name(p.stem().string())) {
    // "gpt3-175b.json" for the built-in gpt3-175b: said (a reviewer's trial, 2026-12-06).
    for (const auto& dir : builtin_data_dirs(kind)) {
      std::error_code ec;
      if (!fs::is_regular_file(dir / p, ec)) continue;
      msg += "\n(the built-in " + std::string(data_kind_name(kind)) + " '" + p.stem().string() +
             "' is named without .json)";
      break;
    }
  }
  throw InputError(msg);
}

}  // namespace megasim::io
