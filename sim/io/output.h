// Writing a command's results so that a failed or interrupted run leaves nothing behind and
// never clobbers what it read.
//
// An OutputFiles collects every file a command writes (-o, --trace, ...). Each target is
// checked when it is added, before any work: not empty, not a directory, not a device or other
// special file, in a folder that exists and that the user may write in, not one of the
// command's input files (those given, and every file recorded in
// the command's FilesRead so far, presets found by name included), not another output of the
// same command. commit() checks the targets against the files read once more, since the work
// may read more (compare reads what each variant names), before it writes anything.
// "-" names standard output. commit() writes each content to a temporary file beside its
// target, then the command's report to standard output (or the content of a "-" target in its
// place), and renames the files into place only once all of that is written: all or nothing,
// so a closed pipe or a full disk on stdout leaves no file behind either.
// A target that is a symbolic link keeps its link; the file it points to is replaced.
// write_stdout() checks the write and the flush, so a full disk or closed pipe is an error.
// Errors are InputErrors naming the path (or the option for an empty one).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "io/files_read.h"

namespace megasim::io {

class OutputFiles {
 public:
  // `inputs`: files the command reads that no FilesRead records (nccl-tests logs); `read`: the
  // command's record of the files it has read, kept by pointer and consulted at add() and
  // commit(). A target that is the same file as any of them is refused.
  explicit OutputFiles(std::vector<std::filesystem::path> inputs = {},
                       const FilesRead* read = nullptr);

  // Registers the target of `option` ("-o"). "-" is standard output.
  void add(const std::string& option, const std::string& target);
  // The content of `option`'s target; nothing when the option was not given.
  void set(const std::string& option, std::string content);
  // True when a target is "-": its content then replaces the command's report on stdout.
  bool to_stdout() const;
  // Refuses `option` (--json: one JSON object on stdout) when a target already takes stdout.
  void refuse_beside_stdout(const std::string& option) const;
  // Writes every target whose content was set and `report` on stdout (unless a "-" target
  // takes it), all or nothing.
  void commit(const std::optional<std::string>& report = std::nullopt);

 private:
  struct Target {
    std::string option, name;
    std::filesystem::path path;  // the file replaced: the link's destination for a symlink
    std::optional<std::string> content;
  };
  // InputError when `t` is the same file as an input.
  void check_not_input(const Target& t) const;

  std::vector<std::filesystem::path> inputs_;
  const FilesRead* read_;
  std::vector<Target> targets_;
};

// Writes one complete result file (a command with a single output).
void write_file_atomically(const std::filesystem::path& target, const std::string& content);

// Writes `text` to stdout and flushes it; a failed write is an InputError.
void write_stdout(const std::string& text);

// Whether `p` is one of this process's standard streams' files or reaches a file through one of
// its descriptors (/dev/stdout, /dev/fd/N, /proc/self/fd/N): what OutputFiles::add refuses, and
// search's results file, appended to beside the report, likewise.
bool through_descriptor(const std::filesystem::path& p);

// A file a command created and appends to (search's --results), removed by an interrupt while
// it is still empty (`fd` open on it), as the command removes it at its end: killed before its
// first line, search left an empty file until 2026-12-07. keep_on_interrupt() undoes it.
void remove_if_empty_on_interrupt(const std::filesystem::path& file, int fd);
void keep_on_interrupt(const std::filesystem::path& file);

}  // namespace megasim::io
