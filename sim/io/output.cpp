#include "io/output.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <system_error>

#include "engine/error.h"

namespace megasim::io {

void write_file_atomically(const std::filesystem::path& target, const std::string& content) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(target, ec)) {
    throw InputError(target.string() + ": is a directory; expected a file path to write");
  }
  fs::path tmp = target;
  tmp += ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) {
      throw InputError(target.string() + ": cannot write here (" + std::strerror(errno) + ")");
    }
    out << content;
    out.flush();
    if (!out) {
      out.close();
      fs::remove(tmp, ec);
      throw InputError(target.string() + ": write failed (" + std::strerror(errno) + ")");
    }
  }
  fs::rename(tmp, target, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw InputError(target.string() + ": cannot rename the finished file into place (" +
                     ec.message() + ")");
  }
}

}  // namespace megasim::io
