// predict_step end to end with DeepSpeed's mechanisms (ZeRO-3's collectives and host work, the
// pipeline engine's own work) on the step-model tests' job (step_fixture.h).
#include <doctest/doctest.h>

#include "step_fixture.h"

using namespace megasim;
using megasim::test::dp_total;
using megasim::test::Fixture;
using megasim::test::zero3_over;
using megasim::test::zero3_over_64;

namespace {
// The preset's request with every sub-module gathered again for its backward (no reuse
// distance: the 22B layer, 4.5e8 elements, would otherwise stay gathered whole), so that each
// tensor is gathered three times a micro-batch, as these tests count.
step::StepRequest regathered(step::StepRequest r) {
  r.system.sharding.max_reuse_distance = 0;
  r.workload = step::assemble_workload(Fixture::model(), r.workload.plan, r.system);
  return r;
}
}  // namespace

TEST_CASE("step model: DeepSpeed's ZeRO-3 zero-fills each gathered tensor, as DP time") {
  // 22B, ZeRO-3 over 64 GPUs, one micro-batch, full recompute: each layer gathered three times
  // (forward, recompute, backward), one collective per tensor. The fills add exactly their
  // kernels' time to the DP collectives (exposed plus hidden) and nothing to compute (with no
  // interference: slowed beside the DP line, compute would depend on the overlap).
  Fixture f;
  f.without_interference();
  const auto r = regathered(f.request("deepspeed", zero3_over_64(1)));
  const auto [filled, bare] =
      f.on_and_off(r, &step::SystemOptions::Sharding::zeroed_gather_buffer);
  const workload::ModelSpec m = Fixture::model();
  double fills = 0;
  for (const std::int64_t n : workload::rank_layer_parameter_tensors(m, 1)) {
    if (n < r.system.sharding.persistence_threshold) continue;  // kept, never gathered again
    fills += f.memory_s(0.0, 2.0 * static_cast<double>(n));
  }
  CHECK(filled.breakdown.compute == bare.breakdown.compute);
  CHECK(dp_total(filled) - dp_total(bare) ==
        doctest::Approx(3.0 * m.layers * fills).epsilon(0.01).scale(0));
}

TEST_CASE("step model: ZeRO-3 fetched per sub-module hides less than fetched per layer") {
  // The same collectives either way; fetched one sub-module ahead (DeepSpeed 2021) a gather
  // only has the one sub-module before it to hide behind, so more of the DP time is exposed.
  // (Compute is held equal with no interference, which would slow it by how much is hidden.)
  Fixture f;
  f.without_interference();
  auto r = regathered(f.request("deepspeed", zero3_over_64(4)));
  REQUIRE(r.system.sharding.per_sub_module);
  const auto sub_module = f.predict(r);
  r.system.sharding.per_sub_module = false;
  r.workload = step::assemble_workload(Fixture::model(),
                                       r.workload.plan, r.system);
  const auto layer = f.predict(r);
  CHECK(sub_module.breakdown.compute == layer.breakdown.compute);
  CHECK(dp_total(sub_module) == doctest::Approx(dp_total(layer)).epsilon(1e-6));
  CHECK(sub_module.breakdown.dp_exposed > layer.breakdown.dp_exposed);
}

TEST_CASE("step model: ZeRO-3's compute runs slower beside its collectives, by the profile") {
  // The same step with and without the profile's interference: compute grows by at most
  // (factor − 1) of the DP time hidden behind it, and by some of it.
  Fixture f;
  const auto r = f.request("deepspeed", zero3_over_64(4));
  const auto slowed = f.predict(r);
  const double factor = f.device.profile.interference.compute_slowdown;
  REQUIRE(factor > 1.0);
  f.without_interference();
  const auto plain = f.predict(r);
  const double extra = (slowed.breakdown.compute - plain.breakdown.compute).to_seconds();
  CHECK(extra > 0.0);
  CHECK(extra <= (factor - 1.0) * plain.dp_hidden.to_seconds() * 1.0001);
  // And the step with it: the pass is the step's whole critical path here (no pipeline).
  CHECK(slowed.step_time > plain.step_time);
}

TEST_CASE("step model: DeepSpeed's ZeRO-3 pays the measured host time of every gather") {
  // Each of a step's gathers (three per tensor per layer with full recompute, one micro-batch)
  // holds the host for the preset's measured time before it starts. It shows as exposed DP
  // time, all of it where the host sets the pace; where the DP line does (a gather waiting
  // behind a reduce-scatter), the host's issue runs beside that wait.
  Fixture f;
  auto r = regathered(f.request("deepspeed", zero3_over_64(1)));
  REQUIRE(r.system.sharding.gather_host > Time::zero());
  r.system.sharding.host_per_rank = {};  // the measured time alone (the next test adds these)
  r.system.sharding.gather_host_ranks = 0;
  const auto held = f.predict(r);
  const Time per_gather = r.system.sharding.gather_host;
  r.system.sharding.gather_host = Time::zero();
  const auto free = f.predict(r);
  const workload::ModelSpec m = Fixture::model();
  double gathers = 0;  // the tensors a pass gathers: those under the threshold stay gathered
  for (const std::int64_t n : workload::rank_layer_parameter_tensors(m, 1)) {
    gathers += n < r.system.sharding.persistence_threshold ? 0.0 : 3.0 * m.layers;
  }
  CHECK(held.breakdown.compute == free.breakdown.compute);
  const double added = (held.breakdown.dp_exposed - free.breakdown.dp_exposed).to_seconds();
  CHECK(added <= gathers * per_gather.to_seconds() * 1.0001);
  CHECK(added >= 0.9 * gathers * per_gather.to_seconds());
}

TEST_CASE("step model: DeepSpeed's per-rank host work grows with the DP group") {
  // In line (prefetch 0), each collective holds the host for its per-rank Python ops before it
  // starts and nothing runs beside that: with one op of 1 us per rank to a gather and two to a
  // reduce-scatter, the step grows by (gathers + 2 x scatters) x ranks x 1 us, twice as much
  // over 128 ranks as over 64. Gathers: three per non-persistent tensor per layer (forward,
  // recompute, backward); reduce-scatters: one per tensor per layer, without reduce buckets
  // (with them, a loop runs beside the previous tensor's collective: sharded_pass_test.cpp).
  Fixture f;
  const workload::ModelSpec m = Fixture::model();
  std::vector<double> added;
  for (const int dp : {64, 128}) {
    auto r = regathered(f.request("deepspeed", zero3_over(dp, 1)));
    auto& z = r.system.sharding;
    z.prefetch_layers = 0;
    z.reduce_bucket_elements = 0;  // a layer's reduce-scatters as one issue, loops in line
    z.contiguous_gradients = false;  // no division on the DP line for a first loop to hide behind
    z.gather_host = Time::zero();
    z.gather_host_ranks = 0;
    z.host_per_rank = {};
    const auto bare = f.predict(r);
    z.host_per_rank.python_op = Time::from_us(1.0);
    z.host_per_rank.gather.python = 1;
    z.host_per_rank.scatter.python = 2;
    const auto held = f.predict(r);
    double gathers = 0, scatters = 0;
    for (const std::int64_t n : workload::rank_layer_parameter_tensors(m, 1)) {
      gathers += n < z.persistence_threshold ? 0.0 : 3.0 * m.layers;
      scatters += m.layers;
    }
    CHECK(held.breakdown.compute == bare.breakdown.compute);
    added.push_back((held.breakdown.dp_exposed - bare.breakdown.dp_exposed).to_seconds());
    CHECK(added.back() ==
          doctest::Approx((gathers + 2.0 * scatters) * dp * 1e-6).epsilon(1e-6).scale(0));
    // With the preset's 5e8-element buckets a 22B layer's twelve gradients (4.5e8 elements)
    // are one bucket: only its first loop is in line, each later one runs beside the previous
    // tensor's collective, which outlasts it here (2 us x 64 or 128 ranks).
    z.reduce_bucket_elements = 500'000'000;
    const Time bare_bucketed = [&] {
      const auto held_loops = z.host_per_rank;
      z.host_per_rank = {};
      const Time t = f.predict(r).breakdown.dp_exposed;
      z.host_per_rank = held_loops;
      return t;
    }();
    const double bucketed = (f.predict(r).breakdown.dp_exposed - bare_bucketed).to_seconds();
    CHECK(bucketed ==
          doctest::Approx((gathers + 2.0 * m.layers) * dp * 1e-6).epsilon(1e-6).scale(0));
    z.reduce_bucket_elements = 0;
  }
  CHECK(added[1] == doctest::Approx(2.0 * added[0]).epsilon(1e-6).scale(0));
}

TEST_CASE("step model: the deepspeed preset's measured gather host time less its 8 ranks") {
  // 380 us measured on 8 ranks, each rank's gather work 1 Python op (2 us), 2 dispatched ops
  // (1 us) and a cudaMemcpyAsync (5 us): 380 - 8 x 9 = 308 us that do not grow with the group.
  const auto z = io::load_system_preset("deepspeed").sharding;
  CHECK(z.gather_host_ranks == 8);
  CHECK(z.host_per_rank.per_rank(z.host_per_rank.gather) == Time::from_us(9.0));
  CHECK(z.host_per_rank.per_rank(z.host_per_rank.scatter) == Time::from_us(11.0));
  CHECK(z.gather_fixed_host() == Time::from_us(308.0));
  CHECK(io::load_system_preset("fsdp").sharding.host_per_rank.per_rank(
            io::load_system_preset("fsdp").sharding.host_per_rank.scatter) == Time::zero());
}

TEST_CASE("step model: a reduce-scatter's per-rank copies run beside the host loop issuing them") {
  // In line, each reduce-scatter's library loop (ranks x one op of `d`) holds the host before
  // the launch, and its per-rank copies on the device (per_rank_copies: the gradient read and
  // written once, plus a launch gap per further rank) run as they are issued: the step grows by
  // the loop less the copies where the loop is longer, and not at all where it is shorter.
  Fixture f;
  const workload::ModelSpec m = Fixture::model();
  const int dp = 64;
  auto r = f.request("deepspeed", zero3_over(dp, 1));
  auto& z = r.system.sharding;
  REQUIRE(z.per_rank_copies);
  z.prefetch_layers = 0;
  z.reduce_bucket_elements = 0;  // no loop beside another tensor's collective
  z.gather_host = Time::zero();
  z.gather_host_ranks = 0;
  z.host_per_rank = {};
  const auto bare = f.predict(r);
  const Time gap = f.device.profile.memory_model.launch_overhead;
  const auto added = [&](Time d) {
    z.host_per_rank.dispatched_op = d;
    z.host_per_rank.scatter.dispatched = 1;
    return (f.predict(r).breakdown.dp_exposed - bare.breakdown.dp_exposed).to_seconds();
  };
  double expected = 0;  // with d = 100 us: every loop (6.4 ms) outlasts its copies
  const double grad = workload::gradient_bytes(r.workload.plan);  // per element reduced
  for (const std::int64_t n : workload::rank_layer_parameter_tensors(m, 1)) {
    const Bytes b(grad * static_cast<double>(n));
    const hw::MemoryShape copy{hw::MemoryKernel::kCopy, b, b, Flops(0.0)};
    const Time copies = f.kernels.cost(hw::KernelShape{copy}).time + gap * (dp - 1);
    expected += m.layers * (Time::from_us(100.0) * dp - copies).to_seconds();
  }
  CHECK(added(Time::from_us(100.0)) == doctest::Approx(expected).epsilon(1e-6));
  CHECK(added(Time::from_ns(1)) == 0.0);  // 64 ns of loop, under any copy
}

namespace {
// 22B on DeepSpeed's pipeline engine: TP 8 × PP 4 × DP 2, 16 micro-batches of 1, 1F1B, full
// recompute, no SP; the engine's two mechanisms set as given (workload/pipe_engine_ops.h).
step::StepRequest pipe_engine_request(const Fixture& f, workload::Precision precision,
                                      bool partitioned, bool bf16) {
  auto r = f.request("deepspeed", [precision](workload::ParallelPlan& p) {
    p.vpp = 1;
    p.sequence_parallel = false;
    p.recompute = workload::Recompute::kFull;
    p.schedule = workload::Schedule::kOneFOneB;
    p.precision = precision;
  });
  r.system.pipe_engine.partitioned_transfers = partitioned;
  r.system.pipe_engine.bf16_optimizer = bf16;
  r.system.scatter_gather_transfers = false;  // the engine does not run Megatron-LM's p2p
  r.workload = step::assemble_workload(Fixture::model(),
                                       r.workload.plan, r.system);
  return r;
}

Time copy_time(const Fixture& f, double read, double written) {
  const hw::MemoryShape s{hw::MemoryKernel::kCopy, Bytes(read), Bytes(written), Flops(0.0)};
  return f.kernels.cost(hw::KernelShape{s}).time;
}
}  // namespace

TEST_CASE("step model: DeepSpeed's partitioned transfers cost their copies and TP gathers") {
  // Stage 0 (the critical one) per micro-batch: its output's slice cloned (S/8 read and
  // written) and, before the backward, two PartitionedTensor.full(): a zero fill of S, its own
  // slice copied, 8 per-rank copies of S/8, a clone of S, and an all-gather over TP.
  Fixture f;
  const auto on_request = pipe_engine_request(f, workload::Precision::kFp16, true, false);
  const auto off_request = pipe_engine_request(f, workload::Precision::kFp16, false, false);
  const auto on = f.predict(on_request);
  const auto off = f.predict(off_request);
  REQUIRE(on.critical_stage == 0);
  REQUIRE(off.critical_stage == 0);
  const double S = 2048.0 * 6144.0 * 2.0;
  const Time full = copy_time(f, 0.0, S) + copy_time(f, S / 8, S / 8) * 9 + copy_time(f, S, S);
  const Time kernels = (copy_time(f, S / 8, S / 8) + full * 2) * 16;
  CHECK((on.breakdown.compute - off.breakdown.compute).to_seconds() ==
        doctest::Approx(kernels.to_seconds()).epsilon(1e-5).scale(0));
  const Time gathers = on.breakdown.tp_exposed - off.breakdown.tp_exposed;
  CHECK(gathers > Time::zero());
  CHECK(on.pipe_engine.to_seconds() ==
        doctest::Approx((kernels + gathers).to_seconds()).epsilon(1e-5).scale(0));
  CHECK(off.pipe_engine == Time::zero());
  // What they buy: a 1/8 slice between stages, where the engine without them sends the whole
  // activation from every TP rank (until 2026-12-07 both sent the slice, and the test held the
  // step with the transfers slower).
  CHECK(on_request.workload.program[0].pp_send_bytes.value() == doctest::Approx(S / 8));
  CHECK(off_request.workload.program[0].pp_send_bytes.value() == doctest::Approx(S));
}

TEST_CASE("step model: DeepSpeed's BF16_Optimizer updates fp32 gradients every micro-batch") {
  // After each backward every parameter of stage 0 is cast to fp32 (2 B read, 4 written) and
  // added to its fp32 gradient (8 read, 4 written): 16 micro-batches of it.
  Fixture f;
  const auto on = f.predict(pipe_engine_request(f, workload::Precision::kBf16, false, true));
  const auto off = f.predict(pipe_engine_request(f, workload::Precision::kBf16, false, false));
  REQUIRE(on.critical_stage == 0);
  const double n = static_cast<double>(workload::stage_parameters_per_rank(
      Fixture::model(),
      pipe_engine_request(f, workload::Precision::kBf16, false, true).workload.plan, 0));
  const Time update = (copy_time(f, 2 * n, 4 * n) + copy_time(f, 8 * n, 4 * n)) * 16;
  CHECK((on.breakdown.compute - off.breakdown.compute).to_seconds() ==
        doctest::Approx(update.to_seconds()).epsilon(1e-6).scale(0));
  CHECK(on.pipe_engine.to_seconds() == doctest::Approx(update.to_seconds()).epsilon(1e-6).scale(0));
  // The step's casts around the bf16 all-reduce and the norm of every fp32 gradient.
  CHECK(on.breakdown.optimizer > off.breakdown.optimizer);
}

TEST_CASE("step model: DeepSpeed's reduce buffer adds its copies and one division a bucket") {
  // 22B under ZeRO-3 over 64 GPUs, one micro-batch: a layer's gradients (12h² elements) fit
  // one 5·10⁸-element bucket, so each layer's backward copies every gradient into the buffer
  // and divides the whole buffer once. Both are DP time (exposed or hidden), not compute.
  Fixture f;
  f.without_interference();
  auto r = f.request("deepspeed", zero3_over_64(1));
  const auto [with, without] =
      f.on_and_off(r, &step::SystemOptions::Sharding::contiguous_gradients);
  const workload::ModelSpec m = Fixture::model();
  const auto pass = [&](double bytes) { return f.memory_s(bytes, bytes); };
  // In the gradients' own width (the buffer is DeepSpeed's fp16; this plan's are fp32).
  const double g = workload::gradient_bytes(r.workload.plan);
  double per_layer = pass(g * static_cast<double>(r.system.sharding.reduce_bucket_elements));
  for (const std::int64_t n : workload::rank_layer_parameter_tensors(m, 1)) {
    REQUIRE(n <= r.system.sharding.reduce_bucket_elements);
    per_layer += pass(g * static_cast<double>(n));
  }
  CHECK(with.breakdown.compute == without.breakdown.compute);
  CHECK(dp_total(with) - dp_total(without) ==
        doctest::Approx(m.layers * per_layer).epsilon(0.01).scale(0));

  // A bucket of 10⁸ elements: QKV (1.1·10⁸), fc1 and fc2 (1.5·10⁸ each) are larger, so each is
  // reduced alone from where it is (no copy), divided beside the buffer; the others are copied
  // and share buckets, filled in the backward's order (the layer's tensors last to first).
  const std::int64_t bucket = 100'000'000;
  r.system.sharding.reduce_bucket_elements = bucket;
  const auto [small, small_without] =
      f.on_and_off(r, &step::SystemOptions::Sharding::contiguous_gradients);
  const auto tensors = workload::rank_layer_parameter_tensors(m, 1);
  double expected = 0;
  std::int64_t filled = 0;
  int alone = 0;
  for (auto it = tensors.rbegin(); it != tensors.rend(); ++it) {
    const std::int64_t n = *it;
    if (it == tensors.rbegin() || (filled > 0 && filled + n > bucket)) {  // opens a bucket
      filled = 0;
      expected += pass(g * static_cast<double>(bucket));
    }
    filled += n;
    if (n > bucket) ++alone;
    expected += pass(g * static_cast<double>(n));  // its division alone, or its copy
  }
  CHECK(alone == 3);
  CHECK(dp_total(small) - dp_total(small_without) ==
        doctest::Approx(m.layers * expected).epsilon(0.01).scale(0));
}
