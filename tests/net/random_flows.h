// Random flow systems the solver tests share: flows over a few shared links (and, optionally, a
// link of each flow's own), some with a rate cap, arriving over time.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "engine/rng.h"
#include "engine/simulator.h"
#include "net/flow_solver.h"

namespace megasim::test {

struct RandomFlow {
  std::vector<net::Hop> path;
  double bytes = 0.0;
  double cap = std::numeric_limits<double>::infinity();  // bytes per second
  Time at;
};

// `flows` flows over links 0..links-1 (a fifth of the hops at weight 0.5); with `own_links`
// each flow's first hop is a link of its own (links + f); a `capped` share of them
// capped at 0.5-8 GB/s; arrivals in the first 2 ms.
inline std::vector<RandomFlow> random_flows(Rng& rng, int links, int flows, bool own_links,
                                            double capped) {
  std::vector<RandomFlow> out;
  for (int f = 0; f < flows; ++f) {
    RandomFlow r;
    if (own_links) r.path.push_back(net::Hop{static_cast<net::LinkId>(links + f), 1.0f});
    // Beside a link of its own, 0-2 shared hops (many arrivals then fit unsolved); else 1-4.
    const int hops =
        own_links ? static_cast<int>(rng.below(3)) : 1 + static_cast<int>(rng.below(4));
    for (int h = 0; h < hops; ++h) {
      const auto l = static_cast<net::LinkId>(rng.below(links));
      if (std::none_of(r.path.begin(), r.path.end(),
                       [&](const net::Hop& x) { return x.link == l; }))
        r.path.push_back(net::Hop{l, rng.bernoulli(0.2) ? 0.5f : 1.0f});
    }
    r.bytes = rng.uniform(1e6, 1e8);
    if (capped > 0.0 && rng.bernoulli(capped)) r.cap = rng.uniform(0.5e9, 8e9);
    r.at = Time::from_us(static_cast<double>(rng.below(2000)));
    out.push_back(std::move(r));
  }
  return out;
}

// Every flow's end time when 120 such flows, each with a link of its own beside 6 shared
// ones, arrive on a solver with local updates `on` or off; `local` gets the changes taken
// without a solve.
inline std::vector<Time> random_arrival_ends(std::uint64_t seed, bool on, double capped,
                                             std::uint64_t* local) {
  Simulator sim(seed);
  Rng& rng = sim.rng();
  const int shared = 6, own = 120;
  std::vector<BytesPerSec> c;
  for (int i = 0; i < shared + own; ++i) c.push_back(gbyte_per_s(rng.uniform(5.0, 60.0)));
  net::FlowSolver s(sim, c);
  s.set_local_updates(on);
  const auto flows = random_flows(rng, shared, own, true, capped);
  std::vector<Time> end(flows.size(), Time::zero());
  for (std::size_t f = 0; f < flows.size(); ++f) {
    sim.at(flows[f].at, [&s, &sim, &end, f, &flows] {
      s.start_path_flow(
          flows[f].path, Bytes(flows[f].bytes), Time::zero(),
          [&sim, &end, f] { end[f] = sim.now(); }, BytesPerSec(flows[f].cap));
    });
  }
  sim.run();
  if (local != nullptr) *local = s.local_updates();
  return end;
}

}  // namespace megasim::test
