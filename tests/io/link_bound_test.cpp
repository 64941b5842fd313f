// The least time a collective takes on a cluster's links (io/link_bound.h), and the refusal of
// a measured row that ran faster than them.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "input_error_of.h"
#include "io/link_bound.h"

using megasim::Bytes;
using megasim::BytesPerSec;
using megasim::Time;
using megasim::hw::CollectiveMeasurement;
using megasim::hw::CollectiveOp;
using megasim::io::check_rows_against_links;
using megasim::io::least_collective_time;
using megasim::test::input_error_of;

namespace {

// A DGX H100's node: NVLink 450 GB/s a GPU, PCIe 63 GB/s, eight 50 GB/s (400 Gb/s) NICs.
megasim::net::ClusterSpec dgx_h100() {
  megasim::net::ClusterSpec c;
  c.name = "test-h100";
  c.gpus = 64;
  c.node.gpus = 8;
  c.node.nvlink_per_gpu = BytesPerSec(450e9);
  c.node.pcie = BytesPerSec(63e9);
  c.node.nics = 8;
  c.node.nic = BytesPerSec(50e9);
  return c;
}

CollectiveMeasurement row(CollectiveOp op, int ranks, int nodes, double bytes, double seconds) {
  CollectiveMeasurement m;
  m.op = op;
  m.ranks = ranks;
  m.nodes = nodes;
  m.size = Bytes(bytes);
  m.time = Time::from_seconds(seconds);
  m.origin = "test.log:" + std::to_string(ranks);
  return m;
}

constexpr double kMiB = 1048576.0;

}  // namespace

TEST_CASE("the least time: a node's NICs across nodes, a GPU's NVLink on one") {
  const auto node = dgx_h100().node;
  // All-reduce on 2 nodes: each node takes in the whole buffer over its 400 GB/s of NICs.
  auto b = least_collective_time(node, CollectiveOp::kAllReduce, 16, 2, Bytes(8 * kMiB));
  CHECK(b.least.to_seconds() == doctest::Approx(8 * kMiB / 400e9).epsilon(1e-4).scale(0));
  CHECK(b.link == "a node's 8 NICs");
  // On one node: the whole buffer into each GPU over its NVLink.
  b = least_collective_time(node, CollectiveOp::kAllReduce, 8, 1, Bytes(8 * kMiB));
  CHECK(b.least.to_seconds() == doctest::Approx(8 * kMiB / 450e9).epsilon(1e-4).scale(0));
  CHECK(b.link == "a GPU's NVLink");
  // All-gather on 2 nodes: 15/16 of the buffer into a GPU (NVLink, 2.08 ps a byte) bounds it
  // more than half of it into a node (NICs, 1.25 ps a byte).
  b = least_collective_time(node, CollectiveOp::kAllGather, 16, 2, Bytes(8 * kMiB));
  CHECK(b.least.to_seconds() ==
        doctest::Approx(15.0 / 16.0 * 8 * kMiB / 450e9).epsilon(1e-4).scale(0));
  CHECK(b.link == "a GPU's NVLink");
  // All-to-all on 2 nodes: each of 8 GPUs sends half its buffer to the other node.
  b = least_collective_time(node, CollectiveOp::kAllToAll, 16, 2, Bytes(8 * kMiB));
  CHECK(b.least.to_seconds() == doctest::Approx(4.0 * 8 * kMiB / 400e9).epsilon(1e-4).scale(0));
  // Reduce-scatter on 4 nodes: 31/32 of the buffer out of a GPU (2.15 ps a byte) over 3/4 of
  // it out of a node (1.88 ps a byte).
  b = least_collective_time(node, CollectiveOp::kReduceScatter, 32, 4, Bytes(64 * kMiB));
  CHECK(b.least.to_seconds() ==
        doctest::Approx(31.0 / 32.0 * 64 * kMiB / 450e9).epsilon(1e-4).scale(0));
  CHECK(b.link == "a GPU's NVLink");
  // All-to-all on nodes not full (12 ranks on 2 nodes of 8: 8 + 4 or 6 + 6): the node's
  // g (n - g) / n is not sure, the GPU's 11/12 of the buffer over NVLink is.
  b = least_collective_time(node, CollectiveOp::kAllToAll, 12, 2, Bytes(8 * kMiB));
  CHECK(b.least.to_seconds() ==
        doctest::Approx(11.0 / 12.0 * 8 * kMiB / 450e9).epsilon(1e-4).scale(0));
  b = least_collective_time(node, CollectiveOp::kAllToAll, 9, 2, Bytes(8 * kMiB));
  CHECK(b.link == "a GPU's NVLink");
  // One rank moves nothing.
  CHECK(least_collective_time(node, CollectiveOp::kAllReduce, 1, 1, Bytes(kMiB)).least ==
        Time::zero());
}

TEST_CASE("a GPU without NVLink is bounded by its PCIe link") {
  auto node = dgx_h100().node;
  node.nvlink_per_gpu = BytesPerSec(0.0);
  const auto b = least_collective_time(node, CollectiveOp::kBroadcast, 4, 1, Bytes(kMiB));
  CHECK(b.least.to_seconds() == doctest::Approx(kMiB / 63e9).epsilon(1e-4).scale(0));
  CHECK(b.link == "a GPU's PCIe link");
}

TEST_CASE("a measured row faster than the links is refused with where it came from") {
  const auto cluster = dgx_h100();
  const double least = 64 * kMiB / 400e9;  // all-reduce, 16 ranks on 2 nodes
  std::vector<CollectiveMeasurement> rows{
      row(CollectiveOp::kAllReduce, 16, 2, 64 * kMiB, 0.95 * least),  // within the tolerance
      row(CollectiveOp::kAllReduce, 24, 2, 64 * kMiB, 1e-9),  // 12 GPUs a node: not this cluster
      row(CollectiveOp::kAllReduce, 72, 9, 64 * kMiB, 1e-9),  // 9 nodes: it has 8
  };
  const auto where = [&](std::size_t k) { return "row " + std::to_string(k); };
  CHECK(input_error_of([&] { check_rows_against_links(rows, 0, cluster, where); }).empty());
  rows.push_back(row(CollectiveOp::kAllReduce, 16, 2, 64 * kMiB, 0.85 * least));
  const std::string e = input_error_of([&] { check_rows_against_links(rows, 0, cluster, where); });
  INFO(e);
  CHECK(e.rfind("row 3: all_reduce of 67108864 bytes on 16 ranks / 2 node(s) took 142.6", 0) == 0);
  CHECK(e.find("on cluster 'test-h100' it takes at least 167.772 us") != std::string::npos);
  CHECK(e.find("over a node's 8 NICs at 400.0 GB/s raw") != std::string::npos);
  // Rows before `first` (a base profile's, fitted on their own cluster) are not checked here.
  CHECK(input_error_of([&] { check_rows_against_links(rows, 4, cluster, where); }).empty());
}
