// Reading a measurement log (nccl-tests output) whole, within bounds: only a regular file, of
// at most kMaxLogBytes, since a FIFO or a device such as /dev/zero may never end. Anything else
// is an InputError naming the file. And the words of its lines: tokens, numbers, integers.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace megasim::calibrate {

// A multi-node run with every rank line is a few MiB.
constexpr std::uintmax_t kMaxLogBytes = std::uintmax_t{64} << 20;

std::string read_log_file(const std::filesystem::path& file);

// The whitespace-separated words of a line.
std::vector<std::string> tokens(const std::string& line);
// A whole word that is a finite number; nothing otherwise.
std::optional<double> to_number(const std::string& s);
// Half a unit in the last place a number was printed with: "175.69" 0.005, "1.2e+07" 5e5.
double half_last_place(const std::string& number);
// A non-empty word of digits only.
bool is_integer(const std::string& s);
// The word after `key` in `line`, or "".
std::string word_after(const std::string& line, const std::string& key);
// "file:line", where an error points.
inline std::string where(const std::string& origin, int line) {
  return origin + ":" + std::to_string(line);
}
// `line` without the tags launchers put on it: "[1,0]<stdout>:" and "[0]" (mpirun
// --tag-output), a leading "0: " (srun -l).
std::string strip_tags(const std::string& line);

}  // namespace megasim::calibrate
