// The harness every fuzz target shares. The loaders read files (their size and type checks are
// part of what is fuzzed), so each input is written to a file in a private temporary folder and
// the loader is given its path. A loader may end in one way only on bad input: an InputError,
// which megasim turns into exit 2 and one message. Any other exception escapes the target and
// libFuzzer reports it as a crash, like a sanitizer finding, an abort or a hang.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

#include "engine/error.h"

namespace megasim::fuzz {

// A private folder for one input: made for it and removed after it, so that no folder is left
// behind however the process ends. It was made once and removed at exit until 2026-12-05, and
// libFuzzer's end at -max_total_time skips atexit: every `make test` left one folder a target
// in /tmp (a helper found 240 of them).
class ScratchDir {
 public:
  ScratchDir() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/megasim-fuzz-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) std::abort();  // no input can be tried without it
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Writes the input to `name` in a scratch folder of its own and calls load(path), swallowing
// only InputError: the clean refusal.
template <typename Load>
int load_from_file(const std::uint8_t* data, std::size_t size, const char* name, Load load) {
  const ScratchDir dir;
  const std::filesystem::path file = dir.path() / name;
  {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  try {
    load(file);
  } catch (const InputError&) {
  }
  return 0;
}

}  // namespace megasim::fuzz
