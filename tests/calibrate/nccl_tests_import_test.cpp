// The nccl-tests importer on the older header layout and on edited logs: what it refuses and
// what it takes (the three published logs: nccl_tests_logs_test.cpp).
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include "calibrate/nccl_tests_import.h"
#include "engine/error.h"

using namespace megasim;
using calibrate::import_nccl_tests_file;
using calibrate::parse_nccl_tests_log;

namespace {
const std::string kLogs = std::string(MEGASIM_SOURCE_DIR) + "/tests/data/nccl-tests/";
}

// nccl-tests before 2.10: no version line or "root" column, "error" for "#wrong", the nThread line
// per process, old rank lines (numbered across the job); made-up numbers, busbw = algbw · 1.75.
const char* kOldLayout =
    R"(# nThread 1 nGpus 1 minBytes 1048576 maxBytes 4194304 step: 2(factor) warmup iters: 5 iters: 20 validation: 1
#
# Using devices
# nThread 1 nGpus 1 minBytes 1048576 maxBytes 4194304 step: 2(factor) warmup iters: 5 iters: 20 validation: 1
#   Rank  0 Pid   1320 on node-a device  0 [0x00] Tesla V100-SXM2-16GB
#   Rank  1 Pid   1321 on node-a device  1 [0x00] Tesla V100-SXM2-16GB
#   Rank  2 Pid   1322 on node-a device  2 [0x00] Tesla V100-SXM2-16GB
#   Rank  3 Pid   1323 on node-a device  3 [0x00] Tesla V100-SXM2-16GB
#   Rank  4 Pid   2066 on node-b device  0 [0x00] Tesla V100-SXM2-16GB
#   Rank  5 Pid   2067 on node-b device  1 [0x00] Tesla V100-SXM2-16GB
#   Rank  6 Pid   2068 on node-b device  2 [0x00] Tesla V100-SXM2-16GB
#   Rank  7 Pid   2069 on node-b device  3 [0x00] Tesla V100-SXM2-16GB
#
#                                                       out-of-place                       in-place
#       size         count      type   redop     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)                       (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
     1048576        262144     float     sum    100.0   10.49   18.35  2e-07    100.0   10.49   18.35  2e-07
     2097152        524288     float     sum    150.0   13.98   24.47  2e-07    150.0   13.98   24.47  2e-07
     4194304       1048576     float     sum    250.0   16.78   29.36  2e-07    250.0   16.78   29.36  2e-07
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 24.06
)";

TEST_CASE("older layout without version line or root column") {
  calibrate::ImportOptions o;
  o.op = hw::CollectiveOp::kAllReduce;
  o.algorithm = "Ring";
  const auto runs = parse_nccl_tests_log(kOldLayout, "old.log", o);
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].ranks == 8);  // 4 ranks on each of two hosts, counted once each
  CHECK(runs[0].nodes == 2);
  CHECK(runs[0].version.empty());
  // The old "error" column is the largest numerical error of the float sum, not a count of
  // wrong elements: 2e-07 is a healthy row, so all 3 sizes × 2 sides are kept.
  CHECK(runs[0].rows.size() == 6);
  CHECK(runs[0].skipped_rows == 0);
  CHECK(runs[0].rows[0].algorithm == "Ring");
}

TEST_CASE("lines tagged by mpirun or srun parse like untagged ones") {
  calibrate::ImportOptions o;
  o.op = hw::CollectiveOp::kAllReduce;
  const auto plain = parse_nccl_tests_log(kOldLayout, "old.log", o);
  std::string mpi, srun;
  std::istringstream in(kOldLayout);
  for (std::string line; std::getline(in, line);) {
    mpi += "[1,0]<stdout>:" + line + "\n";
    srun += "0: " + line + "\n";
  }
  // "[0]" also appears inside a row when several ranks print to one stream.
  std::string inner = kOldLayout;
  inner.replace(inner.find("    100.0   10.49"), 4, "[0]     ");
  for (const std::string& text : {mpi, srun, inner}) {
    const auto runs = parse_nccl_tests_log(text, "tagged.log", o);
    REQUIRE(runs.size() == 1);
    CHECK(runs[0].rows.size() == plain[0].rows.size());
    CHECK(runs[0].ranks == 8);
    CHECK(runs[0].rows[0].time == plain[0].rows[0].time);
  }
}

TEST_CASE("a log that does not name its test needs --op") {
  CHECK_THROWS_WITH_AS(parse_nccl_tests_log(kOldLayout, "old.log"),
                       doctest::Contains("pass --op"), InputError);
}

TEST_CASE("rank lines that contradict busbw over algbw are an error") {
  std::string text = kOldLayout;
  // Drop one host: 4 ranks give 2·3/4 = 1.5, but the rows say 1.75 (8 ranks).
  for (const char* pid : {"2066", "2067", "2068", "2069"}) {
    const auto at = text.find(std::string("Pid   ") + pid);
    const auto start = text.rfind('\n', at) + 1;
    text.erase(start, text.find('\n', at) - start + 1);
  }
  calibrate::ImportOptions o;
  o.op = hw::CollectiveOp::kAllReduce;
  CHECK_THROWS_WITH_AS(parse_nccl_tests_log(text, "bad.log", o), doctest::Contains("implies 8"),
                       InputError);
  // An all-reduce log read as all-gather: 1.75 is all-gather's (n - 1) / n at no n (the
  // message said "implies 0" until 2026-12-05).
  o.op = hw::CollectiveOp::kAllGather;
  CHECK_THROWS_WITH_AS(parse_nccl_tests_log(kOldLayout, "bad.log", o),
                       doctest::Contains("is all_gather's bus factor at no rank count"),
                       InputError);
}

TEST_CASE("--nodes that do not divide the ranks are refused, with or without --cluster") {
  // No rank lines: --ranks 8 (the rows' 1.75) over --nodes 3 was written, exit 0, until
  // 2026-12-05, where the same options with --cluster were refused.
  std::string text = kOldLayout;
  for (auto at = text.find("#   Rank"); at != std::string::npos; at = text.find("#   Rank")) {
    text.erase(at, text.find('\n', at) - at + 1);
  }
  calibrate::ImportOptions o;
  o.op = hw::CollectiveOp::kAllReduce;
  o.ranks = 8;
  o.nodes = 3;
  CHECK_THROWS_WITH_AS(parse_nccl_tests_log(text, "bare.log", o),
                       doctest::Contains("--nodes 3: 8 ranks do not spread evenly over 3 nodes"),
                       InputError);
  o.nodes = 2;
  CHECK(parse_nccl_tests_log(text, "bare.log", o)[0].nodes == 2);
}

TEST_CASE("two ranks are checked too, though all-reduce's factor is 1 there") {
  // Keep two device lines: 2 ranks give 2·1/2 = 1, but the rows say 1.75 (8 ranks).
  std::string text = kOldLayout;
  for (const char* pid : {"1322", "1323", "2066", "2067", "2068", "2069"}) {
    const auto at = text.find(std::string("Pid   ") + pid);
    const auto start = text.rfind('\n', at) + 1;
    text.erase(start, text.find('\n', at) - start + 1);
  }
  calibrate::ImportOptions o;
  o.op = hw::CollectiveOp::kAllReduce;
  CHECK_THROWS_WITH_AS(parse_nccl_tests_log(text, "two.log", o),
                       doctest::Contains("list 2 ranks, but busbw/algbw = 1.749"), InputError);
  // Broadcast's factor is 1 at every rank count: no rank count to check, but the rows' 1.75
  // is no broadcast's (imported until 2026-12-05).
  o.op = hw::CollectiveOp::kBroadcast;
  CHECK_THROWS_WITH_AS(parse_nccl_tests_log(text, "two.log", o),
                       doctest::Contains("times broadcast's bus factor at any rank count (1.0000)"),
                       InputError);
}

TEST_CASE("--nodes must agree with the hosts the rank lines name") {
  calibrate::ImportOptions o;
  o.op = hw::CollectiveOp::kAllReduce;
  o.nodes = 2;
  CHECK(parse_nccl_tests_log(kOldLayout, "old.log", o)[0].nodes == 2);
  o.nodes = 1;  // two names are two hosts at least
  CHECK_THROWS_WITH_AS(parse_nccl_tests_log(kOldLayout, "old.log", o),
                       doctest::Contains("--nodes 1 but the rank lines name 2 host(s)"),
                       InputError);
  // More than the names only where a name may stand for several: these old lines give the bus
  // number alone ([0x00]), which GPUs of two PCI domains share, so 4 is taken; lines naming each
  // GPU's full bus id, none twice under a name, hold the count to the names.
  o.nodes = 4;
  CHECK(parse_nccl_tests_log(kOldLayout, "old.log", o)[0].nodes == 4);
  std::string full = kOldLayout;
  for (int d = 0; d < 4; ++d) {
    const std::string dev = "device  " + std::to_string(d) + " [0x00]";
    const std::string id = "device  " + std::to_string(d) + " [0000:0" + std::to_string(d) + ":00]";
    for (auto at = full.find(dev); at != std::string::npos; at = full.find(dev, at))
      full.replace(at, dev.size(), id);
  }
  CHECK_THROWS_WITH_AS(parse_nccl_tests_log(full, "full.log", o),
                       doctest::Contains("--nodes 4 but the rank lines name 2 host(s)"),
                       InputError);
}

TEST_CASE("rows of size 0 or without numbers are counted as dropped") {
  std::string text = kOldLayout;
  const std::string row = "     2097152        524288     float     sum    150.0";
  text.replace(text.find(row), row.size(), "     2097152        524288     float     sum      nan");
  const auto last = text.find("# Out of bounds");
  text.insert(last,
              "           0             0     float     sum      0.0    0.00    0.00    "
              "0e+00      0.0    0.00    0.00    0e+00\n");
  calibrate::ImportOptions o;
  o.op = hw::CollectiveOp::kAllReduce;
  const auto runs = parse_nccl_tests_log(text, "dropped.log", o);
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].rows.size() == 5);   // 2 MiB's out-of-place side lost
  CHECK(runs[0].dropped_rows == 3);  // that side and both sides of size 0
  CHECK(runs[0].skipped_rows == 0);
}

TEST_CASE("a row whose algbw is not its size over its time is an error") {
  std::string text = kOldLayout;
  const std::string row = "     4194304       1048576     float     sum    250.0";
  text.replace(text.find(row), row.size(), "     4194304       1048576     float     sum   2500.0");
  calibrate::ImportOptions o;
  o.op = hw::CollectiveOp::kAllReduce;
  CHECK_THROWS_WITH_AS(
      parse_nccl_tests_log(text, "self.log", o),
      doctest::Contains("self.log:19: algbw 16.78 GB/s is not the size over the time"), InputError);
  // A hexadecimal time is no number of nccl-tests': that side is dropped, not read as 150.
  text = kOldLayout;
  text.replace(text.find("sum    150.0"), 12, "sum     0x96");
  const auto runs = parse_nccl_tests_log(text, "hex.log", o);
  CHECK(runs[0].rows.size() == 5);
  CHECK(runs[0].dropped_rows == 1);
}

TEST_CASE("a size twice in one run is kept once if alike, else an error") {
  calibrate::ImportOptions o;
  o.op = hw::CollectiveOp::kAllReduce;
  const std::string row =
      "     2097152        524288     float     sum    150.0   13.98   24.47  "
      "2e-07    150.0   13.98   24.47  2e-07\n";
  std::string text = kOldLayout;
  text.insert(text.find("# Out of bounds"), row);
  CHECK(parse_nccl_tests_log(text, "echo.log", o)[0].rows.size() == 6);
  std::string other = row;
  other.replace(other.find("150.0"), 5, "151.0");
  text = kOldLayout;
  text.insert(text.find("# Out of bounds"), other);
  CHECK_THROWS_WITH_AS(
      parse_nccl_tests_log(text, "twice.log", o),
      doctest::Contains("size 2097152 B again in this run, in 151 us where line 18"), InputError);
}

TEST_CASE("what real logs print is not taken for a contradiction") {
  calibrate::ImportOptions o;
  o.op = hw::CollectiveOp::kAllReduce;
  // -d all: one table holds each size once per type (the run keeps the first type's rows).
  std::string text = kOldLayout;
  text.insert(text.find("# Out of bounds"),
              "     1048576        524288      half     sum    110.0    9.53   16.68  2e-03    "
              "110.0    9.53   16.68  2e-03\n");
  const auto all_types = parse_nccl_tests_log(text, "all-types.log", o);
  CHECK(all_types[0].rows.size() == 6);
  CHECK(all_types[0].other_kind_rows == 2);
  // nccl-tests 2.18.5 on prints a time of 10 s or more with two digits: 16 GiB in "1.2e+07" us
  // (really 12.36 s) at 1.39 GB/s is within that rounding.
  text = kOldLayout;
  text.insert(text.find("# Out of bounds"),
              " 17179869184    4294967296     float     sum  1.2e+07    1.39    2.43  2e-07  "
              "1.2e+07    1.39    2.43  2e-07\n");
  CHECK(parse_nccl_tests_log(text, "slow.log", o)[0].rows.size() == 8);
  // nccl-tests 2.0's all-gather printed algbw as (n-1)/n of size over time: 7/8 here.
  std::string gather = kOldLayout;
  const std::string row = "    100.0   10.49   18.35  2e-07    100.0   10.49   18.35  2e-07";
  gather.replace(gather.find(row), row.size(),
                 "    100.0    9.18    8.03  2e-07    100.0    9.18    8.03  2e-07");
  for (const auto& [from, to] : {std::pair{"150.0   13.98   24.47", "150.0   12.23   10.70"},
                                 std::pair{"250.0   16.78   29.36", "250.0   14.68   12.85"}}) {
    for (auto at = gather.find(from); at != std::string::npos; at = gather.find(from))
      gather.replace(at, std::string(from).size(), to);
  }
  o.op = hw::CollectiveOp::kAllGather;
  CHECK(parse_nccl_tests_log(gather, "gather-2.0.log", o)[0].rows.size() == 6);
}

TEST_CASE("a log of more measurements than an import holds is an error") {
  std::string text = "# nThread 1 nGpus 8\n#  size count type redop time algbw busbw #wrong\n";
  for (std::size_t i = 0; i <= calibrate::kMaxImportedRows; ++i) {  // 1 MB + i kB in 100 us
    const double algbw = 10.0 + 0.01 * static_cast<double>(i);
    text += fmt::format("{} 262144 float sum 100.0 {:.2f} {:.4f} 0\n", 1000000 + 1000 * i, algbw,
                        1.75 * algbw);
  }
  calibrate::ImportOptions o;
  o.op = hw::CollectiveOp::kAllReduce;
  CHECK_THROWS_WITH_AS(parse_nccl_tests_log(text, "big.log", o),
                       doctest::Contains("more than 20000 measurements in one log"), InputError);
}

TEST_CASE("a log without device lines takes its rank count from --ranks, checked against the rows") {
  // Device lines removed: all_reduce's busbw/algbw still says 8 ranks.
  std::string text;
  std::istringstream in(kOldLayout);
  for (std::string line; std::getline(in, line);) {
    if (line.find("Rank") == std::string::npos || line.find("device") == std::string::npos) {
      text += line + "\n";
    }
  }
  calibrate::ImportOptions o;
  o.op = hw::CollectiveOp::kAllReduce;
  o.nodes = 2;
  CHECK(parse_nccl_tests_log(text, "nolines.log", o)[0].ranks == 8);  // from the ratio
  o.ranks = 8;
  CHECK(parse_nccl_tests_log(text, "nolines.log", o)[0].ranks == 8);
  o.ranks = 4;  // 2·3/4 = 1.5, but the rows say 1.75
  CHECK_THROWS_WITH_AS(parse_nccl_tests_log(text, "nolines.log", o),
                       doctest::Contains("--ranks says 4 ranks"), InputError);
  // With the device lines, --ranks must agree with them.
  CHECK_THROWS_WITH_AS(parse_nccl_tests_log(kOldLayout, "old.log", o),
                       doctest::Contains("--ranks 4 but the device lines list 8"), InputError);
  // A sendrecv log (busbw = algbw: the ratio cannot tell) is imported with --ranks; these rows,
  // 1.75 x, are no sendrecv's (the case with a true sendrecv log is below).
  calibrate::ImportOptions s;
  s.op = hw::CollectiveOp::kSendRecv;
  s.nodes = 2;
  s.ranks = 8;
  CHECK_THROWS_WITH_AS(parse_nccl_tests_log(text, "sendrecv.log", s),
                       doctest::Contains("times sendrecv's bus factor"), InputError);
}

TEST_CASE("without device lines the rank count comes from the least rounded ratio") {
  // 64 ranks, bandwidths printed to two decimals: the first row past 1 GB/s (1.23 and 2.43)
  // reads 1.9756, 82 ranks; the fastest (198.52 and 390.84) reads 1.9688, 64.
  const std::string text =
      "# Collective test starting: all_reduce_perf\n"
      "# nThread 1 nGpus 1 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 1 iters: 20\n"
      "# Using devices\n"
      "#       size         count      type   redop    root     time   algbw   busbw  #wrong\n"
      "65536 16384 float sum -1 53.0828 1.23 2.43 0\n"
      "1048576 262144 float sum -1 45.2429 23.18 45.63 0\n"
      "1073741824 268435456 float sum -1 5408.71 198.52 390.84 0\n";
  CHECK(parse_nccl_tests_log(text, "r64.log")[0].ranks == 64);
  // Rows too slow for the ratio, and no device lines: nThread x nGpus is one process's count,
  // not the job's (it was taken as 1 rank), so the log needs --ranks.
  const std::string slow =
      "# Collective test starting: all_reduce_perf\n"
      "# nThread 1 nGpus 1 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 1 iters: 20\n"
      "# Using devices\n"
      "#       size         count      type   redop    root     time   algbw   busbw  #wrong\n"
      "8 2 float sum -1 24.70 0.00 0.00 0\n"
      "1024 256 float sum -1 25.10 0.04 0.08 0\n";
  CHECK_THROWS_WITH_AS(parse_nccl_tests_log(slow, "tiny.log"),
                       doctest::Contains("cannot tell the rank count"), InputError);
  calibrate::ImportOptions o;
  o.ranks = 16;
  CHECK(parse_nccl_tests_log(slow, "tiny.log", o)[0].ranks == 16);
}

TEST_CASE("a column header megasim cannot read is an error, not a run dropped") {
  // 'bus_bw' for 'busbw': the run's rows were left unread and the run dropped silently.
  const std::string text =
      "# Collective test starting: all_reduce_perf\n"
      "# nThread 1 nGpus 1 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 1 iters: 20\n"
      "#       size         count      type   redop    root     time   algbw   bus_bw  #wrong\n"
      "1048576 262144 float sum -1 45.2429 23.18 45.63 0\n";
  CHECK_THROWS_WITH_AS(parse_nccl_tests_log(text, "renamed.log"),
                       doctest::Contains("renamed.log:3: a column header megasim cannot read"),
                       InputError);
}

TEST_CASE("a file with no result rows is an error") {
  CHECK_THROWS_WITH_AS(parse_nccl_tests_log("hello\nworld\n", "empty.log"),
                       doctest::Contains("no nccl-tests result rows"), InputError);
}

TEST_CASE("test names map to collectives") {
  CHECK(calibrate::op_from_test_name("all_reduce_perf") == hw::CollectiveOp::kAllReduce);
  CHECK(calibrate::op_from_test_name("all_gather_perf_mpi") == hw::CollectiveOp::kAllGather);
  CHECK(calibrate::op_from_test_name("reduce_scatter_perf") == hw::CollectiveOp::kReduceScatter);
  CHECK_FALSE(calibrate::op_from_test_name("hypercube_perf").has_value());
  // --op in `megasim collective`'s spelling as well as nccl-tests' (refused until 2026-12-05).
  CHECK(calibrate::op_from_test_name("all_to_all") == hw::CollectiveOp::kAllToAll);
  CHECK(calibrate::op_from_test_name("alltoall_perf") == hw::CollectiveOp::kAllToAll);
  CHECK(calibrate::op_from_test_name("send_recv") == hw::CollectiveOp::kSendRecv);
}

TEST_CASE("-d all: a run keeps its first data type and counts the others' rows") {
  // A row of another type for each size: int8 three times slower, as -d all prints them.
  std::string text = kOldLayout;
  const std::string rows[] = {
      "     1048576       1048576      int8     sum    300.0    3.50    6.12  0e+00    300.0    "
      "3.50    6.12  0e+00\n",
      "     2097152       2097152      int8     sum    450.0    4.66    8.16  0e+00    450.0    "
      "4.66    8.16  0e+00\n"};
  for (const auto& row : rows) text.insert(text.find("# Out of bounds"), row);
  calibrate::ImportOptions o;
  o.op = hw::CollectiveOp::kAllReduce;
  const auto runs = parse_nccl_tests_log(text, "dall.log", o);
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].kind == "float/sum");
  CHECK(runs[0].rows.size() == 6);  // the float rows only
  CHECK(runs[0].other_kind_rows == 4);
  for (const auto& r : runs[0].rows) CHECK(r.time.to_us() <= 250.0);
}

TEST_CASE("-S 1 logs: the timestamp is two words in each row") {
  std::string text = kOldLayout;
  const std::string header = "busbw  error\n#        (B)";
  text.replace(text.find(header), header.size(), "busbw  error timestamp\n#        (B)");
  for (const char* end : {"2e-07\n     2097152", "2e-07\n     4194304", "2e-07\n# Out"}) {
    text.insert(text.find(end) + 5, "  2025-10-01 12:00:00");
  }
  calibrate::ImportOptions o;
  o.op = hw::CollectiveOp::kAllReduce;
  const auto runs = parse_nccl_tests_log(text, "ts.log", o);
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].rows.size() == 6);
}

TEST_CASE("-C 1 logs (host time) are refused, saying why") {
  std::string text = kOldLayout;
  for (int i = 0; i < 2; ++i) {
    text.replace(text.find("     time   algbw"), 17, "  cputime   algbw");
  }
  calibrate::ImportOptions o;
  o.op = hw::CollectiveOp::kAllReduce;
  CHECK_THROWS_WITH_AS(parse_nccl_tests_log(text, "cpu.log", o),
                       doctest::Contains("cpu.log:15: the log was run with -C 1"), InputError);
}

TEST_CASE("a log's edits are refused where they once passed: size, busbw, a rank, nGpus") {
  // Each was imported with exit 0 until a bad-input hunt of 2026-12-04.
  std::ifstream in(kLogs + "h100-2node-all_reduce.log");
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string log = buffer.str();
  const auto edited = [&](const std::string& from, const std::string& to) {
    std::string text = log;
    const auto at = text.find(from);
    REQUIRE(at != std::string::npos);
    text.replace(at, from.size(), to);
    return text;
  };
  // A data row whose size is no whole number: refused, not passed over as a line of noise.
  CHECK_THROWS_WITH_AS(parse_nccl_tests_log(edited("     8388608", "          -1"), "s.log", {}),
                       doctest::Contains("size '-1' is not a whole number of bytes"), InputError);
  // busbw is algbw x 2(n-1)/n on every row, not only the fastest (which the rank count is
  // checked on): 32 MiB's 229.34 edited to 999.99.
  CHECK_THROWS_WITH_AS(parse_nccl_tests_log(edited("229.34", "999.99"), "b.log", {}),
                       doctest::Contains("b.log:12: busbw 999.99 GB/s is not algbw 122.31 GB/s"),
                       InputError);
  // "Rank 8 .. Rank 15" losing rank 8 names 15 ranks, which the ratio cannot tell from 16.
  CHECK_THROWS_WITH_AS(
      parse_nccl_tests_log(edited("Rank  8 .. Rank 15", "Rank  9 .. Rank 15"), "r.log", {}),
      doctest::Contains("name rank 9 but not rank 8"), InputError);
  CHECK_THROWS_WITH_AS(parse_nccl_tests_log(edited("nGpus 1", "nGpus 0"), "g.log", {}),
                       doctest::Contains("nGpus 0 is out of range [1, 131072]"), InputError);
  // size = count x the type's bytes (edits imported until 2026-12-05): count x 3, half's 2 B.
  CHECK_THROWS_WITH_AS(
      parse_nccl_tests_log(
          edited("     8388608       2097152     float", "     8388608       6291456     float"),
          "c.log", {}),
      doctest::Contains("c.log:10: size 8388608 B is not count 6291456 × 4 B"), InputError);
  CHECK_THROWS_WITH_AS(
      parse_nccl_tests_log(
          edited("     8388608       2097152     float", "     8388608       2097152      half"),
          "h.log", {}),
      doctest::Contains("h.log:10: size 8388608 B is not count 2097152 × 2 B"), InputError);
}
