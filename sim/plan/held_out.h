// The bands' coverage held out: every row's band drawn, and its truth placed, with residuals
// from shared constants refitted without the row's own publication
// (scripts/leave_one_source_out.py writes them to validation/leave_one_source_out.json,
// beside the published runs). `validate`'s own coverage (bands.h) takes today's residuals,
// from constants fitted with every fit row, the row's own among them where it is one; this is
// the coverage a publication megasim has not seen would get.
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
  std::optional<Coverage> bands;  // unset when the file is missing or not today's
  std::string note;               // why it is unset
};

// `file`'s held-out residuals, where its `today_error` of every scored row of `rows` is that
// row's error today (to 1e-9 relative); otherwise a note saying what is missing or stale. A file
// that is there but not of the script's shape is an InputError naming its JSON path.
HeldOutCoverage held_out_coverage(const std::filesystem::path& file,
                                  const std::vector<ValidationRow>& rows,
                                  io::FilesRead* read = nullptr);

}  // namespace megasim::plan
