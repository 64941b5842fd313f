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

#include "engine/error.h"

namespace megasim::fuzz {

// The folder holding this process's input files: made on first use, removed at exit.
inline const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/megasim-fuzz-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) std::abort();  // no input can be tried without it
    std::atexit([] { std::filesystem::remove_all(scratch_dir()); });
    return std::filesystem::path(pattern);
  }();
  return dir;
}

// Writes the input to `name` in the scratch folder and calls load(path), swallowing only
// InputError: the clean refusal.
template <typename Load>
int load_from_file(const std::uint8_t* data, std::size_t size, const char* name, Load load) {
  const std::filesystem::path file = scratch_dir() / name;
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
