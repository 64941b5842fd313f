// Reads the NCCL-like collective constants (hw::CollectiveConstants) from the "collective"
// section of a device profile JSON. Strict on that section only (every key read, unknown keys
// rejected with a did-you-mean); the rest of the profile belongs to the device loader.
#pragma once

#include <filesystem>

#include "hw/collective_constants.h"
#include "io/json_reader.h"

namespace megasim::io {

hw::CollectiveConstants read_collective_constants(const std::filesystem::path& profile);
// `r` reads the "collective" object itself.
hw::CollectiveConstants read_collective_constants(JsonReader r);

}  // namespace megasim::io
