// The nccl-tests importer on three published logs (tests/data/nccl-tests/README.md says where
// each came from): their runs, ranks, nodes and rows as the logs print them.
#include <doctest/doctest.h>

#include <string>

#include "calibrate/nccl_tests_import.h"

using namespace megasim;
using calibrate::import_nccl_tests_file;

namespace {
const std::string kLogs = std::string(MEGASIM_SOURCE_DIR) + "/tests/data/nccl-tests/";
}

TEST_CASE("h100 two-node all_reduce with compressed rank lines") {
  const auto runs = import_nccl_tests_file(kLogs + "h100-2node-all_reduce.log");
  REQUIRE(runs.size() == 1);
  const auto& r = runs[0];
  CHECK(r.op == hw::CollectiveOp::kAllReduce);
  CHECK(r.test == "all_reduce_perf");
  CHECK(r.version == "2.18.3");
  CHECK(r.ranks == 16);  // "Rank 0 .. Rank 7" and "Rank 8 .. Rank 15"
  CHECK(r.nodes == 2);
  REQUIRE(r.devices.size() == 1);
  CHECK(r.devices[0] == "NVIDIA H100 80GB HBM3");
  REQUIRE(r.avg_busbw_gbps.has_value());
  CHECK(*r.avg_busbw_gbps == doctest::Approx(348.02));
  REQUIRE(r.rows.size() == 24);  // 12 sizes, out-of-place and in-place
  CHECK(r.rows[0].size.value() == 8388608.0);
  CHECK(r.rows[0].time.ns() == 175'690);
  CHECK_FALSE(r.rows[0].in_place);
  CHECK(r.rows[1].in_place);
  CHECK(r.rows[1].time.ns() == 150'320);
  CHECK(r.rows.back().busbw.value() == doctest::Approx(466.97e9));
  // busbw = algbw · 2(n-1)/n with n = 16: 249.05 · 1.875 = 466.97.
  CHECK(r.rows.back().busbw.value() / r.rows.back().algbw.value() ==
        doctest::Approx(1.875).epsilon(0.001));
}

TEST_CASE("gb10 log with two runs and noise between them") {
  const auto runs = import_nccl_tests_file(kLogs + "gb10-2node-all_gather.log");
  REQUIRE(runs.size() == 2);
  for (const auto& r : runs) {
    CHECK(r.op == hw::CollectiveOp::kAllGather);
    CHECK(r.ranks == 2);
    CHECK(r.nodes == 2);  // spark-fb97 and spark-4440
    CHECK(r.rows.size() == 6);
  }
  CHECK(*runs[0].avg_busbw_gbps == doctest::Approx(21.4033));
  CHECK(*runs[1].avg_busbw_gbps == doctest::Approx(2.82151));
  CHECK(runs[1].rows[0].time.ns() == 191'408'000);
  CHECK(runs[0].rows[0].run != runs[1].rows[0].run);
}

TEST_CASE("rtx 6000d alltoall with MPI noise and N/A in the in-place column") {
  const auto runs = import_nccl_tests_file(kLogs + "rtx6000d-2node-alltoall.log");
  REQUIRE(runs.size() == 1);
  const auto& r = runs[0];
  CHECK(r.op == hw::CollectiveOp::kAllToAll);
  CHECK(r.ranks == 16);
  CHECK(r.nodes == 2);
  CHECK(r.rows.size() == 48);  // 24 sizes × 2; "N/A" is not a failed validation
  CHECK(r.skipped_rows == 0);
  CHECK(r.devices[0] == "NVIDIA RTX 6000D");
}
