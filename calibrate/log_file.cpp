#include "calibrate/log_file.h"

#include <fstream>
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

}  // namespace megasim::calibrate
