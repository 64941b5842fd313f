// The Boost.Graph behind a Topology, for the few places that walk it (the topology itself, its
// tests and benchmarks). Kept out of net/topology.h so that the many translation units that only
// route flows do not parse Boost.Graph. Vertex g < gpus() is GPU g; each edge carries the index
// of its link in Topology::links().
#pragma once

#include <boost/graph/adjacency_list.hpp>

#include "net/topology.h"

namespace megasim::net {

using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, VertexInfo,
                                    EdgeInfo>;

struct TopologyGraph {
  Graph g;
};

}  // namespace megasim::net
