// `calibrate import-nccl-tests --cluster`: fits NCCL's model to each imported run (the scales
// of calibrate/collective_scale_fit.h, NCCL's model from plan/collective_calibration.h on the
// cluster the logs ran on) and says which regimes each run pins and which it leaves to the
// profile.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "hw/device_profile.h"
#include "io/json_reader.h"

namespace megasim::cli {

// One fit per run of `profile.collective_table` measured with NCCL's own choice, of an
// operation NCCL's tuning model prices (not all-to-all or send/recv). `device_file`: the base
// profile whose collective constants the model uses. Appends a report line per regime to
// `text` and an object per run to `json`. InputError when a run's shape does not fit the
// cluster.
std::vector<hw::CollectiveScaleFit> fit_import_scales(const hw::DeviceProfile& profile,
                                                      const std::filesystem::path& device_file,
                                                      const std::string& cluster_ref,
                                                      std::string& text, io::Json& json);

}  // namespace megasim::cli
