// predict_step end to end on a small job of the MegaScale cluster: real op programs, the A100
// datasheet profile, collectives on the fabric.
#include <doctest/doctest.h>

#include <cstdlib>

#include "step/pricing.h"
#include "step_fixture.h"

using namespace megasim;
using megasim::test::Fixture;
using megasim::test::kSource;

namespace {
// The fixture's plan on one stage: TP 8 × DP 8.
void one_stage(workload::ParallelPlan& p) {
  p.pp = 1;
  p.vpp = 1;
  p.dp = 8;
  p.schedule = workload::Schedule::kOneFOneB;
}
}  // namespace

TEST_CASE("step model: MFU is model FLOPs over time, GPUs and peak") {
  Fixture f;
  const auto r = f.request("megatron-lm");
  const auto p = f.predict(r);
  REQUIRE(p.step_time > Time::zero());
  const double tokens = 32.0 * 2048.0;
  CHECK(p.tokens_per_step == doctest::Approx(tokens));
  // The model FLOPs per token worked by hand for korthikanti-22b (l 48, h 6144, s 2048,
  // V 51200): every layer 3 × (24h² + 4sh) = 72h²(1 + s/6h), the logits 3 × 2hV (flops.h's
  // MFU count), 139,594,825,728 FLOPs; the A100's bf16 peak 312 TFLOP/s on 64 GPUs.
  const double per_token =
      72.0 * 48 * 6144.0 * 6144.0 * (1.0 + 2048.0 / (6 * 6144.0)) + 3.0 * 2 * 6144.0 * 51200;
  CHECK(p.model_flops_per_token == doctest::Approx(per_token).epsilon(1e-12));
  const double expected = per_token * tokens / (p.step_time.to_seconds() * 64 * 312e12);
  CHECK(p.mfu == doctest::Approx(expected).epsilon(1e-9).scale(0));
  CHECK(p.mfu > 0.2);
  CHECK(p.mfu < 0.8);
  // The activity split of a GPU adds up to the step.
  CHECK(p.gemm_time + p.memory_bound_time + p.comm_only_time + p.idle_time == p.step_time);
  CHECK(p.memory.size() == 4);
}

TEST_CASE("step model: folded and full agree on a symmetric plan") {
  Fixture f;
  auto r = f.request("megascale");
  const auto folded = f.predict(r);
  r.full = true;
  const auto full = f.predict(r);
  CHECK(full.full);
  CHECK(full.ranks_simulated == 64);
  CHECK(folded.ranks_simulated == 4);
  // The folded step simulates one replica of each stage for all of them: the same step.
  CHECK(std::abs((full.step_time - folded.step_time).ns()) <= 1);
}

TEST_CASE("step model: MegaScale's system beats Megatron-LM's on the same plan") {
  Fixture f;
  const auto megatron = f.predict(f.request("megatron-lm"));
  const auto megascale = f.predict(f.request("megascale"));
  CHECK(megascale.step_time < megatron.step_time);
  // Its communication is hidden: less exposed TP, PP and DP time.
  const auto exposed = [](const step::StepPrediction& p) {
    return p.breakdown.tp_exposed + p.breakdown.pp_exposed + p.breakdown.dp_exposed;
  };
  CHECK(exposed(megascale) < exposed(megatron));
}

TEST_CASE("step model: a slow host slows the whole step") {
  Fixture f;
  auto r = f.request("megascale");
  const auto base = f.predict(r);
  r.stragglers.host_fraction = 0.2;  // 1 of the job's 8 servers
  r.stragglers.slowdown = 1.2;
  r.stragglers.all_passes = false;
  const auto forward_only = f.predict(r);
  r.stragglers.all_passes = true;
  const auto slow = f.predict(r);
  CHECK(slow.full);  // asymmetric: every rank simulated
  CHECK(forward_only.step_time > base.step_time);
  // Every pass of the slow host's stage 20 % slower: the step grows by a part of that, the
  // stage's share of the critical path; forward passes alone (a third of the compute) by
  // about a third as much.
  const double all = slow.step_time.to_seconds() / base.step_time.to_seconds() - 1.0;
  const double fwd = forward_only.step_time.to_seconds() / base.step_time.to_seconds() - 1.0;
  CHECK(all > 0.05);
  CHECK(all < 0.2);
  CHECK(fwd < 0.5 * all);
}

TEST_CASE("step model: zero-bubble runs the weight gradients as their own pass") {
  // ZB-H1 moves each chunk's wgrad GEMMs (GemmRole::kWeightGrad) into a W pass that fills the
  // cool-down bubble, so on the same plan it beats 1F1B and its bubble is smaller. (Before
  // GemmRole the split read op names ending in "wgrad", which they never do: the W pass was
  // empty and zero-bubble priced exactly as 1F1B.)
  Fixture f;
  const auto with = [&f](workload::Schedule schedule) {
    return f.predict(f.request("megascale", [schedule](workload::ParallelPlan& p) {
      p.vpp = 1;
      p.schedule = schedule;
    }));
  };
  const auto one_f_one_b = with(workload::Schedule::kOneFOneB);
  const auto zb = with(workload::Schedule::kZeroBubble);
  CHECK(zb.step_time < one_f_one_b.step_time);
  CHECK(zb.breakdown.bubble < one_f_one_b.breakdown.bubble);
}

TEST_CASE("step model: data loading is paid at the step start, or hidden by MegaScale's pipeline") {
  Fixture f;
  auto r = f.request("megatron-lm");
  const auto base = f.predict(r);
  // 16 samples per replica at 5 ms: 80 ms on the first and last stage before their first
  // pass. The first stage starts the pipeline, so the whole step moves by it.
  r.data_per_sample = Time::from_ms(5);
  const auto loaded = f.predict(r);
  CHECK(loaded.step_time == base.step_time + Time::from_ms(80));
  CHECK(loaded.breakdown.other >= Time::from_ms(80));

  // MegaScale's asynchronous pipeline prepares the next step's batch while this one ends
  // synchronising gradients (from its last pass: the gradient sync, the optimizer step, the
  // parameter sync): loading that fits in that window costs nothing, the rest is exposed. The
  // window is no more than the DP time exposed and the optimizer (the first all-gather's wait
  // at the step's start is DP time too, but no window).
  auto m = f.request("megascale");
  const auto fast = f.predict(m);
  const Time window = fast.loading_window;
  REQUIRE(window > Time::zero());
  CHECK(window >= fast.breakdown.optimizer);
  CHECK(window <= fast.breakdown.dp_exposed + fast.breakdown.optimizer);
  m.data_per_sample = Time::from_ns(window.ns() / 32);  // half the window for 16 samples
  CHECK(f.predict(m).step_time == fast.step_time);
  m.data_per_sample = Time::from_ms(5);
  CHECK(f.predict(m).step_time == fast.step_time + Time::from_ms(80) - window);
}

TEST_CASE("step model: on the shared network, folded and full agree on a symmetric plan") {
  // Every DP replica of a stage runs the same passes at the same times and issues the same
  // flows; folded mode issues them all for its representative and waits for the slowest, so it
  // ends with the slowest replica. Exact here: each replica's flows meet the same contention.
  // DP 8 so that the DP rings leave the ToRs and several groups share uplinks.
  Fixture f;
  for (const char* preset : {"megatron-lm", "megascale"}) {
    auto r = f.request(preset, [](workload::ParallelPlan& p) {
      p.dp = 8;
      p.global_batch = 64;
    });
    r.network = step::StepRequest::Network::kShared;
    const auto folded = f.predict(r);
    r.full = true;
    const auto full = f.predict(r);
    CHECK(folded.step_time == full.step_time);
    // The network changes the figure: it is not the priced one.
    r.full = false;
    r.network = step::StepRequest::Network::kPriced;
    CHECK(f.predict(r).step_time != folded.step_time);
  }
}

TEST_CASE("step model: the job's slowest GPU paces the passes, as its own breakdown term") {
  Fixture f;
  const auto r = f.request("megascale");
  // Without interference: its stretch of a pass is compute time, and the paced passes meet the
  // DP and PP traffic at other moments than the level ones.
  const hw::DeviceProfile quiet = f.quiet_profile();
  const auto paced = f.predict_on(quiet, r);
  hw::DeviceProfile even = quiet;
  even.fleet_variation.sigma = 0.0;
  const auto level = f.predict_on(even, r);
  CHECK(level.breakdown.slowest_gpu == Time::zero());
  REQUIRE(paced.breakdown.slowest_gpu > Time::zero());
  // The breakdown, its new term included, is the step cut without overlap.
  CHECK(paced.breakdown.sum() == paced.step_time);
  CHECK(level.breakdown.sum() == level.step_time);
  // The passes' compute, 64 GPUs' worth of slowest: the term is that share of the compute.
  const double share = f.device.profile.fleet_variation.slowest_of(64);
  CHECK(paced.breakdown.slowest_gpu.to_seconds() ==
        doctest::Approx(share * paced.breakdown.compute.to_seconds()).epsilon(0.01).scale(0));
  CHECK(paced.breakdown.compute == level.breakdown.compute);
  // The step lengthens by about the term (the pipeline carries it through the bubble too).
  const double longer = (paced.step_time - level.step_time).to_seconds();
  CHECK(longer >= 0.9 * paced.breakdown.slowest_gpu.to_seconds());
  CHECK(longer <= 1.5 * paced.breakdown.slowest_gpu.to_seconds());
  // For power, one GPU runs the longer passes while the job's others wait for it in their
  // exchanges: the term is communication time, not GEMM or memory-bound time; so is the
  // bubble (a stage waits in a posted receive). The optimizer is memory-bound. A GPU's
  // activity is the stages' average: on one stage (DP 8), its breakdown's.
  const auto one = f.predict_on(quiet, f.request("megascale", one_stage));
  const auto& b = one.breakdown;
  REQUIRE(b.slowest_gpu > Time::zero());
  CHECK(one.gemm_time + one.memory_bound_time == b.compute + b.optimizer);
  CHECK(one.comm_only_time ==
        b.tp_exposed + b.pp_exposed + b.dp_exposed + b.slowest_gpu + b.bubble);
  CHECK(one.idle_time == b.other);
  CHECK(b.optimizer > Time::zero());
  CHECK(one.memory_bound_time >= b.optimizer);
}

TEST_CASE("step model: a GPU's time by activity is the pipeline stages' average") {
  // The fixture's 22B on PP 4: stage 0 holds the embedding, stage 3 the logits, so the stages'
  // kernels differ. The average still adds up to the step, keeps the critical stage's bubble
  // and waits as communication, and is not the critical stage's alone (until 2026-12-07 it was).
  Fixture f;
  const auto p = f.predict(f.request("megascale"));
  CHECK(p.gemm_time + p.memory_bound_time + p.comm_only_time + p.idle_time == p.step_time);
  const auto& b = p.breakdown;
  const Time critical_kernels = b.compute + b.optimizer + b.power_cap;
  CHECK(p.gemm_time + p.memory_bound_time != critical_kernels);
  CHECK(p.idle_time == b.other);  // no stage's time but the critical one's end is idle
}

TEST_CASE("step model: MFU is taken against the training dtype's peak") {
  // A GPU whose fp16 peak is twice its bf16 one (a V100-like profile has only fp16): an fp16
  // plan's MFU is over the fp16 peak, a bf16 plan's over the bf16 one.
  Fixture f;
  auto r = f.request("megatron-lm");
  hw::DeviceProfile halved = f.device.profile;
  halved.peak[hw::DType::kBf16] = FlopsPerSec(156e12);
  const hw::KernelCostModel kernels(halved);
  const double flops = 139594825728.0 * 32.0 * 2048.0;  // the first test's, by hand
  const auto bf16 = step::predict_step(r, f.topology, kernels, f.constants);
  CHECK(bf16.mfu == doctest::Approx(flops / (bf16.step_time.to_seconds() * 64 * 156e12)));
  r.workload.plan.precision = workload::Precision::kFp16;
  const auto fp16 = step::predict_step(r, f.topology, kernels, f.constants);
  CHECK(fp16.mfu == doctest::Approx(flops / (fp16.step_time.to_seconds() * 64 * 312e12)));
}

TEST_CASE("pricing: every rail's calls where rails share links, one rail's where each has ToRs") {
  // TP rank t's DP and PP calls leave by rail t. MegaScale's multi-rail fabric gives each rail
  // ToRs of its own: one rail stands for all. Llama 3's cluster wires a rack's NICs to one ToR
  // (every rail's traffic on its uplinks) and Jean Zay's nodes share 4 NICs among 8 GPUs:
  // every rail's calls are issued.
  const Fixture f;
  const auto r = f.request("megatron-lm");
  const auto rails_on = [&](const std::string& cluster) {
    const net::Topology t(io::load_cluster(kSource + "/topologies/" + cluster + ".json"));
    const step::Pricer pricer(t, t.pack_placement(64), f.constants, f.kernels, r.workload.plan,
                              r.system);
    return pricer.rails();
  };
  CHECK(rails_on("megascale-a100-12288") == 1);
  CHECK(rails_on("selene-a100-4480") == 1);
  CHECK(rails_on("llama3-h100-24576") == 8);
  CHECK(rails_on("jean-zay-a100-384") == 8);
}

TEST_CASE("step model: ZeRO-2 reduce-scatters each micro-batch's gradients, ZeRO-1 once a step") {
  // 16 micro-batches a replica, two chunks a stage: ZeRO-2 runs 16 reduce-scatters a chunk
  // where ZeRO-1 runs one. MegaScale overlaps them with compute; Megatron-LM waits for each.
  Fixture f;
  // Without interference, whose stretch of the passes beside the extra reduce-scatters is
  // compute time: the same kernels then give the same compute.
  const hw::DeviceProfile quiet = f.quiet_profile();
  const auto predict = [&](const step::StepRequest& r) { return f.predict_on(quiet, r); };
  for (const std::string preset : {"megascale", "megatron-lm"}) {
    INFO(preset);
    const auto one = predict(f.request(preset));
    const auto two = predict(f.request(preset, [](auto& p) { p.zero2 = true; }));
    const Time dp_one = one.breakdown.dp_exposed + one.dp_hidden;
    const Time dp_two = two.breakdown.dp_exposed + two.dp_hidden;
    CHECK(dp_two > dp_one * 4.0);
    CHECK(two.step_time > one.step_time);
    CHECK(two.breakdown.compute.to_seconds() ==
          doctest::Approx(one.breakdown.compute.to_seconds()).epsilon(1e-9));
  }
}

TEST_CASE("step model: ZeRO-2 with DP overlap reduces bucket by bucket and holds two buckets") {
  // MegaScale's preset overlaps DP, chunk by chunk for ZeRO-1; ZeRO-2's reduce-scatters go out
  // in the workload's buckets as each backward pass produces them, and a rank holds two of
  // max(40 M, 1 M × 2) parameters in fp32 beside its shard. Megatron-LM's (no DP overlap)
  // reduces the chunk's at its pass's end and holds them: 6 layers of the 22B at TP 8.
  const Fixture f;
  const auto scale = f.request("megascale", [](auto& p) { p.zero2 = true; });
  // The parameters of the model as the preset runs it (a parallel block under MegaScale's).
  const auto stage = [](const step::StepRequest& r) {
    return static_cast<double>(
        workload::stage_parameters_per_rank(r.workload.executed, r.workload.plan, 1));
  };
  CHECK(scale.workload.memory[1].gradients.value() ==
        doctest::Approx(4.0 * stage(scale) / 2.0 + 4.0 * 2.0 * 40e6));
  const auto lm = f.request("megatron-lm", [](auto& p) { p.zero2 = true; });
  CHECK(lm.workload.memory[1].gradients.value() ==
        doctest::Approx(4.0 * stage(lm) / 2.0 + 4.0 * stage(lm) / 2.0));
  step::PricingTally tally;
  step::Pricer pricer(f.topology, scale.placement, f.constants, f.kernels, scale.workload.plan,
                      scale.system);
  const step::StageCosts zero2 = pricer.price(scale.workload.program[1], tally);
  CHECK(zero2.dp_buckets == std::vector<int>{1, 1});
  CHECK(zero2.dp_reduce_buckets[0] > 1);
  const auto one = f.request("megascale");
  step::Pricer zero1_pricer(f.topology, one.placement, f.constants, f.kernels, one.workload.plan,
                            one.system);
  CHECK(zero1_pricer.price(one.workload.program[1], tally).dp_reduce_buckets ==
        std::vector<int>{1, 1});
}

TEST_CASE("step model: GEMMs at the power-limited clock, as their own breakdown term") {
  Fixture f;
  const auto r = f.request("megascale");
  // Without interference, so that compute is the same however the passes meet the traffic.
  const hw::DeviceProfile quiet = f.quiet_profile();
  const auto burst = f.predict_on(quiet, r);
  CHECK(burst.breakdown.power_cap == Time::zero());  // the A100 profile has no curve
  hw::DeviceProfile capped = quiet;
  capped.sustained_gemm.points = {{0.3, 0.979}, {0.5, 0.934}, {1.0, 0.845}};
  const auto p = f.predict_on(capped, r);
  const auto& b = p.breakdown;
  REQUIRE(b.power_cap > Time::zero());
  CHECK(b.sum() == p.step_time);
  CHECK(b.compute == burst.breakdown.compute);
  // The term is the GEMMs' slowdown at the share of the step they take, on their share of the
  // compute: between the curve's slowdowns at the burst step's GEMM share and at all-GEMM.
  const double gemm = burst.gemm_time.to_seconds();
  const double share = gemm / burst.step_time.to_seconds();
  CHECK(b.power_cap.to_seconds() >= capped.sustained_gemm.slowdown(share) * gemm * 0.99);
  CHECK(b.power_cap.to_seconds() <= capped.sustained_gemm.slowdown(1.0) * gemm);
  CHECK(p.step_time > burst.step_time);
  // For power the longer GEMMs are GEMM time: the board runs them at its limit (on one stage,
  // whose breakdown a GPU's activity is).
  const auto one_burst = f.predict_on(quiet, f.request("megascale", one_stage));
  const auto one = f.predict_on(capped, f.request("megascale", one_stage));
  const auto& c = one.breakdown;
  REQUIRE(c.power_cap > Time::zero());
  CHECK(one.gemm_time == one_burst.gemm_time + c.power_cap);
  CHECK(one.gemm_time + one.memory_bound_time == c.compute + c.optimizer + c.power_cap);
  CHECK(p.gemm_time + p.memory_bound_time + p.comm_only_time + p.idle_time == p.step_time);
}
