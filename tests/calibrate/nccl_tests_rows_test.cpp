// nccl-tests rows the importer checks against each other and against the test: busbw against
// the test's bus factor where it cannot tell rank counts apart, a rank's share of the count, a
// run that ended on an error.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "calibrate/nccl_tests_import.h"
#include "engine/error.h"

using namespace megasim;
using calibrate::parse_nccl_tests_log;

namespace {
const std::string kHeader =
    "# nThread 1 nGpus 1 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 1 iters: 20\n"
    "# Using devices\n"
    "#       size         count      type   redop    root     time   algbw   busbw  #wrong\n";
}  // namespace

TEST_CASE("send/recv's busbw is its algbw on every row, and a rank's share counts for all-gather") {
  // nccl-tests' bus factor of send/recv is 1 at every rank count: a row of 1.75 x was imported
  // until 2026-12-05 (nothing was checked where the factor cannot tell rank counts apart).
  const std::string header = kHeader;
  calibrate::ImportOptions o;
  o.ranks = 8;
  o.nodes = 1;
  const std::string good = "# Collective test starting: sendrecv_perf\n" + header +
                           "1048576 262144 float sum -1 10.00 104.86 104.86 0\n";
  CHECK(parse_nccl_tests_log(good, "sr.log", o)[0].ranks == 8);
  const std::string bad = "# Collective test starting: sendrecv_perf\n" + header +
                          "1048576 262144 float sum -1 10.00 104.86 183.50 0\n";
  CHECK_THROWS_WITH_AS(parse_nccl_tests_log(bad, "sr.log", o),
                       doctest::Contains("busbw 183.50 GB/s is not algbw 104.86 GB/s"), InputError);
  // All-gather prints a rank's share of the elements: 8 MiB on 8 ranks is 262,144 floats a rank.
  const std::string gather = "# Collective test starting: all_gather_perf\n" + header +
                             "8388608 262144 float none -1 100.00 83.89 73.40 0\n";
  CHECK(parse_nccl_tests_log(gather, "ag.log", o)[0].ranks == 8);
  const std::string whole = "# Collective test starting: all_gather_perf\n" + header +
                            "8388608 2097152 float none -1 100.00 83.89 73.40 0\n";
  CHECK(parse_nccl_tests_log(whole, "ag.log", o)[0].ranks == 8);  // the buffer's count: also kept
  const std::string neither = "# Collective test starting: all_gather_perf\n" + header +
                              "8388608 524288 float none -1 100.00 83.89 73.40 0\n";
  CHECK_THROWS_WITH_AS(parse_nccl_tests_log(neither, "ag.log", o),
                       doctest::Contains("is not count 524288 × 4 B (× 8 ranks)"), InputError);
}

TEST_CASE("a run that ended on an NCCL failure keeps its rows and says it ended so") {
  // nccl-tests prints the failure and stops: the rows before it were measured, and the import
  // said nothing of the failure until 2026-12-05.
  const std::string log = std::string("# Collective test starting: all_reduce_perf\n") + kHeader +
                          "1048576 262144 float sum -1 10.00 104.86 183.50 0\n";
  calibrate::ImportOptions o;
  o.ranks = 8;
  const auto failed = parse_nccl_tests_log(
      log + " node1: Test NCCL failure common.cu:1005 'unhandled system error'\n", "f.log", o);
  REQUIRE(failed.size() == 1);
  CHECK(failed[0].rows.size() == 1);
  CHECK(failed[0].failure == "node1: Test NCCL failure common.cu:1005 'unhandled system error'");
  CHECK(parse_nccl_tests_log(log, "ok.log", o)[0].failure.empty());
  // One after the run's average (the run finished) is not the run's.
  const auto finished = parse_nccl_tests_log(
      log + "# Avg bus bandwidth    : 183.5\n node1: Test NCCL failure init.cc:100 'x'\n",
      "done.log", o);
  CHECK(finished[0].failure.empty());
}

TEST_CASE(
    "a log cut off between rows, short of its header's maxBytes and its average, is refused") {
  // A helper's sweep (2026-12-05): the rows of a 16 GiB sweep stopping at 16 KiB, with no
  // closing average, imported as a whole log (24 rows, 5.97 GB/s).
  calibrate::ImportOptions o;
  o.ranks = 8;
  o.nodes = 1;
  const std::string head =
      "# Collective test starting: all_reduce_perf\n"
      "# nThread 1 nGpus 8 minBytes 8192 maxBytes 17179869184 step: 2(factor) warmup iters: 5\n"
      "#       size         count      type   redop    root     time   algbw   busbw  #wrong\n"
      "8192 2048 float sum -1 20.00 0.41 0.72 0\n"
      "16384 4096 float sum -1 20.00 0.82 1.43 0\n";
  CHECK_THROWS_WITH_AS(parse_nccl_tests_log(head, "cut.log", o),
                       doctest::Contains("the run's rows stop at 16384 B, its header asks for "
                                         "sizes up to 17179869184 B (maxBytes)"),
                       InputError);
  // With its closing average the same rows are a finished run (a sweep stopped early by hand).
  CHECK(parse_nccl_tests_log(head + "# Avg bus bandwidth    : 1.07\n", "ok.log", o).size() == 1);
  // nccl-tests' results check also ends the table: a log that lost only the average line.
  CHECK(parse_nccl_tests_log(head + "# Out of bounds values : 0 OK\n", "ok.log", o).size() == 1);
}

TEST_CASE("a rank two device lines claim, and hosts of unequal rank counts, are refused") {
  // A helper's sweep (2026-12-05): a rank named again by another host was counted as one more
  // rank and refused at the run's first line by the bus-factor check; ranks split 3 + 1 over
  // two hosts were imported as two nodes, which the measured table reads as an even split.
  const auto log = [](const std::vector<std::string>& ranks) {
    std::string text = "# Collective test starting: all_reduce_perf\n# nThread 1 nGpus 1\n";
    for (const std::string& r : ranks) {
      const std::string n = r.substr(0, r.find(' '));  // a GPU of its own (shared_host_name)
      text += "#  Rank " + r + " device " + n + " [0x0" + n + "] A100\n";
    }
    return text + kHeader.substr(kHeader.rfind("#   ")) +
           "1048576 262144 float sum -1 10.00 104.86 157.29 0\n";
  };
  const auto good = parse_nccl_tests_log(
      log({"0 Pid 11 on a", "1 Pid 12 on a", "2 Pid 21 on b", "3 Pid 22 on b", "3 Pid 22 on b"}),
      "good.log", {});
  CHECK(good[0].ranks == 4);  // the same line twice names one rank
  CHECK(good[0].nodes == 2);
  CHECK_THROWS_WITH_AS(
      parse_nccl_tests_log(log({"0 Pid 11 on a", "1 Pid 12 on a", "1 Pid 21 on b", "2 Pid 21 on b",
                                "3 Pid 22 on b"}),
                           "dup.log", {}),
      doctest::Contains(
          "dup.log:5: rank 1 is named twice, here as b/21/1 and at dup.log:4 as a/12/1"),
      InputError);
  CHECK_THROWS_WITH_AS(
      parse_nccl_tests_log(
          log({"0 Pid 11 on a", "1 Pid 12 on a", "2 Pid 13 on a", "3 Pid 21 on b"}), "odd.log", {}),
      doctest::Contains("odd.log:1: the rank lines put 3 ranks on a but 1 on b"), InputError);
  // A compressed range that runs backwards names no rank: refused at its line (passed over
  // until 2026-12-05, then a missing rank 0 reported at the run's first line).
  const std::string backwards =
      "# Collective test starting: all_reduce_perf\n# nThread 1 nGpus 1\n"
      "#  Rank  3 .. Rank  0 on a A100\n" +
      kHeader.substr(kHeader.rfind("#   ")) + "1048576 262144 float sum -1 10.00 104.86 157.29 0\n";
  CHECK_THROWS_WITH_AS(parse_nccl_tests_log(backwards, "back.log", {}),
                       doctest::Contains("back.log:3: the range Rank 3 .. Rank 0 runs backwards"),
                       InputError);
}

TEST_CASE("the rank count a busbw over algbw says is held to the digits nccl-tests prints") {
  // 1 GiB all-reduced at 100.00 GB/s algbw: busbw 187.50 on 16 ranks, 199.22 on 256.
  const auto log = [](const std::string& busbw) {
    return "# Collective test starting: all_reduce_perf\n" + kHeader +
           "1073741824 268435456 float sum -1 10737.42 100.00 " + busbw + " 0\n";
  };
  calibrate::ImportOptions o;
  CHECK(parse_nccl_tests_log(log("187.50"), "r16.log", o)[0].ranks == 16);
  // 20 ranks' factor 1.9 is 1.3 % off 1.875: within the 2 % the check allowed until 2026-12-07.
  o.ranks = 20;
  CHECK_THROWS_WITH_AS(parse_nccl_tests_log(log("187.50"), "r16.log", o),
                       doctest::Contains("--ranks says 20 ranks, but busbw/algbw = 1.875000"),
                       InputError);
  // Two decimals cannot tell 256 ranks from 255 or 257 (the log was read as 257 ranks): the
  // import asks for --ranks, and holds it to the digits.
  o.ranks.reset();
  CHECK_THROWS_WITH_AS(
      parse_nccl_tests_log(log("199.22"), "r256.log", o),
      doctest::Contains("fits any of 252 to 261 ranks for all_reduce within its printed digits; "
                        "pass --ranks"),
      InputError);
  o.ranks = 256;
  CHECK(parse_nccl_tests_log(log("199.22"), "r256.log", o)[0].ranks == 256);
  o.ranks = 64;  // 1.96875: accepted until 2026-12-07
  CHECK_THROWS_WITH_AS(parse_nccl_tests_log(log("199.22"), "r256.log", o),
                       doctest::Contains("--ranks says 64 ranks"), InputError);
}

TEST_CASE("a run none of whose rows can be imported is an error, not a run dropped") {
  // Every row N/A, or every row failed nccl-tests' own check (#wrong > 0), beside a good run:
  // the good run was imported and the other left out without a word until 2026-12-07.
  const std::string end = "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 0\n";
  const std::string good = "# Collective test starting: all_gather_perf\n" + kHeader +
                           "8388608 262144 float none -1 100.00 83.89 73.40 0\n" + end;
  calibrate::ImportOptions o;
  o.ranks = 8;
  for (const std::string row : {"1048576 262144 float sum -1 N/A N/A N/A 0\n",
                                "1048576 262144 float sum -1 10.00 104.86 183.50 3\n"}) {
    const std::string text =
        "# Collective test starting: all_reduce_perf\n" + kHeader + row + end + good;
    CAPTURE(row);
    CHECK_THROWS_WITH_AS(parse_nccl_tests_log(text, "two.log", o),
                         doctest::Contains("two.log:1: none of the run's rows can be imported"),
                         InputError);
  }
  CHECK(parse_nccl_tests_log(good, "one.log", o).size() == 1);
}

TEST_CASE("hosts that share a name are counted by --nodes, which the rank lines cannot") {
  // Two containers both called localhost, each with ranks on its devices 0 and 1: read as one
  // node of four ranks, and --nodes 2 refused against the one host name, until 2026-12-07 (a
  // helper's trial). Two ranks on one GPU (device and full bus id) of one host name show it
  // stands for several.
  const auto log = [](const std::vector<std::string>& ranks) {
    std::string text = "# Collective test starting: all_reduce_perf\n# nThread 1 nGpus 1\n";
    for (const std::string& r : ranks) text += "#  Rank " + r + " A100\n";
    return text + kHeader.substr(kHeader.rfind("#   ")) +
           "1048576 262144 float sum -1 10.00 104.86 157.29 0\n";
  };
  const std::vector<std::string> two = {
      "0 Pid 11 on localhost device 0 [0000:07:00]", "1 Pid 12 on localhost device 1 [0000:0f:00]",
      "2 Pid 11 on localhost device 0 [0000:07:00]", "3 Pid 12 on localhost device 1 [0000:0f:00]"};
  const std::string text = log(two);
  CHECK_THROWS_WITH_AS(
      parse_nccl_tests_log(text, "lh.log", {}),
      doctest::Contains("lh.log:1: ranks 0 and 2 both on device 0 [0000:07:00] of localhost: the "
                        "hosts share a name, so the rank lines cannot count them; pass --nodes"),
      InputError);
  calibrate::ImportOptions o;
  o.nodes = 1;  // the name stands for several: --nodes counts more than the names
  CHECK_THROWS_WITH_AS(parse_nccl_tests_log(text, "lh.log", o),
                       doctest::Contains("pass --nodes above the 1 name(s)"), InputError);
  o.nodes = 2;
  const auto runs = parse_nccl_tests_log(text, "lh.log", o);
  CHECK(runs[0].ranks == 4);
  CHECK(runs[0].nodes == 2);
  o.nodes = 3;  // still held to an even split
  CHECK_THROWS_WITH_AS(parse_nccl_tests_log(text, "lh.log", o),
                       doctest::Contains("4 ranks do not spread evenly over 3 nodes"), InputError);
  // Beside a host of its own name: the names' rank counts (4 and 2) no longer say the split,
  // the 3 nodes do (a review's find: refused as 4 ranks on localhost but 2 on b).
  std::vector<std::string> mixed = two;
  mixed.push_back("4 Pid 21 on b device 0 [0000:07:00]");
  mixed.push_back("5 Pid 22 on b device 1 [0000:0f:00]");
  std::string six = log(mixed);
  six.replace(six.find("157.29"), 6, "174.77");  // busbw of 6 ranks: 104.86 × 2·5/6
  CHECK(parse_nccl_tests_log(six, "mixed.log", o)[0].nodes == 3);
  // Compressed lines name no GPU: a count above the names is the user's to give.
  const std::string compressed =
      "# Collective test starting: all_reduce_perf\n# nThread 1 nGpus 1\n"
      "#  Rank  0 .. Rank  1 on localhost A100\n"
      "#  Rank  2 .. Rank  3 on localhost A100\n" +
      kHeader.substr(kHeader.rfind("#   ")) + "1048576 262144 float sum -1 10.00 104.86 157.29 0\n";
  o.nodes = 2;
  CHECK(parse_nccl_tests_log(compressed, "comp.log", o)[0].nodes == 2);
  CHECK(parse_nccl_tests_log(compressed, "comp.log", {})[0].nodes == 1);
}
