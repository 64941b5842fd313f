// System presets: systems/NAME.json gives the switches of a training system (Megatron-LM's
// or MegaScale's) and its own constants (the attention kernel it runs, the host cost of a
// blocking pipeline exchange), each with a source. Strict, like every loader here.
#pragma once

#include <filesystem>
#include <string>

#include "io/files_read.h"
#include "step/system_options.h"

namespace megasim::io {

// `name` is resolved in the built-in systems/ folder (or taken as a path).
step::SystemOptions load_system_preset(const std::string& name, FilesRead* read = nullptr);
step::SystemOptions load_system_file(const std::filesystem::path& file,
                                     FilesRead* read = nullptr);

}  // namespace megasim::io
