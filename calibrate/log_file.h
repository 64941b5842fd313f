// Reading a measurement log (nccl-tests output) whole, within bounds: only a regular file, of
// at most kMaxLogBytes, since a FIFO or a device such as /dev/zero may never end. Anything else
// is an InputError naming the file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace megasim::calibrate {

// A multi-node run with every rank line is a few MiB.
constexpr std::uintmax_t kMaxLogBytes = std::uintmax_t{64} << 20;

std::string read_log_file(const std::filesystem::path& file);

}  // namespace megasim::calibrate
