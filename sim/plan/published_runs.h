// The published runs file (validation/published_runs.json) as `validate` reads it: its form
// checked before any row is scored, and a run's id.
#pragma once

#include <string>

#include "io/json_reader.h"

namespace megasim::plan {

// A run's id, or "" for an entry that is not an object with a string id.
std::string run_id(const io::Json& run);

// Throws InputError naming `file` and the JSON path when `runs` is not an object with a "runs"
// array whose every entry is a run: an object with a non-empty string id, the figures megasim
// scores (iteration_time_s…, mfu…, hfu…, tflops_per_gpu…, tokens_per_s…, under "measured" or
// in a step) numbers or null, MFU and HFU fractions of 1, its counts whole numbers above 0, no
// id given twice. Other keys (the file's "models", a run's "notes", a figure's "source") are the
// file's own and not checked.
void check_published_runs(const io::Json& runs, const std::string& file);

}  // namespace megasim::plan
