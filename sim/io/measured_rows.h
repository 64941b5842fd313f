// Checks of a device profile's measured rows against what the board can do, each refusing a
// row with its JSON path: a row no GPU could have measured is a wrong unit or a wrong device,
// and the kernel model would price the step from it.
#pragma once

#include <vector>

#include "hw/device_profile.h"
#include "io/json_reader.h"

namespace megasim::io {

// A communicator's ranks sit on at least one node each: more nodes than ranks is no run.
void check_nodes(const JsonReader& row, int ranks, int nodes);

// A memory-bound row: bytes over time at most 10 times the profile's HBM bandwidth (an on-chip
// cache serves a few times it; a 7.5 GB row in 1 µs, 1,500 times, is a unit slip), and one time
// a (kernel, bytes), as the GEMM and attention tables keep one a shape.
void check_memory_row(const JsonReader& row, const hw::DeviceProfile& p,
                      const hw::MemoryMeasurement& m,
                      const std::vector<hw::MemoryMeasurement>& before);

// A board power reading at most 1.5 times the board's tdp_w (its power limit holds the average
// there; 20,000 W on a 700 W board is no reading).
void check_power_row(const JsonReader& row, const hw::DeviceProfile& p, Watts watts);

}  // namespace megasim::io
