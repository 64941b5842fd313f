// Writing a command's results so that a failed or interrupted run leaves nothing behind and
// never clobbers what it read.
//
// An OutputFiles collects every file a command writes (-o, --trace, ...). Each target is
// checked when it is added, before any work: not empty, not a directory, not a device or other
// special file, not one of the command's input files, not another output of the same command.
// "-" names standard output. commit() writes each content to a temporary file beside its
// target and renames them into place only once every one of them is written: all or nothing.
// A target that is a symbolic link keeps its link; the file it points to is replaced.
// write_stdout() checks the write and the flush, so a full disk or closed pipe is an error.
// Errors are InputErrors naming the path (or the option for an empty one).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace megasim::io {

class OutputFiles {
 public:
  // `inputs`: every file the command has read; a target equal to one of them is refused.
  explicit OutputFiles(std::vector<std::filesystem::path> inputs = {});

  // Registers the target of `option` ("-o"). "-" is standard output.
  void add(const std::string& option, const std::string& target);
  // The content of `option`'s target; nothing when the option was not given.
  void set(const std::string& option, std::string content);
  // True when a target is "-": its content then replaces the command's report on stdout.
  bool to_stdout() const;
  // Writes every target whose content was set, all or nothing.
  void commit();

 private:
  struct Target {
    std::string option, name;
    std::filesystem::path path;  // the file replaced: the link's destination for a symlink
    std::optional<std::string> content;
  };
  std::vector<std::filesystem::path> inputs_;
  std::vector<Target> targets_;
};

// Writes one complete result file (a command with a single output).
void write_file_atomically(const std::filesystem::path& target, const std::string& content);

// Writes `text` to stdout and flushes it; a failed write is an InputError.
void write_stdout(const std::string& text);

}  // namespace megasim::io
