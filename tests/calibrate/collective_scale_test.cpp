// NCCL's model fitted to nccl-tests runs (calibrate/collective_scale_fit.h) and the measured
// table's interpolation (hw::measured_collective_time): a run written from the model itself
// with known scales is fitted back to them; regimes are said as the rows pin them; the table
// answers log-log between measured sizes and nowhere else.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "calibrate/collective_scale_fit.h"
#include "collective_bench.h"
#include "io/cluster_loader.h"
#include "io/collective_constants_reader.h"
#include "net/topology.h"
#include "plan/collective_calibration.h"

using namespace megasim;
using hw::CollectiveOp;

namespace {

using testing::source;

// NCCL's model of an all-reduce on `ranks` over `nodes` H100 nodes of the DGX H100 SuperPOD.
calibrate::ScaledModel h100_model(int ranks, int nodes) {
  const auto topology = std::make_shared<const net::Topology>(
      io::load_cluster(source("topologies/dgx-h100-superpod-6144.json")));
  return plan::scaled_nccl_model(
      topology, io::read_collective_constants(source("calibrate/profiles/h100-sxm5-80gb.json")),
      CollectiveOp::kAllReduce, ranks, nodes, "test");
}

// A synthetic nccl-tests run: the model's time under `truth` at every size lo..hi, x 2.
std::vector<calibrate::ScaleFitRow> synthetic(const calibrate::ScaledModel& model,
                                              const hw::CollectiveScale& truth, double lo,
                                              double hi) {
  std::vector<calibrate::ScaleFitRow> rows;
  for (double s = lo; s <= hi; s *= 2.0) rows.push_back({s, model(s, truth).time_s});
  return rows;
}

hw::CollectiveMeasurement row(double bytes, double us, bool in_place = false) {
  hw::CollectiveMeasurement m;
  m.op = CollectiveOp::kAllReduce;
  m.ranks = 16;
  m.nodes = 2;
  m.size = Bytes(bytes);
  m.time = Time::from_us(us);
  m.in_place = in_place;
  m.run = "log:1";
  return m;
}

}  // namespace

TEST_CASE(
    "a 2-node run written from the model with NVLSTree x 0.8 and tree LL +6 us is fitted back") {
  // On 2 H100 nodes NCCL runs the tree in the latency-bound rows (LL to 64 KiB, LL128 from
  // 256 KiB to 4 MiB) and NVLSTree in the bandwidth-bound ones: the fit names them, and its
  // scales hold for them alone (the tree's latency for each protocol).
  const auto model = h100_model(16, 2);
  hw::CollectiveScale truth;
  const auto tree = static_cast<std::size_t>(hw::scaled_algorithm_index(hw::CollAlgorithm::kTree));
  const auto nvls_tree =
      static_cast<std::size_t>(hw::scaled_algorithm_index(hw::CollAlgorithm::kNvlsTree));
  truth.bandwidth_by_algorithm[1][nvls_tree] = {true, 0.8};
  for (auto& protocol : truth.latency_by_algorithm[1][tree]) protocol = {true, 6.0};
  const auto rows = synthetic(model, truth, 8.0, 16.0 * (1 << 30));  // 8 B-16 GiB: 32 rows
  const hw::CollectiveScaleFit f =
      calibrate::fit_collective_scale(rows, model, CollectiveOp::kAllReduce, 16, 2);
  CHECK(f.rows == 32);
  CHECK(f.latency_rows >= hw::kRowsToPinRegime);
  CHECK(f.bandwidth_rows >= hw::kRowsToPinRegime);
  CHECK(f.bandwidth_algorithm == "nvls_tree");
  CHECK(f.latency_algorithm == "tree");
  CHECK(f.latency_protocol.empty());
  CHECK(f.bandwidth_scale == doctest::Approx(0.8).epsilon(0.02).scale(0));
  CHECK(f.latency_offset_us == doctest::Approx(6.0).epsilon(0.02));
  CHECK(f.rms_log_residual < 0.01);
  // The profile's scale holds for NVLSTree across nodes and tree/LL only.
  const hw::CollectiveScale s = hw::collective_scale({f});
  CHECK(s.bandwidth(true, hw::CollAlgorithm::kNvlsTree) ==
        doctest::Approx(0.8).epsilon(0.02).scale(0));
  CHECK(s.bandwidth(true, hw::CollAlgorithm::kRing) == 1.0);
  CHECK(s.bandwidth(false, hw::CollAlgorithm::kNvlsTree) == 1.0);
  CHECK(s.latency_offset_us(true, hw::CollAlgorithm::kTree, hw::CollProtocol::kLL) ==
        doctest::Approx(6.0).epsilon(0.02));
  CHECK(s.latency_offset_us(true, hw::CollAlgorithm::kTree, hw::CollProtocol::kSimple) ==
        doctest::Approx(6.0).epsilon(0.02));
  CHECK(s.latency_offset_us(true, hw::CollAlgorithm::kRing, hw::CollProtocol::kLL) == 0.0);
}

TEST_CASE("a run with NCCL_ALGO=Ring forced pins the ring, which NCCL's own choice never runs") {
  // 2 H100 nodes: NCCL's choice runs the tree and NVLSTree, never the ring; a forced-ring run
  // (nccl-tests with NCCL_ALGO=Ring, as NVIDIA suggests to measure a network) written with ring
  // x 0.9 and +10 us is fitted back to the ring alone.
  const auto topology = std::make_shared<const net::Topology>(
      io::load_cluster(source("topologies/dgx-h100-superpod-6144.json")));
  const auto model = plan::scaled_nccl_model(
      topology, io::read_collective_constants(source("calibrate/profiles/h100-sxm5-80gb.json")),
      CollectiveOp::kAllReduce, 16, 2, "test", hw::CollAlgorithm::kRing);
  hw::CollectiveScale truth;
  const auto ring = static_cast<std::size_t>(hw::scaled_algorithm_index(hw::CollAlgorithm::kRing));
  truth.bandwidth_by_algorithm[1][ring] = {true, 0.9};
  for (auto& protocol : truth.latency_by_algorithm[1][ring]) protocol = {true, 10.0};
  const auto rows = synthetic(model, truth, 8.0, 16.0 * (1 << 30));
  const hw::CollectiveScaleFit f =
      calibrate::fit_collective_scale(rows, model, CollectiveOp::kAllReduce, 16, 2);
  CHECK(f.bandwidth_algorithm == "ring");
  CHECK(f.latency_algorithm == "ring");
  CHECK(f.bandwidth_scale == doctest::Approx(0.9).epsilon(0.02).scale(0));
  CHECK(f.latency_offset_us == doctest::Approx(10.0).epsilon(0.05));
  const hw::CollectiveScale s = hw::collective_scale({f});
  CHECK(s.bandwidth(true, hw::CollAlgorithm::kRing) == doctest::Approx(0.9).epsilon(0.02).scale(0));
  CHECK(s.bandwidth(true, hw::CollAlgorithm::kNvlsTree) == 1.0);
}

TEST_CASE("a fit that names no algorithm scales the link for every algorithm") {
  // A calibration written before fits named their algorithm (or one whose rows ran several).
  hw::CollectiveScaleFit f;
  f.nodes = 2;
  f.bandwidth_scale = 0.9;
  f.latency_offset_us = 3.0;
  f.bandwidth_rows = f.latency_rows = hw::kRowsToPinRegime;
  const hw::CollectiveScale s = hw::collective_scale({f});
  for (hw::CollAlgorithm a :
       {hw::CollAlgorithm::kTree, hw::CollAlgorithm::kRing, hw::CollAlgorithm::kNvlsTree}) {
    CHECK(s.bandwidth(true, a) == doctest::Approx(0.9));
    CHECK(s.latency_offset_us(true, a, hw::CollProtocol::kSimple) == doctest::Approx(3.0));
    CHECK(s.bandwidth(false, a) == 1.0);
  }
}

TEST_CASE("a 1-node run written from the model with NVLink x 1.15 and -3 us is fitted back") {
  const auto model = h100_model(8, 1);
  hw::CollectiveScale truth;
  truth.nvlink_bandwidth = 1.15;
  truth.nvlink_latency_offset_us = -3.0;
  const auto rows = synthetic(model, truth, 8.0, 8.0 * (1 << 30));
  const hw::CollectiveScaleFit f =
      calibrate::fit_collective_scale(rows, model, CollectiveOp::kAllReduce, 8, 1);
  CHECK(f.bandwidth_scale == doctest::Approx(1.15).epsilon(0.02));
  CHECK(f.latency_offset_us == doctest::Approx(-3.0).epsilon(0.02));
}

TEST_CASE("an offset pooled from more ranks never leaves a call of fewer ranks free") {
  // An 8-GPU fit's offset of -10 us (a helper's trial, 2026-12-07) is larger than the whole
  // modelled latency of a 2-GPU all-reduce of 8 B, which it took to 0 us: the call keeps
  // (1 - kLatencyOffsetMostRemoved) of its latency now. Where the offset is smaller than
  // that, it is laid on whole.
  hw::CollectiveScale scale;
  scale.nvlink_latency_offset_us = -10.0;
  const auto two = h100_model(2, 1);
  const hw::ModelledTime bare = two(8.0, hw::CollectiveScale{});
  REQUIRE(bare.latency_s * 1e6 < 10.0);
  const hw::ModelledTime offset = two(8.0, scale);
  CHECK(offset.latency_s ==
        doctest::Approx((1.0 - hw::kLatencyOffsetMostRemoved) * bare.latency_s));
  CHECK(offset.time_s > 0.0);
  const auto eight = h100_model(8, 1);
  scale.nvlink_latency_offset_us = -1.0;
  CHECK(eight(8.0, scale).latency_s ==
        doctest::Approx(eight(8.0, hw::CollectiveScale{}).latency_s - 1e-6));
}

TEST_CASE("a run of large messages only pins the bandwidth and says so") {
  // 8 MiB-16 GiB across 2 nodes, as the shipped H100 log: NVLSTree's latency (25 + 2 x 20.9
  // = 66.8 us) is at most 40 % of the modelled time (8 MiB: 66.8 of 169.0 us), under the 80 %
  // that makes a row latency-bound; the bandwidth term with the pipeline's fill reaches 80 %
  // at 64 MiB (408.9 of 475.7 us; 32 MiB: 75 %), so 9 rows, 64 MiB-16 GiB, pin the bandwidth
  // and none the latency.
  const auto model = h100_model(16, 2);
  hw::CollectiveScale truth;
  truth.net_bandwidth = 0.9;
  const auto rows = synthetic(model, truth, 8.0 * (1 << 20), 16.0 * (1 << 30));
  const hw::CollectiveScaleFit f =
      calibrate::fit_collective_scale(rows, model, CollectiveOp::kAllReduce, 16, 2);
  CHECK(f.latency_rows == 0);
  CHECK(f.latency_offset_us == 0.0);
  CHECK(f.bandwidth_rows == 9);
  CHECK(f.bandwidth_scale == doctest::Approx(0.9).epsilon(0.02).scale(0));
  const auto lines = calibrate::describe_regimes(f, calibrate::regime_span(rows, model));
  REQUIRE(lines.size() == 3);
  CHECK(lines[0] ==
        "latency: not pinned (0 rows where it is 80 % of the modelled time or more, 2 needed), "
        "left to the profile");
  CHECK(lines[1] == "NIC bandwidth of nvls_tree: pinned by 9 rows (64 MiB-16 GiB), scale 0.900");
  CHECK(lines[2] == "NVLink bandwidth: not measured (a 2-node run), left to the profile");
}

TEST_CASE("a run 20 times slower than the model lands on the search's edge and says so") {
  const auto model = h100_model(16, 2);
  hw::CollectiveScale truth;
  truth.net_bandwidth = 0.05;  // below the 1/10 the search allows
  const auto rows = synthetic(model, truth, 8.0 * (1 << 20), 16.0 * (1 << 30));
  const hw::CollectiveScaleFit f =
      calibrate::fit_collective_scale(rows, model, CollectiveOp::kAllReduce, 16, 2);
  CHECK(f.bandwidth_scale == doctest::Approx(0.1).epsilon(1e-6).scale(0));
  const auto lines = calibrate::describe_regimes(f, calibrate::regime_span(rows, model));
  CHECK(lines[1].find("the edge of the search, 1/10 to 10: does the cluster match the fabric "
                      "the log ran on?") != std::string::npos);
}

TEST_CASE("a DP group with one GPU per node is priced under the NIC scale") {
  // 4 ranks on 4 nodes: no log of 8-GPU nodes measured it, but the NIC scale reaches it. At
  // 1 GiB the bandwidth term is nearly all of the time, so x 0.8 of the bandwidth is about
  // x 1.25 of the time; at 8 B latency rules and the scale moves it by a nanosecond.
  const auto model = h100_model(4, 4);
  hw::CollectiveScale fitted;
  fitted.net_bandwidth = 0.8;
  const double gib = 1 << 30;
  CHECK(model(gib, fitted).time_s / model(gib, {}).time_s == doctest::Approx(1.25).epsilon(0.01));
  CHECK(model(8.0, fitted).time_s == doctest::Approx(model(8.0, {}).time_s).epsilon(1e-4).scale(0));
}

TEST_CASE("the fitted scales of several runs combine per link, weighted by their rows") {
  hw::CollectiveScaleFit a, b, c;
  a.nodes = b.nodes = 2;
  a.bandwidth_scale = 0.5, a.bandwidth_rows = 3, a.latency_offset_us = 10.0, a.latency_rows = 1;
  b.bandwidth_scale = 2.0, b.bandwidth_rows = 2, b.latency_offset_us = 4.0, b.latency_rows = 4;
  c.nodes = 1;
  c.bandwidth_scale = 1.2, c.bandwidth_rows = 5, c.latency_offset_us = -2.0, c.latency_rows = 2;
  const hw::CollectiveScale s = hw::collective_scale({a, b, c});
  // NIC: exp((3 ln 0.5 + 2 ln 2) / 5) = 2^(-1/5); latency: a pins none (1 row), b alone: 4 us.
  CHECK(s.net_bandwidth == doctest::Approx(std::pow(2.0, -0.2)));
  CHECK(s.net_latency_offset_us == doctest::Approx(4.0));
  CHECK(s.nvlink_bandwidth == doctest::Approx(1.2));
  CHECK(s.nvlink_latency_offset_us == doctest::Approx(-2.0));
  const hw::CollectiveScale none = hw::collective_scale({});
  CHECK(none.net_bandwidth == 1.0);
  CHECK(none.nvlink_latency_offset_us == 0.0);
}

TEST_CASE("the measured table answers log-log between its sizes and nowhere else") {
  // 1 MiB in 100 us, 4 MiB in 400 us: 2 MiB lies halfway in log size, so its time is
  // halfway in log time, sqrt(100 x 400) = 200 us; 3 MiB: w = ln 3 / ln 4 = 0.7925,
  // 100^0.2075 x 400^0.7925 = 300.0 us (the line is t proportional to size here).
  const double mib = 1 << 20;
  const std::vector<hw::CollectiveMeasurement> table = {
      row(mib, 100.0), row(4 * mib, 400.0), row(mib, 50.0, true), row(8 * mib, 700.0, true)};
  const auto at = [&](double bytes) {
    return hw::measured_collective_time(table, CollectiveOp::kAllReduce, 16, 2, Bytes(bytes));
  };
  CHECK(at(mib)->to_us() == doctest::Approx(100.0));  // the out-of-place row, not in-place's 50
  CHECK(at(2 * mib)->to_us() == doctest::Approx(200.0).epsilon(1e-4));
  CHECK(at(3 * mib)->to_us() == doctest::Approx(300.0).epsilon(1e-4));
  CHECK(at(4 * mib)->to_us() == doctest::Approx(400.0));
  CHECK_FALSE(at(mib / 2).has_value());     // below the run's sizes: the model answers
  CHECK_FALSE(at(8 * mib).has_value());     // in-place rows do not extend the out-of-place ones
  CHECK_FALSE(hw::measured_collective_time(table, CollectiveOp::kAllReduce, 16, 4, Bytes(mib)));
  CHECK_FALSE(hw::measured_collective_time(table, CollectiveOp::kAllGather, 16, 2, Bytes(mib)));
  auto forced = table;
  for (auto& m : forced) m.algorithm = "ring";
  CHECK_FALSE(hw::measured_collective_time(forced, CollectiveOp::kAllReduce, 16, 2, Bytes(mib)));
}

TEST_CASE("the measured table: the runs of one shape answer together, nearest rows first") {
  // Two logs of one shape: 1 MiB and 1 GiB, then 2-512 MiB. A size either measured answers as
  // measured, and one between answers from its nearest rows, whichever log they came from:
  // until 2026-12-05 the first log whose sizes spanned the call answered alone (64 MiB at
  // +101 %, a reviewer's import; the other order answered every size exactly).
  const double mib = 1 << 20;
  std::vector<hw::CollectiveMeasurement> sparse = {row(mib, 35.0), row(1024 * mib, 4966.0)};
  std::vector<hw::CollectiveMeasurement> dense;
  for (double m = 2; m <= 512; m *= 2) {
    dense.push_back(row(m * mib, 10.0 * m));
    dense.back().run = "dense:1";
  }
  for (const bool sparse_first : {true, false}) {
    CAPTURE(sparse_first);
    std::vector<hw::CollectiveMeasurement> table = sparse_first ? sparse : dense;
    const auto& second = sparse_first ? dense : sparse;
    table.insert(table.end(), second.begin(), second.end());
    const auto at = [&](double bytes) {
      return hw::measured_collective_time(table, CollectiveOp::kAllReduce, 16, 2, Bytes(bytes))
          ->to_us();
    };
    CHECK(at(64 * mib) == doctest::Approx(640.0));
    CHECK(at(mib) == doctest::Approx(35.0));
    CHECK(at(1024 * mib) == doctest::Approx(4966.0));
    // 3 MiB between the dense log's 2 and 4 MiB: w = ln 1.5 / ln 2 of the way in log size.
    const double w = std::log(1.5) / std::log(2.0);
    CHECK(at(3 * mib) == doctest::Approx(std::exp((1 - w) * std::log(20.0) + w * std::log(40.0))));
    // 768 MiB between the dense log's 512 MiB and the sparse log's 1 GiB.
    const double v = std::log(1.5) / std::log(2.0);
    CHECK(at(768 * mib) ==
          doctest::Approx(std::exp((1 - v) * std::log(5120.0) + v * std::log(4966.0))));
  }
  // A log of in-place rows alone (its out-of-place columns N/A) answers its sizes beside a
  // log with both: each run's side is chosen before they are pooled (a reviewer found the
  // pooled table dropping it, 2026-12-05).
  std::vector<hw::CollectiveMeasurement> sides = {row(mib, 100.0), row(mib, 70.0, true)};
  for (const double m : {2.0, 4.0}) {
    sides.push_back(row(m * mib, 100.0 * m, true));
    sides.back().run = "in-place:1";
  }
  const auto side_at = [&](double bytes) {
    return hw::measured_collective_time(sides, CollectiveOp::kAllReduce, 16, 2, Bytes(bytes))
        ->to_us();
  };
  CHECK(side_at(mib) == doctest::Approx(100.0));  // the first log's out-of-place row
  CHECK(side_at(4 * mib) == doctest::Approx(400.0));
  // A size both logs measured answers from the first in table order.
  std::vector<hw::CollectiveMeasurement> twice = {row(mib, 100.0), row(mib, 999.0)};
  twice.back().run = "other:1";
  CHECK(hw::measured_collective_time(twice, CollectiveOp::kAllReduce, 16, 2, Bytes(mib))->to_us() ==
        doctest::Approx(100.0));
  // The first row in table order, not the first run: runs whose rows interleave (a reviewer's
  // case against the first version of hw::run_side, which took the run that began first).
  std::vector<hw::CollectiveMeasurement> interleaved = {row(mib, 10.0), row(4 * mib, 200.0),
                                                        row(16 * mib, 800.0), row(4 * mib, 400.0)};
  interleaved[1].run = interleaved[2].run = "b:1";
  CHECK(hw::measured_collective_time(interleaved, CollectiveOp::kAllReduce, 16, 2, Bytes(4 * mib))
            ->to_us() == doctest::Approx(200.0));
}

TEST_CASE("an all-gather run over one GPU a node pins PAT's latency, for PAT alone") {
  // 16 H100 nodes, one GPU each: NCCL runs PAT up to about 11 MiB. A run written from the model
  // with PAT's latency +20 us, 8 B to 1 MiB, is fitted back to PAT, not to every algorithm.
  const auto topology = std::make_shared<const net::Topology>(
      io::load_cluster(source("topologies/dgx-h100-superpod-6144.json")));
  const auto model = plan::scaled_nccl_model(
      topology, io::read_collective_constants(source("calibrate/profiles/h100-sxm5-80gb.json")),
      CollectiveOp::kAllGather, 16, 16, "test");
  hw::CollectiveScale truth;
  const auto pat = static_cast<std::size_t>(hw::scaled_algorithm_index(hw::CollAlgorithm::kPat));
  for (auto& protocol : truth.latency_by_algorithm[1][pat]) protocol = {true, 20.0};
  const auto rows = synthetic(model, truth, 8.0, 1048576.0);
  const hw::CollectiveScaleFit f =
      calibrate::fit_collective_scale(rows, model, CollectiveOp::kAllGather, 16, 16);
  CHECK(f.latency_algorithm == "pat");
  CHECK(f.latency_offset_us == doctest::Approx(20.0).epsilon(0.02));
  const hw::CollectiveScale s = hw::collective_scale({f});
  CHECK(s.latency_offset_us(true, hw::CollAlgorithm::kPat, hw::CollProtocol::kSimple) ==
        doctest::Approx(20.0).epsilon(0.02));
  CHECK(s.latency_offset_us(true, hw::CollAlgorithm::kTree, hw::CollProtocol::kLL) == 0.0);
  CHECK(s.latency_offset_us(true, hw::CollAlgorithm::kRing, hw::CollProtocol::kLL) == 0.0);
}
