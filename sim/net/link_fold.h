// A quotient of the network by a symmetry of the traffic on it: when every flow that uses a
// GPU's own links (Topology::own_links) is a coflow over every copy of a symmetric job, say
// every DP replica in lockstep, then each copy of such a link carries the same load, and one
// copy (the image) can stand for all of them. A coflow's hop on any copy becomes a hop on the
// image, its weight divided by the number of copies the image stands for; the per-link
// constraints are the same ones, each written once, so max-min gives the same rates, exactly.
// Fabric links (ToR and above) are never folded: ECMP loads them unevenly, and those are the
// ones the job's groups really contend for.
//
// Built from a map of GPUs onto their images (GPU of replica d -> the same rank's GPU of
// replica 0). It refuses (empty()) where the map does not carry over to links one-to-one: a
// node shared with GPUs outside the map, or GPUs of one node imaged onto links that disagree.
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include "net/topology.h"

namespace megasim::net {

class LinkFold {
 public:
  // `images`: (GPU, its image) for every GPU the traffic uses; images map to themselves.
  static std::optional<LinkFold> build(const Topology& topology,
                                       const std::vector<std::pair<int, int>>& images);
  // The path on the quotient: each folded hop on its image with its weight shared out, each
  // link once (Topology::merge_repeated_links).
  void apply(std::vector<Hop>& path) const;
  // How many links stand folded onto another.
  std::size_t folded_links() const { return folded_; }

 private:
  static constexpr LinkId kNone = 0xffffffffu;
  std::vector<LinkId> image_;  // by link: its image, kNone when not folded
  std::vector<float> copies_;  // by image link: how many links it stands for
  std::size_t folded_ = 0;
};

}  // namespace megasim::net
