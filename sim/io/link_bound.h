// The least time a collective can take on a cluster's links, whatever algorithm ran it (NCCL's
// rings and trees, or a switch reducing in the network, NVLink SHARP or SHARP on InfiniBand):
// the bytes one GPU, or one node, must receive or send at the least, over the raw rate of its
// links. A measured row faster than that did not run on those links (or its log is wrong), and
// a table that held it would answer with times the cluster cannot give.
//
// The least bytes, for a payload of S bytes as nccl-tests counts it (its "size" column: the
// whole buffer for all-gather, reduce-scatter and all-to-all), n ranks on N nodes of g:
//   all-reduce: S into each GPU (its result depends on every other rank's input), S into
//     each node (the other nodes' part of every element);
//   all-gather: (n-1)/n S into a GPU, (N-1)/N S into a node;
//   reduce-scatter: (n-1)/n S out of a GPU (the other ranks' chunks, which only they reduce),
//     (N-1)/N S out of a node;
//   broadcast and reduce: S into a non-root GPU or node (reduce: into the root, summed in the
//     network at best);
//   all-to-all: (n-1)/n S out of a GPU, g (n-g)/n S out of a node where every node is full
//     (otherwise the counts may differ and the GPU's bound is taken alone);
//   send/recv: S out of a GPU and, across nodes, out of a node.
// A GPU's rate is the faster of its NVLink and its PCIe link (a row across nodes may reach the
// NICs either way); a node's is its NICs' together. Both bounds hold, so the larger is taken.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "engine/time.h"
#include "engine/units.h"
#include "hw/device_profile.h"
#include "net/cluster_spec.h"

namespace megasim::io {

// A row may run this much faster than the least time before it is refused: the raw rates are
// the datasheets' and nccl-tests prints its times rounded.
constexpr double kLinkBoundTolerance = 0.9;

struct LinkBound {
  Time least;             // the least time (zero for one rank)
  Bytes bytes{0.0};       // the bytes that bound it
  BytesPerSec rate{0.0};  // the raw rate, per direction, of the link that bounds it
  std::string link;       // "a GPU's NVLink" or "a node's 8 NICs"
};

LinkBound least_collective_time(const net::NodeSpec& node, hw::CollectiveOp op, int ranks,
                                int nodes, Bytes size);

// InputError at the first row of `rows` (from index `first` on) that ran in under
// kLinkBoundTolerance × its least time on `cluster`'s nodes: `where(k)` names row k (a log's
// line, a profile's JSON path). Rows of more GPUs a node than the cluster's nodes hold, or of
// more nodes than it has, are passed over: they answer no shape there.
void check_rows_against_links(const std::vector<hw::CollectiveMeasurement>& rows, std::size_t first,
                              const net::ClusterSpec& cluster,
                              const std::function<std::string(std::size_t)>& where);

// The same for a device profile's whole collective table where a command meets it with a
// cluster, each row named "FILE: device profile 'NAME': collective_table[k] (from LOG:LINE)".
void check_profile_against_links(const hw::DeviceProfile& profile, const std::string& file,
                                 const net::ClusterSpec& cluster);

}  // namespace megasim::io
