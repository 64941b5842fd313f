// Parses the text output of nccl-tests (all_reduce_perf and its siblings) into collective
// measurements: how users bring multi-node measurements from their own cluster.
//
// Handles what published logs show: several runs in one file (each opens with "# nccl-tests
// version" or "# nThread"), the header with and without the version line and with and without
// the "root" column (added in nccl-tests 2.10; older logs also say "error" for "#wrong"),
// per-rank device lines in the long ("Rank 3 Group 0 Pid … on host device 3 [..] NAME"), old
// ("Rank 0 Pid … on host …") and compressed ("Rank 0 .. Rank 7 on host NAME") forms, MPI and
// NCCL noise between rows, "N/A" in the in-place #wrong column, out-of-place plus in-place
// columns, and lines tagged by the launcher ("[1,0]<stdout>:" and "[0]" of mpirun
// --tag-output, "0: " of srun -l). The rank count is taken from the device lines, else from the
// ratio busbw / algbw of the fastest row (nccl-tests' bus factor; the least rounded), else from
// --ranks, and the two are cross-checked where both exist.
// Bad input (no rows, an unknown test, ranks that contradict the bandwidth ratio) is an
// InputError naming the file and line.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "hw/device_profile.h"

namespace megasim::calibrate {

struct NcclTestsRun {
  hw::CollectiveOp op = hw::CollectiveOp::kAllReduce;
  std::string test;             // "all_reduce_perf" as the log names it ("" if it does not)
  std::string version;          // "2.18.3" ("" for logs before the version line)
  int ranks = 0;
  int nodes = 0;
  bool nodes_assumed = false;        // no rank line named a host and no --nodes: taken as 1
  std::vector<std::string> devices;  // distinct device names in the rank lines
  std::optional<double> avg_busbw_gbps;
  int first_line = 0;            // 1-based line where the run's header starts
  int skipped_rows = 0;          // rows with #wrong > 0 (failed validation), not imported
  int dropped_rows = 0;          // rows of size 0 or whose time or bandwidth is not a number
  bool op_option_ignored = false;  // --op named another op than the test the log names
  std::string failure;  // nccl-tests' "Test NCCL failure ..." line, where the run ended on one
  std::string kind;                // "bfloat16/sum": the data type and reduction the rows keep
  int other_kind_rows = 0;         // rows of another type or reduction (-d all, -o all), dropped
  std::vector<hw::CollectiveMeasurement> rows;
};

// Measurements one import may hold, all logs together: a published log holds tens to a few
// hundred; past this the calibration it writes would be too large for megasim to read back.
constexpr std::size_t kMaxImportedRows = 20000;

struct ImportOptions {
  std::optional<hw::CollectiveOp> op;  // for logs that do not say which test ran
  std::optional<hw::CollectiveOp> op_from_file_name;  // the same, guessed from the file's name
  std::string algorithm, protocol;     // labels when the run forced NCCL_ALGO / NCCL_PROTO
  std::optional<int> nodes;            // when the log's rank lines do not name hosts
  std::optional<int> ranks;            // when the log has no device lines (checked if it has)
};

std::vector<NcclTestsRun> parse_nccl_tests_log(const std::string& text,
                                               const std::string& origin,
                                               const ImportOptions& options = {});
std::vector<NcclTestsRun> import_nccl_tests_file(const std::filesystem::path& file,
                                                 const ImportOptions& options = {});

// "all_reduce_perf", "all_gather_perf_mpi" → the op; nullopt for tests megasim does not model.
std::optional<hw::CollectiveOp> op_from_test_name(const std::string& test);

}  // namespace megasim::calibrate
