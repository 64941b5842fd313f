#include "io/resolve.h"

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
  }
  return "data";
}

std::vector<fs::path> builtin_data_dirs(DataKind kind) {
  const char* sub = kind == DataKind::kModel     ? "models"
                    : kind == DataKind::kCluster ? "topologies"
                    : kind == DataKind::kSystem  ? "systems"
                                                 : "profiles";
  const fs::path source = kind == DataKind::kModel     ? MEGASIM_SOURCE_DIR "/models"
                          : kind == DataKind::kCluster ? MEGASIM_SOURCE_DIR "/topologies"
                          : kind == DataKind::kSystem  ? MEGASIM_SOURCE_DIR "/systems"
                                                       : MEGASIM_SOURCE_DIR "/calibrate/profiles";
  return {source, fs::path(MEGASIM_SHARE_DIR) / sub};
}

fs::path resolve_data_file(const std::string& ref, DataKind kind, const fs::path& scenario_dir,
                           const std::string& origin, const std::string& json_path) {
  std::vector<fs::path> bases{scenario_dir, fs::current_path()};
  for (const auto& d : builtin_data_dirs(kind)) bases.push_back(d);

  std::vector<fs::path> names{fs::path(ref)};
  if (fs::path(ref).extension() != ".json") names.emplace_back(ref + ".json");

  std::vector<fs::path> tried;
  for (const auto& base : bases) {
    for (const auto& name : names) {
      const fs::path candidate = name.is_absolute() ? name : base / name;
      std::error_code ec;
      if (fs::is_regular_file(candidate, ec)) return candidate.lexically_normal();
      if (fs::is_directory(candidate, ec)) {
        throw InputError(origin + ": " + json_path + ": '" + ref + "' resolves to the directory " +
                         candidate.lexically_normal().string() + ", not a " +
                         data_kind_name(kind) + " file");
      }
      tried.push_back(candidate.lexically_normal());
    }
  }
  std::string msg = origin + ": " + json_path + ": " + data_kind_name(kind) + " '" + ref +
                    "' not found; looked in:";
  for (const auto& t : tried) msg += "\n  " + t.string();
  throw InputError(msg);
}

}  // namespace megasim::io
