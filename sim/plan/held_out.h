// The bands' coverage held out: each publication's rows scored as if megasim had never seen it.
// scripts/leave_one_source_out.py refits the shared constants without each source and, under
// that refit, predicts every validation row (`folds` of validation/leave_one_source_out.json,
// beside the published runs). A source's rows are then scored with their refit's errors,
// against bands drawn from the other sources' rows under the same refit: what a new
// publication's prediction and band would be. `validate`'s own coverage (bands.h) takes today's
// residuals, from constants fitted with every fit row, the row's own among them where it is one.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "io/files_read.h"
#include "plan/bands.h"

namespace megasim::plan {

struct ValidationRow;

struct HeldOutCoverage {
  std::optional<Coverage> bands;  // unset when the file is missing, malformed or not today's
  std::string note;               // why it is unset
  std::string file;               // the file it was read from, or would have been
};

// `file`'s folds, where the file is today's: its `today_error` of every scored row of `rows` is
// that row's error today (to 1e-9 relative), it holds no row validate does not score, and it was
// refitted from today's fit rows. Otherwise, and for a file not of the script's shape, a note
// says why (naming the JSON path): never an error, so that validate, which the script runs, is
// never stopped by the file it is about to rewrite. `whole_set` false: `rows` are some of the
// scenarios (validate --scenarios on another folder), so rows the file holds beyond them are
// not staleness; the bands are not drawn, since the file's folds rest on the whole set.
HeldOutCoverage held_out_coverage(const std::filesystem::path& file,
                                  const std::vector<ValidationRow>& rows,
                                  io::FilesRead* read = nullptr, bool whole_set = true);

}  // namespace megasim::plan
