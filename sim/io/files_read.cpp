#include "io/files_read.h"

#include <algorithm>
#include <system_error>

namespace megasim::io {

void FilesRead::record(const std::filesystem::path& file) {
  std::error_code ec;
  std::filesystem::path id = std::filesystem::weakly_canonical(file, ec);
  if (ec) {
    // A working directory removed under the process: the path as given (the throwing
    // absolute() ended a relative input that still opened in an internal error, a review,
    // 2026-12-07).
    std::error_code cwd;
    id = std::filesystem::absolute(file, cwd);
    id = (cwd ? file : id).lexically_normal();
  }
  if (std::find(files_.begin(), files_.end(), id) == files_.end()) files_.push_back(std::move(id));
}

}  // namespace megasim::io
