// Loading a model file (models/*.json) into a workload::ModelSpec, strictly: every key is read
// through a JsonReader accessor and an unknown key is an error with a did-you-mean. Shape
// rules a model must satisfy on its own (heads divide hidden, kv_heads divide heads) are
// InputErrors naming the numbers; rules that involve a plan live in workload::validate_plan.
#pragma once

#include <filesystem>

#include "workload/model_spec.h"

namespace megasim::io {

workload::ModelSpec load_model(const std::filesystem::path& file);

}  // namespace megasim::io
