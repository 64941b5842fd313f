// A device profile's `peak_tflops`: the dense tensor-core peak of each dtype it states, read
// and checked against each other (device_profile_loader.cpp).
#pragma once

#include <map>

#include "engine/units.h"
#include "hw/device_profile.h"
#include "io/json_reader.h"

namespace megasim::io {

// Throws InputError, naming the key, when no dtype is stated or an fp8 or fp16 peak is more
// than 2.5 times bf16's.
std::map<hw::DType, FlopsPerSec> read_peaks(JsonReader& profile);

}  // namespace megasim::io
