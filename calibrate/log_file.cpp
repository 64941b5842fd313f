#include "calibrate/log_file.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <system_error>

#include "engine/error.h"

namespace megasim::calibrate {

std::string read_log_file(const std::filesystem::path& file) {
  std::error_code ec;
  const std::string name = file.string();
  if (!std::filesystem::is_regular_file(file, ec)) {
    throw InputError(name + ": not a regular file (missing, a directory, a device or a FIFO); "
                            "give a nccl-tests log file");
  }
  const auto size = std::filesystem::file_size(file, ec);
  if (ec || size > kMaxLogBytes) {
    throw InputError(name + ": larger than the " + std::to_string(kMaxLogBytes) +
                     " bytes a nccl-tests log may have");
  }
  std::ifstream in(file, std::ios::binary);
  std::string text(static_cast<std::size_t>(size), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (!in) throw InputError(name + ": cannot be read");
  return text;
}

std::vector<std::string> tokens(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string t; in >> t;) out.push_back(t);
  return out;
}

std::optional<double> to_number(const std::string& s) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

bool is_integer(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace megasim::calibrate
