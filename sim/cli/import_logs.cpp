// `calibrate import-nccl-tests`'s logs, each once: the same file under two names or a copy of
// it would be one run imported twice, under two run ids.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

#include <fmt/format.h>

#include "calibrate/log_file.h"
#include "cli/import_scales.h"
#include "engine/error.h"

namespace megasim::cli {
namespace {

// The bytes of a log, for comparing two: empty where it is no regular file or past the size a
// log may have (the import says why; /dev/zero would never end).
std::string log_bytes(const std::string& log) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(log, ec)) return "";
  const auto size = std::filesystem::file_size(log, ec);
  if (ec || size > calibrate::kMaxLogBytes) return "";
  std::ifstream in(log, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

void check_logs_once(const std::vector<std::string>& logs) {
  std::vector<std::string> bytes;
  for (const auto& log : logs) bytes.push_back(log_bytes(log));
  for (std::size_t i = 0; i < logs.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      std::error_code ec;
      if (logs[i] == logs[j] || std::filesystem::equivalent(logs[i], logs[j], ec)) {
        throw InputError(fmt::format("{}: given twice ({} and {}); give each log once", logs[i],
                                     logs[j], logs[i]));
      }
      if (!bytes[i].empty() && bytes[i] == bytes[j]) {
        throw InputError(
            fmt::format("{}: a copy of {} (the same bytes); give each log once", logs[i], logs[j]));
      }
    }
  }
}

}  // namespace megasim::cli
