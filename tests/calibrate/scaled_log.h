// Test helper: the shipped H100 2-node all-reduce log (tests/data/nccl-tests) with every time
// × `factor` (algbw / factor, busbw from it), as a cluster whose NICs are that much slower (or
// faster) would log it, written to `out`.
#pragma once

#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <string>
#include <vector>

namespace megasim::test {

inline std::filesystem::path scaled_h100_log(const std::filesystem::path& out, double factor) {
  std::ifstream in(std::string(MEGASIM_SOURCE_DIR) +
                   "/tests/data/nccl-tests/h100-2node-all_reduce.log");
  std::ofstream o(out);
  for (std::string line; std::getline(in, line);) {
    std::istringstream s(line);
    std::vector<std::string> f;
    for (std::string w; s >> w;) f.push_back(w);
    if (line.empty() || line[0] == '#' || f.size() != 13) {
      o << line << "\n";
      continue;
    }
    // As nccl-tests prints them: busbw is algbw times the bus factor (16 ranks' 2·15/16), both
    // to two decimals; the log's own busbw / factor would carry its rounding × 1/factor.
    const auto two_decimals = [](double v) {
      std::ostringstream t;
      t << std::fixed << std::setprecision(2) << v;
      return t.str();
    };
    for (std::size_t i : {5u, 9u}) f[i] = std::to_string(std::stod(f[i]) * factor);
    for (std::size_t i : {6u, 10u}) {
      const double algbw = std::stod(f[i]) / factor;
      f[i] = two_decimals(algbw);
      f[i + 1] = two_decimals(algbw * 2.0 * 15.0 / 16.0);
    }
    for (const auto& w : f) o << "  " << w;
    o << "\n";
  }
  return out;
}

}  // namespace megasim::test
