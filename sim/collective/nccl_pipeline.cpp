// The fill of NCCL's chunked pipeline for tree-shaped algorithms across nodes
// (hw::PipelineConstants says why there is one). NCCL's analytic model has a latency per step and a
// bandwidth term; a tree's channel moves its share chunk by chunk, and each network hop on a
// chunk's way up and down the tree forwards it only whole (transport/net.cc sendProxyProgress: the
// proxy posts a step once the GPU's tail has passed it, Simple and LL128, or once every line's flag
// is set, LL; recvProxyProgress: the receiving GPU sees it once the request has completed). The
// last chunk therefore reaches its last rank 2 x log2(nodes) chunk-times after the bandwidth term
// alone would have it: the fill, one chunk of every concurrent pipeline per network hop, at the
// algorithm's own bandwidth. NVLink hops inside a node are not charged (the chunk crosses them
// at NVLink speed, several times the NIC's share; a stated simplification). The chunk is the one
// NCCL's enqueue.cc picks for the size, so the fill grows with the size until the chunk stops
// growing, which is what moves the half-peak point of a tree from the model's to the logs'.
#include <algorithm>
#include <cmath>

#include "collective/nccl_model.h"

namespace megasim::collective {
namespace {

// enqueue.cc computeColl (NCCL 2.8.4) / calcCollChunking (2.30.7): the chunk thresholds.
constexpr double k128K = 131072.0, k64K = 65536.0, k32K = 32768.0, k256K = 262144.0;
// An LL128 line is 16 words, 15 of data (NCCL_LL128_DATAELEMS / NCCL_LL128_LINEELEMS); an LL
// line 16 bytes, 8 of data.
constexpr double kLl128DataShare = 15.0 / 16.0;
constexpr double kLlDataShare = 0.5;

// NCCL's integer "nBytes / (nChannels * chunkSize)".
double chunks_per_channel(double bytes, int channels, double chunk) {
  return std::floor(bytes / (channels * chunk));
}

}  // namespace

double NcclModel::tree_chunk_bytes(double bytes, const CommShape& shape,
                                   CollProtocol protocol) const {
  const hw::PipelineConstants& k = constants_.pipeline;
  const int nc = channels(shape);
  double chunk = k.step_bytes[static_cast<std::size_t>(protocol)];
  if (protocol == CollProtocol::kSimple) {
    if (!k.tree_chunk_by_depth) return chunk;
    // connect.cc: "depth = nRanks/nNodes - 1 + log2i(nNodes)", a good approximation.
    const int depth = shape.ranks / shape.nodes - 1 + log2_floor(shape.nodes);
    while (chunks_per_channel(bytes, nc, chunk) < depth * 8 && chunk > k128K) chunk /= 2;
    while (chunks_per_channel(bytes, nc, chunk) < depth * 4 && chunk > k64K) chunk /= 2;
    while (chunks_per_channel(bytes, nc, chunk) < depth && chunk > k32K) chunk /= 2;
    return chunk;
  }
  if (protocol == CollProtocol::kLL128) {
    const double ppn = static_cast<double>(shape.ranks) / shape.nodes;
    const double steps = 1 + log2_floor(shape.nodes) + 0.1 * ppn;
    while (chunks_per_channel(bytes, nc, chunk) < steps * 64 / ppn && chunk > k128K) chunk /= 2;
    while (chunks_per_channel(bytes, nc, chunk) < steps * 16 / ppn && chunk > k32K) chunk /= 2;
    return chunk * kLl128DataShare;
  }
  return chunk * kLlDataShare;
}

double NcclModel::nvls_tree_chunk_bytes(double bytes, const CommShape& shape, int heads) const {
  const hw::PipelineConstants& k = constants_.pipeline;
  // nvls.cc: treeMaxChunkSize is 64 KiB on 4 nodes or more, else the NVLS chunk itself.
  double chunk = shape.nodes >= 4 ? std::min(k.nvls_chunk_bytes, k.nvls_tree_chunk_bytes_4_nodes)
                                  : k.nvls_chunk_bytes;
  const double ops = static_cast<double>(k.nvls_channels) * heads;
  if (bytes < 32 * ops * chunk && chunk > k256K) chunk = k256K;
  if (bytes < 16 * ops * chunk && chunk > k128K) chunk = k128K;
  if (bytes < 4 * ops * chunk && chunk > k64K) chunk = k64K;
  if (bytes < 1 * ops * chunk && chunk > k32K) chunk = k32K;
  return chunk;
}

Time NcclModel::pipeline_fill(const CollectiveCall& call, const CommShape& shape,
                              CollAlgorithm algorithm, CollProtocol protocol, double algbw) const {
  const hw::PipelineConstants& k = constants_.pipeline;
  if (!k.available || shape.nodes < 2 || !(algbw > 0.0)) return Time::zero();
  const double bytes = call.bytes.value();
  double loop = 0.0;  // one chunk of every concurrent pipeline
  if (algorithm == CollAlgorithm::kTree) {
    // Where the profile times the tree with NCCL's own mid-size correction (Hopper's), that
    // stands for it; a correction that serves the choice only (A100's) leaves the fill.
    if (constants_.has_tree_correction && !constants_.tree_correction_choice_only)
      return Time::zero();
    loop = channels(shape) * tree_chunk_bytes(bytes, shape, protocol);
  } else if (algorithm == CollAlgorithm::kNvlsTree && k.nvls_channels > 0) {
    const int heads = nvls_graph(shape).heads;
    loop =
        static_cast<double>(k.nvls_channels) * heads * nvls_tree_chunk_bytes(bytes, shape, heads);
  } else {
    return Time::zero();
  }
  // A call smaller than one loop runs one chunk per pipeline, of its own size.
  const int network_hops = 2 * log2_floor(shape.nodes);
  return Time::from_seconds(network_hops * std::min(loop, bytes) / algbw);
}

}  // namespace megasim::collective
