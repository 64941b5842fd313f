// The application layer through the library (no binary spawned): one assembly for every
// command, every input clash reported before anything is simulated, the figures the run level
// takes from the step.
#include <doctest/doctest.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "engine/error.h"
#include "io/inputs.h"
#include "io/scenario.h"
#include "net/topology.h"
#include "plan/assembly.h"
#include "plan/compare.h"
#include "plan/evaluate.h"
#include "plan/inspect.h"
#include "workload/memory.h"
#include "workload/rank_index.h"
#include "input_error_of.h"

using namespace megasim;

using megasim::test::input_error_of;

namespace {

const std::filesystem::path kScenario =
    std::filesystem::path(MEGASIM_SOURCE_DIR) / "scenarios/megascale-175b-12288.json";

io::Inputs step_inputs(const std::vector<std::string>& sets) {
  io::InputOptions o;
  o.run_level = false;
  return io::load_inputs(io::load_scenario(kScenario, sets), o);
}


}  // namespace

TEST_CASE("plan: simulate and inspect see the same memory (they once disagreed)") {
  // MegaScale's system runs a fused attention kernel, which stores no s² scores. Before the one
  // assembly, simulate estimated memory as if attention were unfused and refused this plan at
  // 118.9 GiB while inspect said 50.1 GiB.
  const io::Inputs in = step_inputs({"plan.recompute=none", "plan.micro_batch=2", "plan.dp=4",
                                     "plan.global_batch=768"});
  const plan::Inspection i = plan::inspect(in);
  const plan::Evaluation e = plan::evaluate(in);
  REQUIRE(i.stages.size() == e.step.memory.size());
  for (std::size_t s = 0; s < i.stages.size(); ++s) {
    CHECK(i.stages[s].memory.total() == e.step.memory[s].total());
    CHECK(i.stages[s].memory.activations == e.step.memory[s].activations);
  }
  CHECK(i.stages[0].memory.total() / kGiB < 80.0);
  CHECK(i.fused_attention);
}

TEST_CASE("plan: the step's placement follows the plan's rank order") {
  // The default scenario: TP 8 × PP 8 × DP 192 on consecutive servers of 8 GPUs. Megatron-LM's
  // order puts a stage's 192 replicas side by side, so the next stage is 192 servers on;
  // [TP, CP, PP, DP] puts a pipeline on 8 consecutive servers and the next replica 8 servers on.
  for (const char* order : {"tp-cp-dp-pp", "tp-cp-pp-dp"}) {
    CAPTURE(order);
    const io::Inputs in = step_inputs({std::string("plan.rank_order=") + order});
    const net::Topology topology(in.cluster);
    const step::StepRequest r = plan::assemble_step(in, topology);
    const workload::RankIndex ranks(r.workload.plan);
    const auto gpu = [&](int s, int d, int t) {
      return r.placement[static_cast<std::size_t>(ranks.linear(s, d, t))];
    };
    const bool pipeline_inside = std::string(order) == "tp-cp-pp-dp";
    CHECK(gpu(0, 0, 3) == 3);
    CHECK(gpu(1, 0, 0) == (pipeline_inside ? 8 : 8 * 192));
    CHECK(gpu(0, 1, 0) == (pipeline_inside ? 8 * 8 : 8));
    CHECK(gpu(7, 191, 7) == 12287);
  }
  // With CP 2 (DP 96) and spread servers: a replica's two context ranks, then its next stage,
  // are the spread placement's next places.
  const io::Inputs in =
      step_inputs({"plan.rank_order=tp-cp-pp-dp", "plan.cp=2", "plan.dp=96", "placement=spread"});
  const net::Topology topology(in.cluster);
  const step::StepRequest r = plan::assemble_step(in, topology);
  const std::vector<int> spread = topology.spread_placement(12288);
  const workload::RankIndex ranks(r.workload.plan);
  const auto at = [&](int s, int d, int t) {
    return r.placement[static_cast<std::size_t>(ranks.linear(s, d, t))];
  };
  CHECK(at(0, 1, 0) == spread[8]);
  CHECK(at(1, 0, 0) == spread[16]);
  CHECK(at(0, 2, 0) == spread[8 * 2 * 8]);
  CHECK(input_error_of([] { step_inputs({"plan.rank_order=pp-dp-tp"}); }).find("rank_order") !=
        std::string::npos);
}

TEST_CASE("plan: inspect and simulate report the same bytes per stage for every shipped scenario") {
  // inspect's memory against simulate's own path (plan::evaluate: assemble_step, then the step
  // simulator's prediction carries the workload's memory out): a second memory model anywhere
  // on either path would show here as a difference.
  const std::filesystem::path root(MEGASIM_SOURCE_DIR);
  std::vector<std::filesystem::path> files;
  for (const char* dir : {"scenarios", "scenarios/validation"}) {
    for (const auto& f : std::filesystem::directory_iterator(root / dir)) {
      if (f.path().extension() == ".json" && f.path().filename() != "schema.json") files.push_back(f.path());
    }
  }
  REQUIRE(files.size() >= 30);
  for (const auto& f : files) {
    CAPTURE(f.filename().string());
    io::InputOptions o;
    o.run_level = false;
    const io::Inputs in = io::load_inputs(io::load_scenario(f), o);
    const plan::Inspection i = plan::inspect(in);
    const plan::Evaluation e = plan::evaluate(in);
    REQUIRE(i.stages.size() == e.step.memory.size());
    for (std::size_t s = 0; s < e.step.memory.size(); ++s) {
      const auto& a = i.stages[s].memory;
      const auto& b = e.step.memory[s];
      CHECK(a.weights == b.weights);
      CHECK(a.gradients == b.gradients);
      CHECK(a.optimizer_states == b.optimizer_states);
      CHECK(a.activations == b.activations);
      CHECK(a.embedding_logits == b.embedding_logits);
      CHECK(a.workspace == b.workspace);
    }
  }
}

TEST_CASE("plan: inspect --unfused-attention stores the scores and can refuse the plan") {
  const io::Inputs in = step_inputs({"plan.recompute=none", "plan.micro_batch=2", "plan.dp=4",
                                     "plan.global_batch=768"});
  plan::InspectOptions o;
  o.unfused_attention = true;
  CHECK(input_error_of([&] { plan::inspect(in, o); }).find("the device has 79.2 GiB") !=
        std::string::npos);
  o.allow_oom = true;
  const plan::Inspection unfused = plan::inspect(in, o);
  CHECK_FALSE(unfused.fused_attention);
  CHECK(unfused.stages[0].fit == workload::Fit::kDoesNotFit);
  CHECK(unfused.stages[0].memory.activations > plan::inspect(in).stages[0].memory.activations);
}

TEST_CASE("plan: every clash between the files is reported at once, before simulation") {
  // tp 3 does not divide 128 heads, and 3 × 8 × 4096 GPUs exceed the 12,288 of the cluster.
  const std::string err =
      input_error_of([] { step_inputs({"plan.tp=3", "plan.dp=4096", "plan.global_batch=4096"}); });
  CHECK(err.find("heads 128 is not divisible by tp 3") != std::string::npos);
  CHECK(err.find("98304 GPUs, but cluster") != std::string::npos);
}

TEST_CASE("plan: a power preset that does not exist is refused before the step is simulated") {
  const std::string err = input_error_of([] {
    io::load_inputs(io::load_scenario(kScenario, {"power.preset=no-such-power"}));
  });
  CHECK(err.find("no-such-power") != std::string::npos);
}

TEST_CASE("plan: the run level's checkpoint is the weights, master weights and moments") {
  const io::Inputs in = io::load_inputs(io::load_scenario(kScenario));
  const net::Topology topology(in.cluster);
  plan::Evaluation e = plan::evaluate(step_inputs({}));
  const run::StepProfile p = plan::step_profile(in, topology, e.step);
  // 2 B bf16 weights + 12 B fp32 master weights and two Adam/LAMB moments.
  CHECK(p.checkpoint_size.value() ==
        doctest::Approx(14.0 * static_cast<double>(workload::total_parameters(in.model))));
  CHECK(p.nodes == 12288 / 8);
  // The whole cluster is the job: every ToR, aggregation and spine switch counts.
  CHECK(p.switches == static_cast<double>(topology.switch_count()));
}

TEST_CASE("plan: compare refuses a scenario that cannot be read, instead of 'infeasible' rows") {
  const std::string err = input_error_of([] {
    plan::compare("no-such-scenario.json", {}, {plan::parse_axis("plan.tp=4,8")});
  });
  CHECK(err.find("no-such-scenario.json") != std::string::npos);
  const auto rows = plan::compare(kScenario, {"plan.dp=4", "plan.global_batch=768"},
                                  {plan::parse_axis("plan.tp=3,8")});
  REQUIRE(rows.size() == 2);
  CHECK_FALSE(rows[0].step.has_value());
  CHECK(rows[0].reason.find("not divisible by tp 3") != std::string::npos);
  REQUIRE(rows[1].step.has_value());
  CHECK(rows[1].label == "tp=8");
  // A variant clashing in several ways keeps its reason on one line (a table cell): the heads
  // and the sequence split under TP 6, joined by "; ".
  const auto six = plan::compare(kScenario, {"plan.dp=4", "plan.global_batch=768"},
                                 {plan::parse_axis("plan.tp=6,8")});
  REQUIRE(six.size() == 2);
  CHECK(six[0].reason.find('\n') == std::string::npos);
  CHECK(six[0].reason.find("heads 128 is not divisible by tp 6") != std::string::npos);
  CHECK(six[0].reason.find("; ") != std::string::npos);
  CHECK(six[0].reason.find("plan.sequence_parallel") != std::string::npos);
}

TEST_CASE("plan: compare does not label a row with a value a system switch overrides") {
  // MegaScale's preset runs LAMB and FlashAttention-2 whatever plan.optimizer and
  // optimizations.attention say: until 2026-12-05 both rows ran alike, one labelled adam.
  const auto optimizers = plan::compare(kScenario, {"plan.dp=4", "plan.global_batch=768"},
                                        {plan::parse_axis("plan.optimizer=adam,lamb")});
  REQUIRE(optimizers.size() == 2);
  CHECK_FALSE(optimizers[0].step.has_value());
  CHECK(optimizers[0].reason.find("plan.optimizer=adam runs lamb: the system's lamb switch") !=
        std::string::npos);
  CHECK(optimizers[1].step.has_value());
  const auto kernels =
      plan::compare(kScenario, {"plan.dp=4", "plan.global_batch=768"},
                    {plan::parse_axis("optimizations.attention=unfused,flash-v2"),
                     plan::parse_axis("optimizations.efficient_operators=false,true")});
  REQUIRE(kernels.size() == 4);
  CHECK(kernels[0].step.has_value());  // unfused, without MegaScale's efficient operators
  CHECK(kernels[1].step.has_value());
  CHECK_FALSE(kernels[2].step.has_value());  // unfused asked, flash-v2 run
  CHECK(kernels[2].reason.find("runs flash-v2") != std::string::npos);
  CHECK(kernels[3].step.has_value());
  CHECK(kernels[0].step->step_time > kernels[1].step->step_time);
}

TEST_CASE("compare: the Pareto front of tokens a second against memory headroom, by hand") {
  // Device 80 GiB, 1e6 tokens a step. Headroom = 80 − peak: A 10 s / 40 GiB free, B 8 s / 20
  // free, C 12 s / 30 free (A is faster with more room: C is dominated), D 8 s / 20 free (ties
  // B: both stay), E cannot run; F a step of 9 s moving 2e6 tokens with 20 free (more tokens
  // a second than B and D at their room: they leave the front; by step time they stayed and F
  // was off).
  const auto variant = [](double step_s, double peak_gib, double tokens = 1e6) {
    plan::Variant v;
    step::StepPrediction p;
    p.step_time = Time::from_seconds(step_s);
    p.tokens_per_step = tokens;
    p.tokens_per_s = tokens / step_s;
    workload::MemoryEstimate m;
    m.weights = kGiB * peak_gib;
    p.memory = {m};
    v.step = p;
    v.device_memory = kGiB * 80.0;
    return v;
  };
  std::vector<plan::Variant> vs = {variant(10, 40), variant(8, 60), variant(12, 50),
                                   variant(8, 60), plan::Variant{}};
  plan::mark_pareto_front(vs);
  CHECK(plan::memory_headroom_gib(vs[0]) == doctest::Approx(40));
  CHECK(vs[0].pareto);
  CHECK(vs[1].pareto);
  CHECK_FALSE(vs[2].pareto);
  CHECK(vs[3].pareto);
  CHECK_FALSE(vs[4].pareto);
  vs.push_back(variant(9, 60, 2e6));
  plan::mark_pareto_front(vs);
  CHECK(vs[0].pareto);
  CHECK_FALSE(vs[1].pareto);
  CHECK_FALSE(vs[3].pareto);
  CHECK(vs[5].pareto);
  // Headroom as printed, to 0.1 GiB: 0.0007 GiB more room does not keep a slower row on the
  // front (a user's trial, 2026-12-06: two H200 profiles of 139.8 and 139.80072 GiB).
  std::vector<plan::Variant> close = {variant(10, 40), variant(11, 40.0007 - 0.0014)};
  plan::mark_pareto_front(close);
  CHECK(close[0].pareto);
  CHECK_FALSE(close[1].pareto);
}

TEST_CASE("plan: compare names the values of an axis that change nothing, by their effect") {
  // MegaScale's 256-GPU row runs 2,048-token sequences: a window of 2,048 or more is the full
  // sequence, so those values give one step; micro-batch 1 and 2 differ.
  const auto variants =
      plan::compare(kScenario, {"plan.dp=4", "plan.global_batch=768"},
                    {plan::parse_axis("optimizations.attention_window=1024,2048,4096"),
                     plan::parse_axis("plan.micro_batch=1,2")});
  REQUIRE(variants.size() == 6);
  CHECK(plan::values_alike(variants) ==
        std::vector<std::string>{"optimizations.attention_window=2048, 4096"});
  // One value that runs and one that cannot are not alike.
  std::vector<plan::Variant> two = {variants[1], variants[2]};
  two[1].step.reset();
  CHECK(plan::values_alike(two).empty());
}

TEST_CASE("plan: compare counts combinations without overflow (64 axes of two once wrapped to 0)") {
  CHECK(plan::count_combinations({plan::parse_axis("plan.tp=4,8"), plan::parse_axis("plan.pp=8,16,32")}) == 6);
  // 2^12 = 4,096 is the most; a 13th axis of two is refused, and so are 64 (2^64 wraps to 0).
  const std::vector<plan::Axis> twelve(12, plan::parse_axis("plan.tp=4,8"));
  CHECK(plan::count_combinations(twelve) == 4096);
  const std::vector<plan::Axis> many(64, plan::parse_axis("plan.tp=4,8"));
  CHECK(input_error_of([&] { plan::count_combinations(many); })
            .find("64 --vary axes give more than 4096 combinations") != std::string::npos);
  CHECK(input_error_of([] { plan::count_combinations({}); }).find("give at least one --vary") !=
        std::string::npos);
}

TEST_CASE("plan: a --vary value that is a JSON array or object keeps its commas") {
  // plan.layer_split=[24,24],[20,28] was split at every comma into '[24', '24]', ...
  const plan::Axis split = plan::parse_axis("plan.layer_split=[24,24],[20,28]");
  REQUIRE(split.values.size() == 2);
  CHECK(split.values[0] == "[24,24]");
  CHECK(split.values[1] == "[20,28]");
  const plan::Axis text = plan::parse_axis(R"(name="a,b",{"x":[1,2]},3)");
  REQUIRE(text.values.size() == 3);
  CHECK(text.values[0] == R"("a,b")");
  CHECK(text.values[1] == R"({"x":[1,2]})");
  CHECK(text.values[2] == "3");
  CHECK(plan::parse_axis("plan.tp=4,8").values.size() == 2);
}

TEST_CASE("plan: FP8 on Hopper is faster than 16-bit but less than twice, MFU against bf16") {
  // Megatron-Core's 70B row on 768 H100: the linear GEMMs at the fp8 peak, twice bf16's; the
  // attention, the norms, the casts and the communication do not halve.
  const std::filesystem::path file =
      std::filesystem::path(MEGASIM_SOURCE_DIR) / "scenarios/validation/mcore-h100-70b-768.json";
  io::InputOptions o;
  o.run_level = false;
  const io::Inputs bf16 = io::load_inputs(io::load_scenario(file, {}), o);
  const io::Inputs fp8 = io::load_inputs(io::load_scenario(file, {"plan.fp8=true"}), o);
  const plan::Evaluation a = plan::evaluate(bf16);
  const plan::Evaluation b = plan::evaluate(fp8);
  const double speedup = a.step.step_time.to_seconds() / b.step.step_time.to_seconds();
  CHECK(speedup > 1.05);
  CHECK(speedup < 2.0);
  // The same model FLOPs over the same bf16 peak: MFU scales with the speed-up.
  CHECK(b.step.mfu / a.step.mfu == doctest::Approx(speedup).epsilon(1e-9));
  // One memory model: inspect sees the FP8 copies and one-byte inputs simulate does.
  const plan::Inspection i = plan::inspect(fp8);
  for (std::size_t s = 0; s < i.stages.size(); ++s) {
    CHECK(i.stages[s].memory.total() == b.step.memory[s].total());
    CHECK(b.step.memory[s].weights > a.step.memory[s].weights);
    CHECK(b.step.memory[s].activations < a.step.memory[s].activations);
  }
}

TEST_CASE("plan: inspect counts ZeRO-2's gradient reduction once per micro-batch, as it runs") {
  // ZeRO-2 reduce-scatters a chunk's gradients after every backward pass (the executor's
  // reduce_every_backward); inspect counted them once a step until 2026-12-06, the same bytes
  // as ZeRO-1's.
  const io::Inputs zero1 = step_inputs({});
  const io::Inputs zero2 = step_inputs({"plan.zero2=true"});
  const std::int64_t m = zero2.scenario.plan.micro_batches();
  REQUIRE(m > 1);
  const step::AssembledWorkload w = plan::assemble_workload(zero2);
  double gradients = 0.0;
  for (const workload::Op& op : w.program[0].dp_gradient_comm) gradients += op.bytes().value();
  const std::int64_t calls = static_cast<std::int64_t>(w.program[0].dp_gradient_comm.size());
  REQUIRE(gradients > 0.0);
  const plan::KindTotals one = plan::inspect(zero1).stages[0].per_step.at("comm");
  const plan::KindTotals every = plan::inspect(zero2).stages[0].per_step.at("comm");
  CHECK(every.bytes.value() - one.bytes.value() ==
        doctest::Approx(static_cast<double>(m - 1) * gradients));
  CHECK(every.count - one.count == (m - 1) * calls);
}
