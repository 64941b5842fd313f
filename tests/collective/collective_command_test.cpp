// `megasim collective` as a user runs it: an nccl-tests-style table, one JSON object with
// --json, and exit status 2 with a clear message for bad input.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "../cli/run_command.h"

using megasim::test::run_megasim;

TEST_CASE("megasim collective prints one JSON object with nccl-tests columns") {
  const auto r = run_megasim("collective --cluster dgx-a100-8 --op all_reduce --gpus 8 --bytes 8:1G --json");
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["rows"].size() == 28);  // 8 B .. 1 GiB, doubling: 2^3 .. 2^30
  const auto& last = j["rows"].back();
  CHECK(last["size_bytes"].get<double>() == 1073741824.0);
  // busbw = algbw x 2(n-1)/n with n = 8.
  CHECK(last["busbw_gbps"].get<double>() == doctest::Approx(last["algbw_gbps"].get<double>() * 1.75));
  CHECK(last["time_us"].get<double>() > 0.0);
}

TEST_CASE("megasim collective text table has one row per size") {
  const auto r = run_megasim("collective --cluster megascale-a100-12288 --gpus 64 --bytes 1M:4M");
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("busbw") != std::string::npos);
  CHECK(r.out.find("     1048576") != std::string::npos);
  CHECK(r.out.find("     4194304") != std::string::npos);
}

TEST_CASE("megasim collective rejects bad input with exit status 2") {
  CHECK(run_megasim("collective --cluster no-such-cluster").exit_code == 2);
  const auto bad_op = run_megasim("collective --cluster dgx-a100-8 --op allreduce");
  CHECK(bad_op.exit_code == 2);
  CHECK(bad_op.err.find("all_reduce") != std::string::npos);
  CHECK(run_megasim("collective --cluster dgx-a100-8 --bytes 8:4").exit_code == 2);
  CHECK(run_megasim("collective --cluster dgx-a100-8 --bytes 8Q").exit_code == 2);
  CHECK(run_megasim("collective --cluster dgx-a100-8 --gpus 16").exit_code == 2);
  CHECK(run_megasim("collective --cluster dgx-a100-8 --routing random").exit_code == 2);
  CHECK(run_megasim("collective --cluster dgx-a100-8 --op all_gather --algo tree").exit_code == 2);
}
