// The files a command has read, so that none of its outputs can replace one of them.
//
// read_input_file() (io/json_reader.h), through which every input file is read, records each
// file it opens in the FilesRead it is given; loaders pass theirs down, so a preset found by
// name (systems/megascale.json, reliability/default.json and its failure-rate file,
// power/a100-sxm4-80gb.json) is recorded like the scenario itself. OutputFiles (io/output.h)
// refuses a target that is the same file (same device and inode) as any of them.
// Not thread-safe: one per command.
#pragma once

#include <filesystem>
#include <vector>

namespace megasim::io {

class FilesRead {
 public:
  // Records `file` (a file just opened), by its canonical path, once.
  void record(const std::filesystem::path& file);
  const std::vector<std::filesystem::path>& files() const { return files_; }

 private:
  std::vector<std::filesystem::path> files_;
};

}  // namespace megasim::io
