// `calibrate import-nccl-tests`: its checks on what the user gave, its line per run, and with
// `--cluster` it fits NCCL's model to each imported run (the scales
// of calibrate/collective_scale_fit.h, NCCL's model from plan/collective_calibration.h on the
// cluster the logs ran on) and says which regimes each run pins and which it leaves to the
// profile.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "calibrate/nccl_tests_import.h"
#include "hw/device_profile.h"
#include "io/json_reader.h"
#include "net/cluster_spec.h"

namespace megasim::cli {

// One fit per imported run (the rows of `profile.collective_table` from `first_new` on, and
// the base profile's runs it holds no fit for) measured with NCCL's own choice, of an operation
// NCCL's tuning model prices (not all-to-all or send/recv), after the fits `profile` already
// holds (kept: each was fitted on the cluster its run ran on). `device_file`: the base profile whose collective
// constants the model uses. Appends a report line per regime to `text` and an object per new
// fit to `json`. InputError when a run's shape does not fit the cluster.
std::vector<hw::CollectiveScaleFit> fit_import_scales(const hw::DeviceProfile& profile,
                                                      std::size_t first_new,
                                                      const std::filesystem::path& device_file,
                                                      const std::string& cluster_ref,
                                                      std::string& text, io::Json& json);

// The alpha-beta fits of `p`'s collective table, a line each in `text`, a reason for each run
// without one in `runs` (`run_sizes`: each run's id and how many message sizes it holds, in
// the order of `runs`), and NCCL's model fitted on `cluster` from row `first_new` on (""; not
// fitted, said so), its scales in `scales` (import_fits.cpp).
void fit_imported(hw::DeviceProfile& p, std::size_t first_new,
                  const std::vector<std::pair<std::string, std::size_t>>& run_sizes,
                  const std::filesystem::path& base_file, const std::string& cluster,
                  io::Json& runs, io::Json& scales, std::string& text);

// Refuses a log given twice: one file under two names, or a copy of it (the same bytes; it
// was imported twice, its rows counted twice in the fit, until 2026-12-06) (import_logs.cpp).
void check_logs_once(const std::vector<std::string>& logs);

// `s` in lower case (ASCII): NCCL's labels and GPU names are read in any case.
std::string lower(std::string s);

// --algorithm and --protocol: empty or a name NCCL_ALGO / NCCL_PROTO takes, else InputError.
void check_nccl_labels(const std::string& algorithm, const std::string& protocol);

// InputError when `log`'s rank lines (`devices`) name an A100, H100 or H200 and the base
// profile (`--device device_ref`) is of another of the three, or of another form (a PCIe card
// against an SXM module) or memory (A100 40 GB against 80 GB) where both names say
// (import_devices.cpp).
void check_device_family(const std::string& log, const std::vector<std::string>& devices,
                         const hw::DeviceProfile& base, const std::string& device_ref);
// InputError when the --cluster's nodes (`cluster_ref`) hold another part than the base
// profile's, as check_device_family tells them apart.
void check_cluster_part(const net::ClusterSpec& cluster, const std::string& cluster_ref,
                        const hw::DeviceProfile& base);

// A run that measures sizes of a shape an earlier run already measured (op, ranks, nodes,
// forced algorithm and protocol), the base profile's included, is answered by the earlier
// run's rows in the table: says so in `text` and as `answered_by` on its object in `runs`
// (the imported runs, in the order the table holds them from row `first_new`).
void report_overlaps(const std::vector<hw::CollectiveMeasurement>& table, std::size_t first_new,
                     io::Json& runs, std::string& text);

// InputError when the --device profile (`base`, named `device`) already holds `run`: the same
// log imported into it before.
void check_not_in_base(const calibrate::NcclTestsRun& run, const hw::DeviceProfile& base,
                       const std::string& device);

// The imported profile's measurement record: the import's date and tool and the logs'
// devices; onto a profile with a record of its own (a measured one), that record's versions
// and date are kept and the tool line names both.
hw::MeasurementInfo import_measurement(const std::optional<hw::MeasurementInfo>& base,
                                       const std::vector<std::string>& devices);

// Appends `run`'s object to `runs` and its line to `text`.
void report_run(const std::string& log, const calibrate::NcclTestsRun& run, io::Json& runs,
                std::string& text);

}  // namespace megasim::cli
