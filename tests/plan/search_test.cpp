// `megasim search` through the library: the analytic stage against the event-level executor on
// three scenarios, every pruned plan counted, and no plan the memory model rejects ranked.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <barrier>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "io/inputs.h"
#include "io/scenario.h"
#include "plan/search.h"
#include "step/workload_assembly.h"
#include "workload/memory.h"

using namespace megasim;

namespace {

io::Inputs inputs_of(const std::string& scenario) {
  io::InputOptions o;
  o.run_level = false;
  return io::load_inputs(
      io::load_scenario(std::filesystem::path(MEGASIM_SOURCE_DIR) / scenario, {}), o);
}

std::vector<double> ranks(const std::vector<double>& v) {
  std::vector<std::size_t> order(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&v](std::size_t a, std::size_t b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (std::size_t k = 0; k < order.size(); ++k) r[order[k]] = static_cast<double>(k);
  return r;
}

// Spearman's rank correlation (no ties among step times of different plans here).
double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  const std::vector<double> ra = ranks(a), rb = ranks(b);
  double d2 = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) d2 += (ra[i] - rb[i]) * (ra[i] - rb[i]);
  const double n = static_cast<double>(a.size());
  return 1.0 - 6.0 * d2 / (n * (n * n - 1.0));
}

}  // namespace

TEST_CASE("search: spearman of hand-made rankings (the statistic the next test relies on)") {
  CHECK(spearman({1, 2, 3, 4}, {10, 20, 30, 40}) == doctest::Approx(1.0));
  CHECK(spearman({1, 2, 3, 4}, {40, 30, 20, 10}) == doctest::Approx(-1.0));
  // One swap of neighbours among 4: d² = 2, 1 − 6·2/(4·15) = 0.8.
  CHECK(spearman({1, 2, 3, 4}, {1, 3, 2, 4}) == doctest::Approx(0.8));
}

// The top 200 plans by estimate (all of them when fewer), each re-simulated event by event: their
// two rankings agree (Spearman ≥ 0.9) and the plan the estimate puts first is the event-level best,
// or within 0.1 % of it (the Megatron-LM scenario's best two plans differ by 0.01 %: a tie).
TEST_CASE("search: analytic and event-level rankings agree on the top 200 of three scenarios") {
  for (const char* scenario : {"scenarios/validation/megascale-175b-256-megascale-iteration.json",
                               "scenarios/validation/megascale-175b-256-megatron-iteration.json",
                               "scenarios/validation/korthikanti-175b-selective.json"}) {
    const std::string name = scenario;
    CAPTURE(name);
    const io::Inputs in = inputs_of(scenario);
    plan::SearchOptions o;
    o.top_k = 200;
    const plan::SearchResult r = plan::search(in, o);
    // Korthikanti et al.'s 175B on 64 GPUs has 183 feasible plans: all of them.
    REQUIRE(r.ranked.size() == std::min<std::size_t>(200, r.analytic.size()));
    REQUIRE(r.ranked.size() >= 150);
    std::vector<double> analytic, event;
    for (const auto& p : r.ranked) {
      REQUIRE(p.event);
      analytic.push_back(p.analytic.step_time.to_seconds());
      event.push_back(p.event->step_time.to_seconds());
    }
    CHECK(spearman(analytic, event) >= 0.9);
    const std::size_t analytic_best = static_cast<std::size_t>(
        std::min_element(analytic.begin(), analytic.end()) - analytic.begin());
    // r.ranked is in event-level order: its first is the event-level best.
    CHECK(event[analytic_best] <= event.front() * 1.001);
  }
}

TEST_CASE("search: every plan of the space is feasible or counted under one pruning reason") {
  const io::Inputs in =
      inputs_of("scenarios/validation/megascale-175b-256-megascale-iteration.json");
  plan::SpaceOptions o;
  o.gpus = {256, 280, 100000};  // tp 5 and 7 divide 280 but not the 96 heads; 100,000 GPUs
                                // are more than the cluster has
  const plan::Space s = plan::enumerate_space(in, o);
  std::int64_t pruned = 0;
  for (const auto n : s.pruned) pruned += n;
  CHECK(pruned + static_cast<std::int64_t>(s.feasible.size()) == s.size);
  for (const auto n : s.pruned) CHECK(n > 0);  // every reason occurs
  // The space of a GPU count the cluster does not have (where dp is never 1): tp 1..8,
  // (pp, vpp) with pp·vpp dividing 96 layers (52 pairs), micro-batch 1, 2, 4, 8, three
  // recomputes, SP (tp > 1) and the distributed optimizer: 52 × 4 × 3 × 2 × (1 + 7 × 2).
  o.gpus = {100000};
  const plan::Space too_big = plan::enumerate_space(in, o);
  CHECK(too_big.size == 18720);
  CHECK(too_big.pruned[static_cast<std::size_t>(plan::Prune::kClusterSize)] == 18720);
  for (const auto& c : s.feasible) CHECK(c.plan.gpus() <= in.cluster.gpus);
}

TEST_CASE("search: a plan the memory model rejects is never ranked") {
  const io::Inputs in =
      inputs_of("scenarios/validation/megascale-175b-256-megascale-iteration.json");
  plan::SearchOptions o;
  o.top_k = 20;
  // No recompute, no distributed optimizer, large micro-batches: most of these do not fit.
  o.space.restrict = {
      {"recompute", {"none"}}, {"distributed_optimizer", {"false"}}, {"micro_batch", {"4", "8"}}};
  const plan::SearchResult r = plan::search(in, o);
  CHECK(r.space.pruned[static_cast<std::size_t>(plan::Prune::kMemory)] > 0);
  REQUIRE(!r.analytic.empty());
  // Every ranked plan fits on every stage by the one memory model (not only the two stages
  // enumeration checks), as the event-level assembly would insist.
  for (const auto& p : r.analytic) {
    const step::AssembledWorkload w =
        step::assemble_workload(in.model, p.candidate.plan, p.candidate.system);
    for (const auto& m : w.memory) CHECK(m.total() <= in.device.memory);
  }
  // tp 1, pp 1 holds all of 175B on one GPU: rejected, so absent.
  for (const auto& p : r.analytic) CHECK(p.candidate.plan.tp * p.candidate.plan.pp > 1);
}

TEST_CASE("search: the result does not depend on how the plans are split") {
  const io::Inputs in = inputs_of("scenarios/validation/korthikanti-175b-selective.json");
  plan::SearchOptions o;
  o.top_k = 10;
  const plan::SearchResult one = plan::search(in, o);
  // Two shares on two threads, gathering through shared slots as MPI's all-gather would.
  std::barrier sync(2);
  std::array<plan::FigureMap, 2> slots;
  auto share = [&](int rank) {
    plan::SearchShare s;
    s.rank = rank;
    s.size = 2;
    s.gather = [&, rank](const plan::FigureMap& mine) {
      slots[static_cast<std::size_t>(rank)] = mine;
      sync.arrive_and_wait();
      plan::FigureMap all = slots[0];
      all.insert(slots[1].begin(), slots[1].end());
      sync.arrive_and_wait();  // both have read before either writes again
      return all;
    };
    return s;
  };
  plan::SearchResult r0, r1;
  std::thread t([&] { r1 = plan::search(in, o, share(1)); });
  r0 = plan::search(in, o, share(0));
  t.join();
  for (const plan::SearchResult* two : {&r0, &r1}) {
    REQUIRE(two->ranked.size() == one.ranked.size());
    for (std::size_t i = 0; i < one.ranked.size(); ++i) {
      CHECK(two->ranked[i].candidate.key == one.ranked[i].candidate.key);
      CHECK(two->ranked[i].event->step_time == one.ranked[i].event->step_time);
      CHECK(two->ranked[i].analytic.step_time == one.ranked[i].analytic.step_time);
    }
  }
}

TEST_CASE("search: the objectives of one plan's figures, worked by hand") {
  io::InputOptions io;
  io.run_level = false;
  const io::Inputs in = io::load_inputs(
      io::load_scenario(
          std::filesystem::path(MEGASIM_SOURCE_DIR) / "scenarios/megascale-175b-12288.json", {}),
      io);
  plan::Candidate c;
  c.plan = in.scenario.plan;  // 12,288 GPUs, batch 6,144 of 2,048 tokens
  plan::StepFigures f;
  f.step_time = Time::from_seconds(12.582912);  // 6,144 × 2,048 tokens at 10^6 tokens/s
  f.tokens_per_s = 1e6;
  f.mfu = 0.5;
  f.gemm_time = Time::from_seconds(1.0);  // one second of GEMMs, nothing else
  using plan::Objective;
  CHECK(plan::objective_value(Objective::kStepTime, in, c, f) == doctest::Approx(12.582912));
  CHECK(plan::objective_value(Objective::kMfu, in, c, f) == doctest::Approx(-0.5));
  // run.tokens 3·10^11 at 10^6 tokens/s: 3·10^5 s.
  CHECK(plan::objective_value(Objective::kTimeToTrain, in, c, f) == doctest::Approx(3e5));
  // 83.33 h × 12,288 GPUs × $1.5: $1,536,000.
  CHECK(plan::objective_value(Objective::kCost, in, c, f) == doctest::Approx(1.536e6));
  // 3·10^11 / 12,582,912 tokens a step = 23,841.86 steps, each 1 s × 12,288 GPUs at the
  // device's GEMM board power.
  const double watts = in.device.power.gemm.value();
  REQUIRE(watts > 0.0);
  CHECK(plan::objective_value(Objective::kEnergy, in, c, f) ==
        doctest::Approx(3e11 / 12582912.0 * 12288.0 * watts));
}
