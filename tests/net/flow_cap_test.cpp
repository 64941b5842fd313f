// A flow's rate cap (FlowOptions::max_rate): by hand on one or two links, then the max-min
// invariants with caps on random systems, with and without local updates.
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

std::vector<Hop> one_link(net::LinkId l) {
  return {Hop{l, 1.0f}};
}

}  // namespace

TEST_CASE("a capped flow takes its cap and leaves the rest of the link to the others") {
  // Link 10 GB/s. A capped at 2 GB/s, B not: filling freezes A at 2 (its cap comes first),
  // B takes the 8 left. A 4 GB flow at 2 GB/s ends at 2 s; B's 16 GB: 8 x 2 = 16 by then, so
  // both end at 2 s. Without the cap each would get 5.
  Simulator sim;
  FlowSolver s(sim, {gbyte_per_s(10)});
  Time a_end, b_end;
  auto a = s.start_path_flow(
      one_link(0), Bytes(4e9), Time::zero(), [&] { a_end = sim.now(); }, gbyte_per_s(2));
  auto b = s.start_path_flow(one_link(0), Bytes(16e9), Time::zero(), [&] { b_end = sim.now(); });
  sim.run_until(Time::zero());
  CHECK(s.rate(a).value() == doctest::Approx(2e9));
  CHECK(s.rate(b).value() == doctest::Approx(8e9));
  CHECK(s.link_load(0).value() == doctest::Approx(10e9));
  sim.run();
  CHECK(a_end == Time::from_seconds(2.0));
  CHECK(b_end == Time::from_seconds(2.0));
}

TEST_CASE("a cap above the fair share changes nothing, one below a flow's own link binds") {
  // Link 0 (10 GB/s) shared by A and B, A's cap 6 is above its share 5: 5 and 5. C alone on
  // link 1 (4 GB/s) with cap 3: 3, and the link keeps 1 spare.
  Simulator sim;
  FlowSolver s(sim, {gbyte_per_s(10), gbyte_per_s(4)});
  auto a = s.start_path_flow(
      one_link(0), Bytes(1e12), Time::zero(), [] {}, gbyte_per_s(6));
  auto b = s.start_path_flow(one_link(0), Bytes(1e12), Time::zero(), [] {});
  auto c = s.start_path_flow(
      one_link(1), Bytes(1e12), Time::zero(), [] {}, gbyte_per_s(3));
  sim.run_until(Time::zero());
  CHECK(s.rate(a).value() == doctest::Approx(5e9));
  CHECK(s.rate(b).value() == doctest::Approx(5e9));
  CHECK(s.rate(c).value() == doctest::Approx(3e9));
  CHECK(s.link_load(1).value() == doctest::Approx(3e9));
}

TEST_CASE(
    "a capped flow over a weighted path: the cap is on its rate, the links carry the weights") {
  // Links 0 and 1 (10 GB/s); A sprayed over both (weight 0.5 each), capped at 4 GB/s: each link
  // carries 2 of it. B on link 0 alone takes the 8 left there.
  Simulator sim;
  FlowSolver s(sim, {gbyte_per_s(10), gbyte_per_s(10)});
  auto a = s.start_path_flow(
      {Hop{0, 0.5f}, Hop{1, 0.5f}}, Bytes(1e12), Time::zero(), [] {}, gbyte_per_s(4));
  auto b = s.start_path_flow(one_link(0), Bytes(1e12), Time::zero(), [] {});
  sim.run_until(Time::zero());
  CHECK(s.rate(a).value() == doctest::Approx(4e9));
  CHECK(s.rate(b).value() == doctest::Approx(8e9));
  CHECK(s.link_load(1).value() == doctest::Approx(2e9));
}

TEST_CASE(
    "random systems with caps: no link over capacity, every flow at its cap or bottlenecked") {
  Simulator sim(5);
  Rng& rng = sim.rng();
  const int nlinks = 30;
  std::vector<BytesPerSec> c;
  for (int i = 0; i < nlinks; ++i) c.push_back(gbyte_per_s(rng.uniform(2.0, 40.0)));
  FlowSolver s(sim, c);
  const auto flows = test::random_flows(rng, nlinks, 250, false, 0.4);
  std::vector<net::FlowId> ids;
  for (const auto& f : flows)
    ids.push_back(s.start_path_flow(
        f.path, Bytes(f.bytes), Time::zero(), [] {}, BytesPerSec(f.cap)));
  sim.run_until(Time::zero());
  std::vector<double> fastest(nlinks, 0.0);
  for (std::size_t f = 0; f < ids.size(); ++f)
    for (const Hop& h : flows[f].path)
      fastest[h.link] = std::max(fastest[h.link], s.rate(ids[f]).value());
  int at_cap = 0;
  for (int l = 0; l < nlinks; ++l)
    CHECK(s.link_load(static_cast<net::LinkId>(l)).value() <=
          c[static_cast<std::size_t>(l)].value() * (1 + 1e-6));
  for (std::size_t f = 0; f < ids.size(); ++f) {
    const double rate = s.rate(ids[f]).value();
    CHECK(rate <= flows[f].cap * (1 + 1e-9));
    bool held = rate >= flows[f].cap * (1 - 1e-6);
    at_cap += held ? 1 : 0;
    for (const Hop& h : flows[f].path) {
      const bool saturated = s.link_load(h.link).value() >= c[h.link].value() * (1 - 1e-6);
      if (saturated && rate >= fastest[h.link] * (1 - 1e-6)) held = true;
    }
    CHECK(held);
  }
  CHECK(at_cap > 5);  // the caps do bind somewhere, so the test holds them
}

TEST_CASE("local updates with caps: random systems finish as with a solve at every change") {
  // random_flows.h's arrivals with two flows in five capped.
  std::uint64_t local = 0;
  const auto solved = test::random_arrival_ends(13, false, 0.4, nullptr);
  const auto updated = test::random_arrival_ends(13, true, 0.4, &local);
  CHECK(local > 10);  // some changes were taken without a solve
  REQUIRE(solved.size() == updated.size());
  for (std::size_t f = 0; f < solved.size(); ++f)
    CHECK(std::abs((updated[f] - solved[f]).ns()) <= 1);
}
