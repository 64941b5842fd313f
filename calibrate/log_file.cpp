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
  // UTF-16 (a Windows PowerShell redirect writes it): a byte-order mark, or a NUL beside each
  // ASCII byte. It was refused as holding no result rows, the encoding unsaid (until
  // 2026-12-06).
  const bool bom = text.size() >= 2 && ((text[0] == '\xFF' && text[1] == '\xFE') ||
                                        (text[0] == '\xFE' && text[1] == '\xFF'));
  const auto nul_beside = [&text](std::size_t zero) {  // NUL at zero and zero + 2, text beside
    return text.size() >= 4 && text[zero] == '\0' && text[zero + 2] == '\0' &&
           text[1 - zero] != '\0' && text[3 - zero] != '\0';
  };
  if (bom || nul_beside(0) || nul_beside(1)) {
    throw InputError(name +
                     ": is UTF-16 text, not the UTF-8 nccl-tests writes; convert it "
                     "(iconv -f UTF-16 -t UTF-8) and import that");
  }
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
  // Decimal only: strtod would also read "0x10" as 16 and "infinity".
  if (s.find_first_not_of("0123456789.eE+-") != std::string::npos) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

double half_last_place(const std::string& number) {
  const auto e = number.find_first_of("eE");
  const std::string mantissa = number.substr(0, e);
  const int exponent = e == std::string::npos ? 0 : std::atoi(number.c_str() + e + 1);
  const auto dot = mantissa.find('.');
  const int decimals = dot == std::string::npos ? 0 : static_cast<int>(mantissa.size() - dot - 1);
  return 0.5 * std::pow(10.0, exponent - decimals);
}

bool is_integer(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Hand-written matching rather than <regex>: GCC 12's <regex> trips -Wmaybe-uninitialized
// under the sanitizer build, and these patterns are simple.

// The token after `key` in `line`, or "".
std::string word_after(const std::string& line, const std::string& key) {
  const auto at = line.find(key);
  if (at == std::string::npos) return "";
  const auto t = tokens(line.substr(at + key.size()));
  return t.empty() ? "" : t[0];
}

// Removes launcher tags: "[1,0]<stdout>:" and "[0]" anywhere (mpirun --tag-output), a leading
// "0: " (srun -l). Bracketed bus ids such as "[0000:06:00]" are not tags (they hold colons).
std::string strip_tags(const std::string& in) {
  std::string out;
  std::size_t i = 0;
  while (i < in.size()) {
    if (in[i] == '[') {
      std::size_t j = i + 1;
      while (j < in.size() && ((in[j] >= '0' && in[j] <= '9') || in[j] == ',')) ++j;
      if (j > i + 1 && j < in.size() && in[j] == ']') {
        j += 1;
        for (const char* tail : {"<stdout>:", "<stderr>:"}) {
          if (in.compare(j, std::char_traits<char>::length(tail), tail) == 0) {
            j += std::char_traits<char>::length(tail);
          }
        }
        out += ' ';
        i = j;
        continue;
      }
    }
    out += in[i++];
  }
  std::size_t k = out.find_first_not_of(" \t");
  if (k != std::string::npos && out[k] >= '0' && out[k] <= '9') {
    std::size_t d = k;
    while (d < out.size() && out[d] >= '0' && out[d] <= '9') ++d;
    if (d + 1 < out.size() && out[d] == ':' && (out[d + 1] == ' ' || out[d + 1] == '\t')) {
      out.erase(0, d + 2);
    }
  }
  return out;
}

}  // namespace megasim::calibrate
