// Max-min flow solver on systems small enough to solve by hand (arithmetic in each comment),
// then invariants on random systems.
#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

#include "engine/rng.h"
#include "engine/simulator.h"
#include "net/flow_solver.h"
#include "random_flows.h"

using namespace megasim;
using net::FlowSolver;
using net::Hop;

namespace {

std::vector<Hop> path(std::initializer_list<net::LinkId> links) {
  std::vector<Hop> p;
  for (auto l : links) p.push_back(Hop{l, 1.0f});
  return p;
}

std::vector<BytesPerSec> caps(std::initializer_list<double> gbps) {
  std::vector<BytesPerSec> c;
  for (double g : gbps) c.push_back(gbyte_per_s(g));
  return c;
}

}  // namespace

TEST_CASE("one bottleneck: two flows halve the link and the survivor takes it all") {
  // Link 10 GB/s. A = 10 GB, B = 20 GB. Both at 5 GB/s until A ends at 10/5 = 2 s; B then
  // has 20 - 2 x 5 = 10 GB left at 10 GB/s: ends at 2 + 1 = 3 s.
  Simulator sim;
  FlowSolver s(sim, caps({10}));
  Time a_end, b_end;
  auto a = s.start_path_flow(path({0}), Bytes(10e9), Time::zero(), [&] { a_end = sim.now(); });
  auto b = s.start_path_flow(path({0}), Bytes(20e9), Time::zero(), [&] { b_end = sim.now(); });
  sim.run_until(Time::zero());
  CHECK(s.rate(a).value() == doctest::Approx(5e9));
  CHECK(s.rate(b).value() == doctest::Approx(5e9));
  sim.run();
  CHECK(a_end == Time::from_seconds(2.0));
  CHECK(b_end == Time::from_seconds(3.0));
  CHECK(s.active_flows() == 0);
}

TEST_CASE("parking lot: the long flow gets the least fair share along its way") {
  // Links L0 = 1, L1 = 2, L2 = 1 GB/s. Long flow over all three; one short flow per link.
  // Filling: L0 and L2 saturate at 1/2 (two flows each): long = s0 = s2 = 0.5.
  // L1 then has 2 - 0.5 = 1.5 left for s1 alone: s1 = 1.5.
  Simulator sim;
  FlowSolver s(sim, caps({1, 2, 1}));
  auto lng = s.start_path_flow(path({0, 1, 2}), Bytes(1e12), Time::zero(), [] {});
  auto s0 = s.start_path_flow(path({0}), Bytes(1e12), Time::zero(), [] {});
  auto s1 = s.start_path_flow(path({1}), Bytes(1e12), Time::zero(), [] {});
  auto s2 = s.start_path_flow(path({2}), Bytes(1e12), Time::zero(), [] {});
  sim.run_until(Time::zero());
  CHECK(s.rate(lng).value() == doctest::Approx(0.5e9));
  CHECK(s.rate(s0).value() == doctest::Approx(0.5e9));
  CHECK(s.rate(s1).value() == doctest::Approx(1.5e9));
  CHECK(s.rate(s2).value() == doctest::Approx(0.5e9));
}

TEST_CASE("multi-path: a sprayed flow loads each branch with its weight") {
  // Spray flow over L0 and L1 (weight 1/2 each, 1 GB/s links) plus flow A on L0 alone.
  // Equal rise r: L0 carries r/2 + r = 1.5 r <= 1, L1 carries r/2 <= 1. L0 binds first at
  // r = 2/3, and both flows cross it: spray = A = 2/3 GB/s; L1 carries 1/3 GB/s.
  Simulator sim;
  FlowSolver s(sim, caps({1, 1}));
  auto spray = s.start_path_flow({Hop{0, 0.5f}, Hop{1, 0.5f}}, Bytes(1e12), Time::zero(), [] {});
  auto a = s.start_path_flow(path({0}), Bytes(1e12), Time::zero(), [] {});
  sim.run_until(Time::zero());
  CHECK(s.rate(spray).value() == doctest::Approx(2e9 / 3));
  CHECK(s.rate(a).value() == doctest::Approx(2e9 / 3));
  CHECK(s.link_load(0).value() == doctest::Approx(1e9));
  CHECK(s.link_load(1).value() == doctest::Approx(1e9 / 3));
}

TEST_CASE("many flows on one link share it equally and end together") {
  // 1000 flows of 1 MB on a 1 GB/s link: 1 MB/s each, all end at 1e6 / 1e6 = 1 s.
  Simulator sim;
  FlowSolver s(sim, caps({1}));
  int done = 0;
  Time last;
  for (int i = 0; i < 1000; ++i)
    s.start_path_flow(path({0}), Bytes(1e6), Time::zero(), [&] { ++done; last = sim.now(); });
  sim.run();
  CHECK(done == 1000);
  CHECK(last == Time::from_seconds(1.0));
  CHECK(s.solves() == 2);  // one for the arrivals, one when they all leave
}

TEST_CASE("on_done runs after the path latency") {
  // 1 GB at 1 GB/s takes 1 s; a 5 us path latency delivers the last byte at 1.000005 s.
  Simulator sim;
  FlowSolver s(sim, caps({1}));
  Time end;
  s.start_path_flow(path({0}), Bytes(1e9), Time::from_us(5), [&] { end = sim.now(); });
  sim.run();
  CHECK(end == Time::from_seconds(1.000005));
}

TEST_CASE("cancel removes a flow and gives its share back") {
  // Two flows of 4 GB on 2 GB/s: 1 GB/s each. B is cancelled at 1 s (A has 3 GB left), A then
  // runs at 2 GB/s and ends at 1 + 1.5 = 2.5 s; B's on_done never runs.
  Simulator sim;
  FlowSolver s(sim, caps({2}));
  Time a_end;
  bool b_done = false;
  s.start_path_flow(path({0}), Bytes(4e9), Time::zero(), [&] { a_end = sim.now(); });
  auto b = s.start_path_flow(path({0}), Bytes(4e9), Time::zero(), [&] { b_done = true; });
  sim.at(Time::from_seconds(1.0), [&] { CHECK(s.cancel_flow(b)); });
  sim.run();
  CHECK_FALSE(b_done);
  CHECK(a_end == Time::from_seconds(2.5));
  CHECK_FALSE(s.cancel_flow(b));
}

TEST_CASE("incremental: a change re-solves only the component it touches") {
  // Links 0 and 1 share no flow. 50 flows on link 0, 3 on link 1; a new flow on link 1 re-solves
  // the 4 flows of link 1 only, and link 0's flows keep their rate.
  Simulator sim;
  FlowSolver s(sim, caps({1, 1}));
  std::vector<net::FlowId> on0;
  for (int i = 0; i < 50; ++i) on0.push_back(s.start_path_flow(path({0}), Bytes(1e12), Time::zero(), [] {}));
  for (int i = 0; i < 3; ++i) s.start_path_flow(path({1}), Bytes(1e12), Time::zero(), [] {});
  sim.run_until(Time::zero());
  const auto before = s.flows_solved();
  sim.at(Time::from_ms(1), [&] { s.start_path_flow(path({1}), Bytes(1e12), Time::zero(), [] {}); });
  sim.run_until(Time::from_ms(1));
  CHECK(s.flows_solved() - before == 4);
  CHECK(s.rate(on0[0]).value() == doctest::Approx(1e9 / 50));
}

TEST_CASE("random systems: no link over capacity and every flow has a saturated bottleneck") {
  Simulator sim(7);
  Rng& rng = sim.rng();
  const int nlinks = 40;
  std::vector<BytesPerSec> c;
  for (int i = 0; i < nlinks; ++i) c.push_back(gbyte_per_s(rng.uniform(1.0, 50.0)));
  FlowSolver s(sim, c);
  std::vector<net::FlowId> ids;
  std::vector<std::vector<Hop>> paths;
  for (int f = 0; f < 300; ++f) {
    std::vector<Hop> p;
    const int len = 1 + static_cast<int>(rng.below(5));
    while (static_cast<int>(p.size()) < len) {
      const auto l = static_cast<net::LinkId>(rng.below(nlinks));
      if (std::none_of(p.begin(), p.end(), [&](const Hop& h) { return h.link == l; }))
        p.push_back(Hop{l, rng.bernoulli(0.2) ? 0.5f : 1.0f});
    }
    paths.push_back(p);
    ids.push_back(s.start_path_flow(p, Bytes(rng.uniform(1e8, 1e10)), Time::zero(), [] {}));
  }
  const auto check = [&] {
    std::vector<double> max_rate(nlinks, 0.0);
    for (std::size_t f = 0; f < ids.size(); ++f)
      if (s.active(ids[f]))
        for (const Hop& h : paths[f]) max_rate[h.link] = std::max(max_rate[h.link], s.rate(ids[f]).value());
    for (int l = 0; l < nlinks; ++l)
      CHECK(s.link_load(static_cast<net::LinkId>(l)).value() <= c[static_cast<std::size_t>(l)].value() * (1 + 1e-6));
    for (std::size_t f = 0; f < ids.size(); ++f) {
      if (!s.active(ids[f])) continue;
      bool bottlenecked = false;
      for (const Hop& h : paths[f]) {
        // Max-min: some link on the path is full and no flow on it runs faster than this one.
        const bool saturated = s.link_load(h.link).value() >= c[h.link].value() * (1 - 1e-6);
        if (saturated && s.rate(ids[f]).value() >= max_rate[h.link] * (1 - 1e-6)) bottlenecked = true;
      }
      CHECK(bottlenecked);
    }
  };
  sim.run_until(Time::zero());
  check();
  // Half-way through departures the invariants still hold.
  sim.run_until(Time::from_seconds(0.5));
  CHECK(s.active_flows() < 300);
  CHECK(s.active_flows() > 0);
  check();
  sim.run();
  CHECK(s.active_flows() == 0);
}

TEST_CASE("local updates: a flow with room on its shared links takes its own link's rate unsolved") {
  // Link 0 (30 GB/s) shared; links 1 and 2 (10 GB/s) and 3 (20 GB/s) each one flow's own.
  // A on {1, 0}: alone on 1, 10 GB/s; 0 has 30 free: taken without a solve. B on {2, 0}: the
  // same, 0 now carries 20. C on {3, 0} wants 20 but 0 has 10 left: solved, and max-min gives
  // all three 30 / 3 = 10 GB/s. A's departure (10 GB at 10 GB/s, at 1 s) frees link 0, whose
  // flows B and C it bottlenecks (B = C = 10 at its top): solved again, C rises to 20.
  Simulator sim;
  FlowSolver s(sim, caps({30, 10, 10, 20}));
  s.set_local_updates(true);
  auto a = s.start_path_flow(path({1, 0}), Bytes(10e9), Time::zero(), [] {});
  auto b = s.start_path_flow(path({2, 0}), Bytes(1e12), Time::zero(), [] {});
  CHECK(s.local_updates() == 2);
  CHECK(s.rate(a).value() == doctest::Approx(10e9));
  auto c = s.start_path_flow(path({3, 0}), Bytes(1e12), Time::zero(), [] {});
  sim.run_until(Time::zero());
  CHECK(s.solves() == 1);
  CHECK(s.rate(c).value() == doctest::Approx(10e9));
  sim.run_until(Time::from_seconds(1));
  CHECK_FALSE(s.active(a));
  CHECK(s.solves() == 2);
  CHECK(s.rate(b).value() == doctest::Approx(10e9));
  CHECK(s.rate(c).value() == doctest::Approx(20e9));
  // B leaves (cancelled): link 0 carries 30 of 30, but C is held by its own link 3 at 20, its
  // top: nothing changes and no solve runs.
  CHECK(s.cancel_flow(b));
  sim.run_until(Time::from_seconds(1));
  CHECK(s.solves() == 2);
  CHECK(s.local_updates() == 3);
  CHECK(s.rate(c).value() == doctest::Approx(20e9));
}

TEST_CASE("local updates: random systems finish as with a solve at every change") {
  // Flows arrive over time on shared links, each with a link of its own; every finish time
  // with local updates matches the one with every change solved (random_flows.h; with caps:
  // flow_cap_test.cpp).
  std::uint64_t local = 0;
  const auto solved = test::random_arrival_ends(11, false, 0.0, nullptr);
  const auto updated = test::random_arrival_ends(11, true, 0.0, &local);
  CHECK(local > 20);
  REQUIRE(solved.size() == updated.size());
  for (std::size_t f = 0; f < solved.size(); ++f)
    CHECK(std::abs((updated[f] - solved[f]).ns()) <= 1);
}

TEST_CASE("reset: a solver reset mid-run on a new simulator behaves as a new solver") {
  // The parking lot of the test above, run to completion on a fresh solver and again on one
  // that was reset while other flows were still running on its first simulator.
  const auto run = [](FlowSolver& s, Simulator& sim) {
    std::vector<Time> ends(4);
    const std::vector<std::vector<Hop>> paths = {path({0, 1, 2}), path({0}), path({1}), path({2})};
    for (std::size_t i = 0; i < paths.size(); ++i) {
      s.start_path_flow(paths[i], Bytes(1e9 * static_cast<double>(i + 1)), Time::zero(),
                        [&ends, &sim, i] { ends[i] = sim.now(); });
    }
    sim.run();
    return ends;
  };
  Simulator fresh_sim;
  FlowSolver fresh(fresh_sim, caps({1, 2, 1}));
  const std::vector<Time> expected = run(fresh, fresh_sim);

  Simulator first;
  FlowSolver reused(first, caps({1, 2, 1}));
  reused.start_path_flow(path({0, 1}), Bytes(5e9), Time::zero(), [] {});
  first.run_until(Time::from_seconds(1.0));  // a flow in flight, a finish event pending
  Simulator second;
  reused.reset(second);
  CHECK(reused.active_flows() == 0);
  CHECK(run(reused, second) == expected);
}

TEST_CASE("a path that crosses a link twice loads it twice: a coflow over both copies") {
  // Link 0 (2 GB/s) crossed twice by A: A's weight there is 2, so A alone gets 1 GB/s. With B
  // (once over link 0) beside it, filling raises both at one rate r: 2r + r = 2, r = 2/3 GB/s.
  Simulator sim;
  FlowSolver s(sim, caps({2, 10}));
  auto a = s.start_path_flow(path({0, 1, 0}), Bytes(1e12), Time::zero(), [] {});
  sim.run_until(Time::zero());
  CHECK(s.rate(a).value() == doctest::Approx(1e9));
  auto b = s.start_path_flow(path({0}), Bytes(1e12), Time::zero(), [] {});
  sim.run_until(Time::zero());
  CHECK(s.rate(a).value() == doctest::Approx(2e9 / 3));
  CHECK(s.rate(b).value() == doctest::Approx(2e9 / 3));
  CHECK(s.link_load(0).value() == doctest::Approx(2e9));
}
