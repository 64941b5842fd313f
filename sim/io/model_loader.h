// Loading a model file (models/*.json) into a workload::ModelSpec, strictly: every key is read
// through a JsonReader accessor and an unknown key is an error with a did-you-mean. Shape
// rules a model must satisfy on its own (heads divide hidden, kv_heads divide heads) are
// InputErrors naming the numbers; rules that involve a plan live in workload::validate_plan.
// models/schema.json documents the format.
#pragma once

#include <filesystem>

#include "io/files_read.h"
#include "io/key_log.h"
#include "workload/model_spec.h"

namespace megasim::io {

// `log`, when given, receives every key the loader asks about (for the schema test).
workload::ModelSpec load_model(const std::filesystem::path& file, KeyLog* log = nullptr,
                               FilesRead* read = nullptr);

}  // namespace megasim::io
