// `megasim search`'s analytic stage against the event-level executor on four scenarios: the
// top 200 plans by estimate ranked both ways; and on a TP group split over two nodes. Label slow:
// 800 event-level steps of code the lib tests cover, not run again under the sanitizers.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "io/inputs.h"
#include "io/scenario.h"
#include "plan/search.h"
#include "search_inputs.h"

using namespace megasim;

namespace {

io::Inputs inputs_of(const std::string& scenario) { return test::search_inputs(scenario); }

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
// two rankings agree (Spearman ≥ 0.9) and the plan the estimate puts first is within 0.5 % of the
// event-level best (0.1 % held until 2026-12-04's A100 constants: MegaScale's 256-GPU scenario's
// VPP 12 and VPP 8 are estimated 0.002 % apart and simulated 0.3 % apart; the Megatron-LM one's
// event-level best, PP 16, is estimated 1.6 % slower than the estimate's first, simulated 0.17 %
// faster).
// SC'21's 39.1B on 512 GPUs since the thirty-eighth session (2026-12-05): Megatron-LM's blocking
// exchanges priced lock-step and PP messages over several stage boundaries (0.790 before).
TEST_CASE("search: analytic and event-level rankings agree on the top 200 of four scenarios") {
  for (const char* scenario : {"scenarios/validation/megascale-175b-256-megascale-iteration.json",
                               "scenarios/validation/megascale-175b-256-megatron-iteration.json",
                               "scenarios/validation/korthikanti-175b-selective.json",
                               "scenarios/validation/sc21-t1-39.1b.json"}) {
    const std::string name = scenario;
    CAPTURE(name);
    const io::Inputs in = inputs_of(scenario);
    plan::SearchOptions o;
    o.top_k = 200;
    const plan::SearchResult r = plan::search(in, o);
    // Korthikanti et al.'s 175B on 64 GPUs has 189 feasible plans (2026-12-03, the A100's 79.15
    // GiB): all of them.
    // The scenario's own plan besides, where the estimate puts it beyond the top 200 (SC'21's).
    const std::size_t top = std::min<std::size_t>(200, r.analytic.size());
    REQUIRE(r.ranked.size() >= top);
    REQUIRE(r.ranked.size() <= top + 1);
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
    CHECK(event[analytic_best] <= event.front() * 1.005);
  }
}

TEST_CASE("search: the estimate prices a TP group split over two nodes as the worst of them") {
  // GPT-3 13B (40 layers, hidden 5120, 40 heads) on Selene's 8-GPU nodes, TP 5 × DP 32 on 160
  // GPUs, micro-batch 2, full recompute (SC'21's 1.7B scenario with the model changed): packed
  // TP-5 groups start at every residue of a node, so one of them runs with a GPU on one node
  // and four on the next, at that one GPU's NIC. The probe split its groups 2 and 3 until
  // 2026-12-06: 14.31 s against the event level's 19.51 s (19.54 s now; a user's trial found
  // 9.39 against 12.69 s on a plan of its own).
  io::Inputs in = inputs_of("scenarios/validation/sc21-t1-1.7b.json");
  in.model.layers = 40;
  in.model.hidden = 5120;
  in.model.heads = in.model.kv_heads = 40;
  in.model.ffn_hidden = 4 * 5120;
  in.scenario.plan.global_batch = 1024;
  plan::SearchOptions o;
  o.top_k = 1;
  o.space.gpus = {160};
  o.space.restrict = {{"tp", {"5"}},
                      {"pp", {"1"}},
                      {"vpp", {"1"}},
                      {"micro_batch", {"2"}},
                      {"recompute", {"full"}},
                      {"sequence_parallel", {"false"}},
                      {"distributed_optimizer", {"true"}}};
  const auto [analytic, event] = test::one_plan_step_times(in, o);
  CHECK(analytic == doctest::Approx(event).epsilon(0.05));
}

TEST_CASE(
    "search: the analytic stage prices Megatron-LM's scatter-gather once a chunk, as the "
    "executor") {
  // Korthikanti et al.'s full-recompute 530B (TP 8 × PP 35 × VPP 3, no sequence parallelism):
  // each received tensor is all-gathered over TP before its pass, once a chunk boundary and not
  // once a layer, and the slices sent are 1/8 of the activation; Megatron-Core's p2p sends the
  // whole tensor. The estimate stays within 1 % of the event-level step with the gathers (50.79
  // against 50.62 s; until 2026-12-07 the gather was free in both), 2 % with whole sends, whose
  // asynchronous PP sends on a deep pipeline it overprices (55.44 against 54.48 s). The 2021
  // code's list-form gather adds its copies to both alike.
  io::Inputs in = inputs_of("scenarios/validation/korthikanti-530b-full.json");
  std::vector<double> gathered;
  for (const auto& [scatter_gather, list_copy] :
       {std::pair{true, false}, std::pair{true, true}, std::pair{false, false}}) {
    CAPTURE(scatter_gather);
    CAPTURE(list_copy);
    in.system.scatter_gather_transfers = scatter_gather;
    in.system.scatter_gather_list_copy = list_copy;
    plan::SearchOptions o;
    o.top_k = 1;
    o.space.gpus = {280};
    o.space.restrict = {{"tp", {"8"}},
                        {"pp", {"35"}},
                        {"vpp", {"3"}},
                        {"micro_batch", {"1"}},
                        {"recompute", {"full"}},
                        {"sequence_parallel", {"false"}},
                        {"distributed_optimizer", {"false"}}};
    const auto [analytic, event] = test::one_plan_step_times(in, o);
    CHECK(analytic == doctest::Approx(event).epsilon(scatter_gather ? 0.01 : 0.02));
    if (scatter_gather) gathered.push_back(analytic);
  }
  REQUIRE(gathered.size() == 2);
  CHECK(gathered[1] > gathered[0]);  // the copies cost the estimate something
}
