// `megasim search --objective energy`: a step's IT energy as simulate counts it (the GPUs by
// activity, the nodes' overhead and the job's switches over the whole step), by hand and
// against the power model the run level uses.
#include <doctest/doctest.h>

#include <cmath>

#include "io/reliability_loader.h"
#include "net/topology.h"
#include "plan/evaluate.h"
#include "plan/search.h"
#include "run/power.h"
#include "search_inputs.h"

using namespace megasim;
using run::Activity;

TEST_CASE("search: the energy objective of one plan's figures, worked by hand") {
  io::Inputs in = test::search_inputs("scenarios/megascale-175b-12288.json");
  in.scenario.run.tokens = 3e11;
  const net::Topology topology(in.cluster);
  const plan::EnergyModel e = plan::energy_model(in, topology);
  const auto w = [&](Activity a) { return e.power.gpu_in(a).value(); };
  // Four activities at four different board powers, so that a watt taken for another
  // activity's shows.
  REQUIRE(w(Activity::kGemm) > w(Activity::kMemory));
  REQUIRE(w(Activity::kMemory) > w(Activity::kCommunication));
  REQUIRE(w(Activity::kCommunication) > w(Activity::kIdle));
  REQUIRE(e.power.node_overhead.value() > 0.0);
  REQUIRE(e.power.per_switch.value() > 0.0);
  REQUIRE(e.fabric != nullptr);
  const auto switches = static_cast<double>(e.fabric->switch_count());
  REQUIRE(switches > 0);
  plan::Candidate c;
  c.plan = in.scenario.plan;  // 12,288 GPUs on 1,536 nodes: the whole fabric
  plan::StepFigures f;
  f.step_time = Time::from_seconds(12.582912);  // 6,144 × 2,048 tokens at 10^6 tokens/s
  f.tokens_per_s = 1e6;
  f.gemm_time = Time::from_seconds(8.0);
  f.memory_bound_time = Time::from_seconds(2.0);
  f.comm_time = Time::from_seconds(1.5);
  f.idle_time = Time::from_seconds(1.082912);
  // 3·10^11 / 12,582,912 tokens a step = 23,841.86 steps; each: 12,288 GPUs × (8 s of GEMM +
  // 2 s memory-bound + 1.5 s communication + 1.08 s idle at their powers), and 1,536 nodes'
  // overhead and every switch of the fabric for the 12.58 s step.
  const double gpu_joules =
      12288.0 * (8.0 * w(Activity::kGemm) + 2.0 * w(Activity::kMemory) +
                 1.5 * w(Activity::kCommunication) + 1.082912 * w(Activity::kIdle));
  const double rest_joules =
      12.582912 * (1536.0 * e.power.node_overhead.value() + switches * e.power.per_switch.value());
  CHECK(plan::objective_value(plan::Objective::kEnergy, in, c, f, e) ==
        doctest::Approx(3e11 / 12582912.0 * (gpu_joules + rest_joules)));
  // Half the job: half the nodes and half the switches (rounded up until 2026-12-04).
  c.plan.dp /= 2;
  const double half_switches = switches / 2.0;
  const double half = 3e11 / 12582912.0 *
                      (gpu_joules / 2.0 + 12.582912 * (768.0 * e.power.node_overhead.value() +
                                                       half_switches * e.power.per_switch.value()));
  CHECK(plan::objective_value(plan::Objective::kEnergy, in, c, f, e) == doctest::Approx(half));
  // One node of the cluster: its share of the switches is a fraction of one, the same per GPU
  // as the whole cluster's (two whole switches until 2026-12-04, which made a one-node job
  // costlier a GPU than a 64-GPU one and ranked it below).
  CHECK(plan::job_switches(*e.fabric, 8) == doctest::Approx(switches * 8.0 / 12288.0));
  CHECK(plan::job_switches(*e.fabric, 8) < 1.0);
}

TEST_CASE("search: a plan's energy objective is simulate's IT energy for the tokens") {
  // The step's figures through the search's formula against run::step_power over the profile
  // the run level is given (MegaScale's 256-GPU row: GEMM, memory-bound and communication
  // time; no idle, which the bubble is not: the hand-worked case above charges idle time).
  io::Inputs in =
      test::search_inputs("scenarios/validation/megascale-175b-256-megascale-iteration.json");
  in.scenario.run.tokens = 1e10;
  const net::Topology topology(in.cluster);
  const plan::Evaluation ev = plan::evaluate(in);
  const run::StepProfile profile = plan::step_profile(in, topology, ev.step);
  for (const Activity a : {Activity::kGemm, Activity::kMemory, Activity::kCommunication})
    CHECK(profile.time_in(a) > Time::zero());
  const run::StepPower power = run::step_power(profile, io::power_for(in.scenario, in.device));
  // The run's whole steps (run::steps_for), as the run level counts them.
  const double steps = std::ceil(1e10 / profile.tokens_per_step);
  plan::Candidate c;
  c.plan = in.scenario.plan;
  CHECK(plan::objective_value(plan::Objective::kEnergy, in, c, plan::figures_of(ev.step),
                              plan::energy_model(in, topology)) ==
        doctest::Approx(steps * power.it_average.value() * profile.step_time.to_seconds())
            .epsilon(1e-9));
}
