#include "net/link_fold.h"

#include <unordered_set>

namespace megasim::net {

std::optional<LinkFold> LinkFold::build(const Topology& topology,
                                        const std::vector<std::pair<int, int>>& images) {
  LinkFold fold;
  fold.image_.assign(topology.links().size(), kNone);
  fold.copies_.assign(topology.links().size(), 0.0f);
  // Every GPU of a node the map touches must be in the map: a path may cross a node's other
  // GPUs' links (NCCL's PXN leaves by the rail owner's NIC).
  std::unordered_set<int> mapped;
  for (const auto& [gpu, image] : images) mapped.insert(gpu);
  const int per_node = topology.gpus_per_node();
  for (const auto& [gpu, image] : images) {
    const int first = topology.node_of(gpu) * per_node;
    for (int g = first; g < first + per_node; ++g) {
      if (!mapped.count(g)) return std::nullopt;
    }
  }
  std::vector<LinkId> from, to;
  for (const auto& [gpu, image] : images) {
    topology.own_links(gpu, from);
    topology.own_links(image, to);
    if (from.size() != to.size()) return std::nullopt;
    for (std::size_t i = 0; i < from.size(); ++i) {
      LinkId& slot = fold.image_[from[i]];
      if (slot == kNone) {
        slot = to[i];
        fold.copies_[to[i]] += 1.0f;
      } else if (slot != to[i]) {
        return std::nullopt;
      }
    }
  }
  for (LinkId l = 0; l < fold.image_.size(); ++l) {
    if (fold.image_[l] == kNone) continue;
    // An image must be its own image, or a copy would be folded twice.
    if (fold.image_[fold.image_[l]] != fold.image_[l]) return std::nullopt;
    if (fold.image_[l] != l) ++fold.folded_;
  }
  return fold;
}

void LinkFold::apply(std::vector<Hop>& path) const {
  for (Hop& h : path) {
    if (image_[h.link] != kNone) h.link = image_[h.link];
  }
  // Summed first, shared out after: the copies' weights are whole numbers more often than not.
  Topology::merge_repeated_links(path);
  for (Hop& h : path) {
    if (copies_[h.link] > 0.0f) h.weight /= copies_[h.link];
  }
}

}  // namespace megasim::net
