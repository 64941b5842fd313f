// A device profile's `peak_tflops`: the dense tensor-core peak of each dtype it states, read
// and checked against each other; and `measured_with`, the figures a measured profile's
// tables were taken at (device_profile_loader.cpp).
#pragma once

#include <map>
#include <optional>

#include "engine/units.h"
#include "hw/device_profile.h"
#include "io/json_reader.h"

namespace megasim::io {

// Throws InputError, naming the key, when no dtype is stated or an fp8 or fp16 peak is more
// than 2.5 times bf16's.
std::map<hw::DType, FlopsPerSec> read_peaks(JsonReader& profile);

// `measured_with` {peak_tflops, hbm_gbps, sm_count}, when given.
std::optional<hw::HardwareFigures> read_measured_with(JsonReader& profile);
// Refuses `measured_with` on a datasheet profile (no table to anchor) and one without a peak
// for a dtype the tables have rows of.
void check_measured_with(const JsonReader& profile, const hw::DeviceProfile& p);

}  // namespace megasim::io
