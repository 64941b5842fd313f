// `megasim search --results FILE`: an append-only JSON Lines file of event-level figures, one
// line per simulated plan, keyed by the plan's canonical hash and the fingerprint of the
// search's inputs (the scenario's files and --set overrides), so that a search run again
// after a kill skips the plans already done, and a file shared by another scenario or another
// build of the inputs is never read as this one's.
//
// Each line is written with one write(2) on a descriptor opened with O_APPEND, so lines from
// several processes (MPI ranks) do not interleave. A line cut short by a kill is ended with a
// newline when the file is opened again and skipped on reading: its plan is simulated again,
// never misread. Any other line a search would not write (another file given by mistake, a
// figure no simulation gives, a hash that is not its plan's) is an InputError naming the line,
// raised before anything is appended.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "io/inputs.h"
#include "plan/search.h"

namespace megasim::plan {

// FNV-1a over the bytes of `files` and the overrides, in order.
std::uint64_t inputs_fingerprint(const std::vector<std::filesystem::path>& files,
                                 const std::vector<std::string>& overrides);

// The figures in `path` for `fingerprint`; empty when the file does not exist. Each line's
// figures must agree with each other as a simulation of `in`'s model and batch gives them (the
// breakdown sums to the step time; tokens/s and MFU follow from it); a line that cannot is an
// InputError. A plan refused by --max-events is not written, so a later search redoes it (an
// all-zero line written for one before 2026-12-02 is skipped, so redone, too).
FigureMap read_results(const std::filesystem::path& path, std::uint64_t fingerprint,
                       const io::Inputs& inputs);

class ResultsFile {
 public:
  // Opens (creates) the file to append to; a file it created that is still empty when it is
  // destroyed (a search with no feasible plan, or one that failed, on every rank) is removed.
  ResultsFile(const std::filesystem::path& path, std::uint64_t fingerprint);
  ~ResultsFile();
  ResultsFile(const ResultsFile&) = delete;
  ResultsFile& operator=(const ResultsFile&) = delete;

  void append(const Candidate& c, const StepFigures& f);

 private:
  std::filesystem::path path_;
  std::uint64_t fingerprint_;
  int fd_ = -1;
  bool created_ = false;  // the file did not exist before: removed again if still empty
};

}  // namespace megasim::plan
