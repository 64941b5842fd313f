// Reading and writing device profiles: the datasheet profiles in calibrate/profiles/ and the
// calibration files `megasim calibrate` (measured) and `megasim calibrate import-nccl-tests`
// (imported) write. One schema for all three (schema_version 1), so a calibration file can be
// a scenario's `device` as it is.
//
// Strict like every loader here: every key is read through io::JsonReader, unknown keys are
// errors with a did-you-mean, and numbers out of range name their JSON path. The top-level
// "collective" section belongs to the collective module's reader: it is read by that reader
// (so a section simulate would refuse is refused on load), handed back raw, and never written
// by device_profile_to_json().
#pragma once

#include <filesystem>
#include <string>

#include "hw/device_profile.h"
#include "io/json_reader.h"

namespace megasim::io {

// The schema version this build reads and writes.
constexpr int kDeviceProfileSchemaVersion = 1;

struct LoadedDeviceProfile {
  hw::DeviceProfile profile;
  Json collective;  // the raw "collective" section, null when the file has none
  std::filesystem::path file;
};

LoadedDeviceProfile load_device_profile(const std::filesystem::path& file,
                                        FilesRead* read = nullptr);

// Now, in UTC, as a calibration records when it was measured or imported
// (measurement.date): ISO 8601, "2026-11-29T23:59:00Z". An import (`reproducible`) takes
// SOURCE_DATE_EPOCH for now where it is set (reproducible-builds.org), so that two imports of
// one log are byte-identical; InputError where it is not whole seconds from 1970 up to now. A
// measurement keeps the real time (a Nix shell sets the variable to 1980).
std::string measurement_date_now(bool reproducible = false);
// `origin` names the document in errors (a file name).
LoadedDeviceProfile parse_device_profile(const Json& doc, const std::string& origin);

// The profile as JSON in the schema load_device_profile() reads (no "collective" key).
Json device_profile_to_json(const hw::DeviceProfile& p);

}  // namespace megasim::io
