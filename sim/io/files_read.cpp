#include "io/files_read.h"

#include <algorithm>
#include <system_error>

namespace megasim::io {

void FilesRead::record(const std::filesystem::path& file) {
  std::error_code ec;
  std::filesystem::path id = std::filesystem::weakly_canonical(file, ec);
  if (ec) id = std::filesystem::absolute(file).lexically_normal();
  if (std::find(files_.begin(), files_.end(), id) == files_.end()) files_.push_back(std::move(id));
}

}  // namespace megasim::io
