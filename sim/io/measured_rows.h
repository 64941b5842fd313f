// Checks of a device profile's measured rows against what the board can do, each refusing a
// row with its JSON path: a row no GPU could have measured is a wrong unit or a wrong device,
// and the kernel model would price the step from it.
#pragma once

#include <string>
#include <vector>

#include "hw/device_profile.h"
#include "io/json_reader.h"

namespace megasim::io {

// A communicator's ranks sit on at least one node each: more nodes than ranks is no run.
void check_nodes(const JsonReader& row, int ranks, int nodes);

// A kernel row (GEMM or attention) of `flops` useful work in `time` runs within the profile's
// peak for its dtype (by 10 %: a timer's error, and a boost clock above the one a datasheet
// quotes its peak at), and not slower than 1,000 times the peak's time and a millisecond of
// launch (a memory-bound GEMV runs about 300 times its peak's time on an H100; a row 10^9 times
// slower priced a 17-year step until 2026-12-07). A dtype without a peak is not checked.
void check_kernel_row(const JsonReader& row, Flops flops, hw::DType dtype, Time time,
                      const hw::DeviceProfile& p);

// A memory-bound row: bytes over time at most 10 times the profile's HBM bandwidth (an on-chip
// cache serves a few times it; a 7.5 GB row in 1 µs, 1,500 times, is a unit slip) and at least
// a thousandth of it past a millisecond of launch, and one time a (kernel, bytes), as the GEMM
// and attention tables keep one a shape.
void check_memory_row(const JsonReader& row, const hw::DeviceProfile& p,
                      const hw::MemoryMeasurement& m,
                      const std::vector<hw::MemoryMeasurement>& before);

// A board power reading at most 1.5 times the board's tdp_w (its power limit holds the average
// there; 20,000 W on a 700 W board is no reading).
void check_power_row(const JsonReader& row, const hw::DeviceProfile& p, Watts watts);

// A collective size measured twice in one run with another time: the table answers with the
// first row and the fit blends both, so their order set the price (accepted until 2026-12-06,
// where the kernel tables and the log importer refused it). Runs apart may measure one size
// each.
void check_collective_row(const JsonReader& row, const hw::CollectiveMeasurement& m,
                          const std::vector<hw::CollectiveMeasurement>& before);

// The tables were measured on the GPU `device_name` names (the measurement's): another part's
// (an A100's table under the H200's name) would price this part with that one's kernels.
// Refused as the import of a log onto another part is (accepted without a word until
// 2026-12-06), by hw::measured_part_mismatch (the family alone); a part megasim
// has no profile of (a GB10) is taken as it is.
void check_measured_part(const JsonReader& measurement, const std::string& device_name,
                         const hw::DeviceProfile& p);

// A datasheet profile prices from its models alone: tables beside it were priced from and
// reported as "no measured calibration" (until 2026-12-06). `r` is the profile's reader.
void check_datasheet_has_no_rows(const JsonReader& r, const hw::DeviceProfile& p);

}  // namespace megasim::io
