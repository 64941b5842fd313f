// What `simulate --json` says of the system that ran: besides the preset and its switches, the
// attention kernel, whether context parallelism's exchanges overlap the attention, whether the
// DP overlap goes bucket by bucket and whether the backward pass's TP collectives overlap, the
// keys a scenario's `optimizations` may set apart from the switches; and each override moves
// the step.
#include <doctest/doctest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "run_command.h"

using megasim::test::run_megasim;
using megasim::test::shell_quote;

namespace {

// A shipped file's path in the source tree, quoted for the shell; `simulate --json` of a
// shipped scenario; and a command's JSON.
std::string shipped(const std::string& path) {
  return shell_quote(std::string(MEGASIM_SOURCE_DIR) + "/" + path);
}
std::string simulate_json_of(const std::string& scenario) {
  return "simulate --json " + shipped(scenario);
}
nlohmann::json json_of(const std::string& command) {
  return nlohmann::json::parse(run_megasim(command).out);
}

}  // namespace

TEST_CASE("cli: simulate --json names the attention kernel and the CP overlap that ran") {
  // Llama 3's plan at CP 2 (DP 32 keeps the GPUs), on the megatron-core preset: TE's ring.
  const std::string cp2 = simulate_json_of("scenarios/validation/llama3-405b-8k-8192.json") +
                          " --set plan.cp=2 --set plan.dp=32";
  const auto ring = json_of(cp2);
  CHECK(ring["system"]["attention"] == "flash-v2");
  CHECK(ring["system"]["context_parallel_overlap"] == true);
  // Llama 3's own all-gather, exposed before the attention: the system says so and the step is
  // priced another way (at 8K tokens the exchange is small beside the attention, and the ring
  // pays the attention's slowing beside its traffic, so the two differ by well under 1 %).
  const auto exposed = json_of(cp2 + " --set optimizations.context_parallel_overlap=false");
  CHECK(exposed["system"]["context_parallel_overlap"] == false);
  CHECK(exposed["step_time_s"].get<double>() != ring["step_time_s"].get<double>());
  CHECK(exposed["step_time_s"].get<double>() ==
        doctest::Approx(ring["step_time_s"].get<double>()).epsilon(0.01));
  // The default scenario: MegaScale's efficient operators run FlashAttention-2.
  const auto megascale = json_of(simulate_json_of("scenarios/megascale-175b-12288.json"));
  CHECK(megascale["system"]["attention"] == "flash-v2");
  CHECK(megascale["system"]["context_parallel_overlap"] == false);
  // What runs, not the key: with tp_overlap on the backward's TP collectives overlap whatever
  // backward_tp_overlap says (the JSON read false until 2026-12-07).
  const auto keyed_off = json_of(simulate_json_of("scenarios/megascale-175b-12288.json") +
                                 " --set optimizations.backward_tp_overlap=false");
  CHECK(keyed_off["system"]["tp_overlap"] == true);
  CHECK(keyed_off["system"]["backward_tp_overlap"] == true);
}

TEST_CASE("cli: optimizations.dp_bucket_overlap and backward_tp_overlap override the preset") {
  // SC'21's 18.4B row runs PyTorch DDP: its all-reduce bucket by bucket beside the backward.
  const std::string sc21 = simulate_json_of("scenarios/validation/sc21-t1-18.4b.json");
  const auto ddp = json_of(sc21);
  CHECK(ddp["system"]["dp_overlap"] == true);
  CHECK(ddp["system"]["dp_bucket_overlap"] == true);
  CHECK(ddp["system"]["backward_tp_overlap"] == false);  // the megatron-lm preset's
  // The whole all-reduce after the backward instead: exposed, and the step longer by it.
  const auto whole = json_of(sc21 + " --set optimizations.dp_bucket_overlap=false");
  CHECK(whole["system"]["dp_bucket_overlap"] == false);
  CHECK(whole["breakdown_s"]["dp_exposed"].get<double>() >
        10.0 * ddp["breakdown_s"]["dp_exposed"].get<double>());
  CHECK(whole["step_time_s"].get<double>() > ddp["step_time_s"].get<double>());
  // DP overlap off (a what-if the scenario's buckets must not block): the buckets have nothing
  // to split, the system says so, and the step is the whole all-reduce's above.
  const auto no_overlap = json_of(sc21 + " --set optimizations.dp_overlap=false");
  CHECK(no_overlap["system"]["dp_overlap"] == false);
  CHECK(no_overlap["system"]["dp_bucket_overlap"] == false);
  CHECK(no_overlap["step_time_s"].get<double>() > ddp["step_time_s"].get<double>());
  // The backward pass's TP collectives beside dgrad and wgrad: less TP time exposed.
  const auto bwd = json_of(sc21 + " --set optimizations.backward_tp_overlap=true");
  CHECK(bwd["system"]["backward_tp_overlap"] == true);
  CHECK(bwd["breakdown_s"]["tp_exposed"].get<double>() <
        ddp["breakdown_s"]["tp_exposed"].get<double>());
}

TEST_CASE(
    "cli: optimizations.grad_accumulation_pass charges SC'21's accumulation, per micro-batch") {
  // SC'21's 530B (2021 code, 280 micro-batches of 1): the pass is on; off, the step is shorter
  // by the adds, a few percent of a micro-batch-1 step.
  const std::string sc21 = simulate_json_of("scenarios/validation/sc21-t1-529.6b.json");
  const auto on = json_of(sc21);
  CHECK(on["system"]["grad_accumulation_pass"] == true);
  const auto off = json_of(sc21 + " --set optimizations.grad_accumulation_pass=false");
  CHECK(off["system"]["grad_accumulation_pass"] == false);
  const double longer = on["step_time_s"].get<double>() / off["step_time_s"].get<double>();
  CHECK(longer > 1.01);
  CHECK(longer < 1.08);
  // The megatron-lm preset's own: fused (Megatron-LM from February 2022).
  const auto korthikanti =
      json_of(simulate_json_of("scenarios/validation/korthikanti-530b-full.json"));
  CHECK(korthikanti["system"]["grad_accumulation_pass"] == false);
}

TEST_CASE("cli: simulate --json says whether DeepSpeed's BF16_Optimizer ran") {
  // BLOOM's bf16 run through the pipeline engine runs it; the same run in fp16 runs none, and
  // the JSON did not say either until 2026-12-06 (a documentation audit).
  const std::string bloom = simulate_json_of("scenarios/validation/bloom-176b-384.json");
  const auto bf16 = json_of(bloom);
  CHECK(bf16["system"]["bf16_optimizer"] == true);
  const auto fp16 = json_of(bloom + " --set plan.precision=fp16");
  CHECK(fp16["system"]["bf16_optimizer"] == false);
}

TEST_CASE(
    "cli: FSDP reduces each unit's gradients beside the backward, SHARD_GRAD_OP and NO_SHARD") {
  // Every FSDP strategy reduces in post-backward hooks on a separate stream. Until 2026-12-06
  // the fsdp preset left dp_overlap off, which ZeRO-3 ignores but which held ZeRO-2's
  // reduce-scatters to the backward's end with every gradient whole: more memory than ZeRO-1
  // and slower than FULL_SHARD (a user's trial).
  const std::string base =
      simulate_json_of("scenarios/validation/korthikanti-22b-selective.json") +
      " --set plan.dp=8 --set plan.global_batch=64 --set optimizations.preset=fsdp"
      " --set plan.distributed_optimizer=true";
  const auto zero2 = json_of(base + " --set plan.zero2=true");
  const auto blocking =
      json_of(base + " --set plan.zero2=true --set optimizations.dp_overlap=false");
  const auto zero1 = json_of(base);
  CHECK(zero2["system"]["dp_overlap"].get<bool>());
  CHECK(zero2["step_time_s"].get<double>() < blocking["step_time_s"].get<double>());
  const double grads = zero2["memory_per_stage"][0]["gradients_gib"].get<double>();
  CHECK(grads < 0.25 * zero1["memory_per_stage"][0]["gradients_gib"].get<double>());
  CHECK(grads < 0.25 * blocking["memory_per_stage"][0]["gradients_gib"].get<double>());
  // NO_SHARD's all-reduce, unit by unit beside the backward: 0.80 s of a 3.02 s step was
  // exposed with dp_overlap alone and no buckets (a review's find, 2026-12-06).
  const auto no_shard =
      json_of(simulate_json_of("scenarios/validation/korthikanti-22b-selective.json") +
              " --set plan.dp=8 --set plan.global_batch=64 --set optimizations.preset=fsdp");
  CHECK(no_shard["breakdown_s"]["dp_exposed"].get<double>() <
        0.05 * no_shard["step_time_s"].get<double>());
}

TEST_CASE(
    "cli: FSDP's SHARD_GRAD_OP gathers each layer before every forward, DeepSpeed's ZeRO-2 "
    "once a step") {
  // SHARD_GRAD_OP reshards after every backward pass (FSDP's _should_free_in_backward), so each
  // micro-batch's forward gathers every unit again; DeepSpeed's stage 2 never shards the
  // parameters. Until 2026-12-07 both gathered once a step (a trial of the presets). 48 layers:
  // 48 more collectives a micro-batch, and the step's gathers leave for the passes.
  const std::string inspect =
      "inspect --json " + shipped("scenarios/validation/korthikanti-22b-selective.json") +
      " --set plan.dp=8 --set plan.global_batch=64 --set plan.distributed_optimizer=true";
  auto stage0 = [&](const std::string& preset, bool zero2) {
    const auto j = json_of(inspect + " --set optimizations.preset=" + preset +
                           (zero2 ? " --set plan.zero2=true" : ""));
    return j["stages"][0];
  };
  const auto fsdp1 = stage0("fsdp", false), fsdp2 = stage0("fsdp", true);
  CHECK(fsdp2["layers"] == 48);
  CHECK(fsdp2["ops_per_micro_batch"]["comm"]["count"].get<int>() ==
        fsdp1["ops_per_micro_batch"]["comm"]["count"].get<int>() + 48);
  CHECK(fsdp2["ops_per_micro_batch"]["comm"]["bytes"].get<double>() >
        fsdp1["ops_per_micro_batch"]["comm"]["bytes"].get<double>());
  const auto ds1 = stage0("deepspeed", false), ds2 = stage0("deepspeed", true);
  CHECK(ds2["ops_per_micro_batch"]["comm"]["count"] == ds1["ops_per_micro_batch"]["comm"]["count"]);
}

TEST_CASE(
    "cli: bf16 gradients under deepspeed's ZeRO optimizers reduce in bf16, elsewhere in fp32") {
  // DeepSpeed's communication_data_type is bf16 with bf16; its BF16_Optimizer keeps flat fp32
  // gradients, Megatron's rule fp32 (until 2026-12-07 fp32 under every preset: deepspeed's
  // ZeRO-2 reduced twice DeepSpeed's bytes). A plan's own fp32_gradients wins.
  const std::string base =
      simulate_json_of("scenarios/validation/korthikanti-22b-selective.json") +
      " --set plan.dp=4 --set plan.global_batch=64 --set plan.distributed_optimizer=true";
  auto fp32 = [&](const std::string& extra) {
    return json_of(base + extra)["plan"]["fp32_gradients"].get<bool>();
  };
  const std::string ds = " --set optimizations.preset=deepspeed";
  CHECK_FALSE(fp32(ds + " --set plan.zero2=true"));
  CHECK_FALSE(fp32(ds + " --set optimizations.bf16_optimizer=false"));
  CHECK(fp32(ds));  // BF16_Optimizer's flat fp32 gradients
  CHECK(fp32(ds + " --set plan.zero2=true --set plan.fp32_gradients=true"));
  CHECK(fp32(" --set optimizations.preset=megatron-core --set plan.zero2=true"));
  const auto bf16 = json_of(base + ds + " --set plan.zero2=true");
  const auto kept = json_of(base + ds + " --set plan.zero2=true --set plan.fp32_gradients=true");
  CHECK(bf16["breakdown_s"]["dp_exposed"].get<double>() <
        0.7 * kept["breakdown_s"]["dp_exposed"].get<double>());
}

TEST_CASE("cli: a plan feature the preset's framework does not run is priced and said") {
  // Megatron-LM of 2021-23 has no ZeRO-3, FSDP1 no pipeline: each ran without a word until
  // 2026-12-07 (a trial of the presets). Megatron-Core runs both: nothing said.
  const std::string base = simulate_json_of("scenarios/validation/korthikanti-22b-selective.json") +
                           " --set plan.dp=4 --set plan.global_batch=64";
  const auto lm = run_megasim(base + " --set plan.zero3=true");
  CHECK(lm.exit_code == 0);
  CHECK(lm.err.find("plan.zero3 under preset 'megatron-lm', whose framework does not run it") !=
        std::string::npos);
  const auto fsdp =
      run_megasim(simulate_json_of("scenarios/validation/korthikanti-22b-selective.json") +
                  " --set plan.dp=2 --set plan.pp=2 --set plan.global_batch=64"
                  " --set optimizations.preset=fsdp");
  CHECK(fsdp.exit_code == 0);
  CHECK(fsdp.err.find("plan.pp 2 under preset 'fsdp'") != std::string::npos);
  const auto core =
      run_megasim(base + " --set plan.zero3=true --set optimizations.preset=megatron-core");
  CHECK(core.exit_code == 0);
  CHECK(core.err.find("whose framework does not run") == std::string::npos);
}

TEST_CASE("cli: search's candidates take deepspeed's bf16 gradients by their own ZeRO stage") {
  // A ZeRO-2 scenario's plans are searched as ZeRO-1, where BF16_Optimizer keeps fp32
  // gradients; they kept ZeRO-2's bf16 ones (2 B a parameter short in memory, a step apart from
  // simulate's) until 2026-12-07 (a review). The ranked plan is the one simulate runs.
  const std::string scenario = shipped("scenarios/validation/korthikanti-22b-selective.json");
  const std::string sets =
      " --set optimizations.preset=deepspeed --set plan.dp=4 --set plan.distributed_optimizer=true"
      " --set plan.micro_batch=4 --set plan.global_batch=64";
  const auto found = json_of("search --json " + scenario + sets +
                             " --set plan.zero2=true --gpus 32 --fix tp=8 --fix pp=1"
                             " --fix micro_batch=4 --fix recompute=selective --fix sp=1"
                             " --fix dist_opt=1 --top 1");
  const auto run = json_of("simulate --json " + scenario + sets);
  REQUIRE(found["ranked"].size() == 1);
  CHECK(run["plan"]["fp32_gradients"] == true);
  CHECK(found["ranked"][0]["objective"].get<double>() ==
        doctest::Approx(run["step_time_s"].get<double>()).epsilon(1e-9));
}

TEST_CASE("cli: search keeps a framework without pipelines at PP 1 and says what it lacks") {
  // FSDP1 runs no pipeline: its preset's search ranked PP 2 plans without a word until
  // 2026-12-07 (a review); --vary pp still asks for them.
  const std::string scenario = shipped("scenarios/validation/korthikanti-22b-selective.json");
  const std::string fixes =
      " --gpus 32 --fix tp=4 --fix micro_batch=1 --fix recompute=selective --fix sp=1"
      " --set plan.dp=4 --set plan.global_batch=64 --top 3";
  const auto fsdp =
      run_megasim("search --json " + scenario + fixes + " --set optimizations.preset=fsdp");
  REQUIRE(fsdp.exit_code == 0);
  const auto ranked = nlohmann::json::parse(fsdp.out)["ranked"];
  REQUIRE(!ranked.empty());
  for (const auto& plan : ranked) {
    CHECK(plan["key"].get<std::string>().find(" pp=1 ") != std::string::npos);
  }
  // Asked for, pipelines are ranked, and said once.
  const auto piped = run_megasim("search --json " + scenario + fixes +
                                 " --set optimizations.preset=fsdp --fix pp=2");
  REQUIRE(piped.exit_code == 0);
  CHECK(piped.out.find(" pp=2 ") != std::string::npos);
  CHECK(piped.err.find("plan.pp 2 under preset 'fsdp', whose framework does not run it") !=
        std::string::npos);
  // A ZeRO-3 scenario's candidates are ZeRO-1 (plan::to_normal_form): nothing to say of ZeRO-3.
  const auto lm = run_megasim("search --json " + scenario + fixes + " --set plan.zero3=true");
  CHECK(lm.exit_code == 0);
  CHECK(lm.err.find("whose framework does not run") == std::string::npos);
}

TEST_CASE("cli: simulate --json says how a stage's output crosses to the next") {
  // Korthikanti et al.'s full-recompute 530B (no sequence parallelism, TP 8) on Megatron-LM's
  // scatter-gather; the same plan under Megatron-Core's p2p sends the whole tensor; with
  // sequence parallelism each rank sends its shard; DeepSpeed's engine partitions its own.
  const std::string full = simulate_json_of("scenarios/validation/korthikanti-530b-full.json");
  CHECK(json_of(full)["system"]["pp_transfer"] == "scatter-gather");
  CHECK(json_of(full + " --set optimizations.preset=megatron-core")["system"]["pp_transfer"] ==
        "whole from every tp rank");
  CHECK(json_of(simulate_json_of(
            "scenarios/validation/korthikanti-530b-selective.json"))["system"]["pp_transfer"] ==
        "sequence-parallel shard");
  CHECK(json_of(simulate_json_of(
            "scenarios/validation/bloom-176b-384.json"))["system"]["pp_transfer"] == "partitioned");
  // SC'21's 2021 code gathered through a list, which PyTorch fills by a copy.
  const std::string sc21 = simulate_json_of("scenarios/validation/sc21-t2-ptdp-175b-768.json");
  CHECK(json_of(sc21)["system"]["pp_transfer"] == "scatter-gather through a list (copied)");
  CHECK(json_of(sc21 +
                " --set optimizations.scatter_gather_list_copy=false")["system"]["pp_transfer"] ==
        "scatter-gather");
}

TEST_CASE(
    "cli: the fp32 gradient copy is held from the backward under fsdp, made at the step under "
    "deepspeed") {
  // OPT-175B's FSDP plan (fp16 gradients): FSDP keeps each reduced shard cast to fp32 as the
  // flat parameter's .grad, a part of the optimizer states at the passes' peak; DeepSpeed's
  // ZeRO optimizer makes it at the step, after the activations are freed (4 B of the 16).
  const std::string opt = simulate_json_of("scenarios/validation/opt-175b-992.json");
  const auto fsdp = json_of(opt)["memory_per_stage"][0];
  const auto deepspeed =
      json_of(opt + " --set optimizations.preset=deepspeed")["memory_per_stage"][0];
  CHECK(fsdp["main_gradient_at_step_gib"].get<double>() == 0.0);
  const double step_copy = deepspeed["main_gradient_at_step_gib"].get<double>();
  CHECK(step_copy > 0.0);
  CHECK(deepspeed["optimizer_states_gib"].get<double>() + step_copy ==
        doctest::Approx(fsdp["optimizer_states_gib"].get<double>()));
  CHECK(step_copy == doctest::Approx(fsdp["optimizer_states_gib"].get<double>() / 4.0));
}

TEST_CASE("cli: the fsdp preset at DP 1 holds ZeRO-3's parameters once, as FSDP's NO_SHARD") {
  // systems/fsdp.json's no_shard_at_one_rank: Korthikanti's 22B at TP 8 on one node, DP 1.
  // With it ZeRO-3 holds what no ZeRO holds; the deepspeed preset keeps its gathered layer
  // (0.2 GiB of weights and of gradients more until 2026-12-07 under fsdp too).
  const std::string row = simulate_json_of("scenarios/validation/korthikanti-22b-selective.json");
  const std::string s = row + " --set optimizations.preset=fsdp";
  const auto sharded = json_of(s + " --set plan.zero3=true")["memory_per_stage"][0];
  const auto plain = json_of(s)["memory_per_stage"][0];
  CHECK(sharded["weights_gib"] == plain["weights_gib"]);
  CHECK(sharded["gradients_gib"] == plain["gradients_gib"]);
  const auto deepspeed =
      json_of(row + " --set plan.zero3=true --set optimizations.preset=deepspeed");
  CHECK(deepspeed["memory_per_stage"][0]["weights_gib"].get<double>() >
        plain["weights_gib"].get<double>());
}
