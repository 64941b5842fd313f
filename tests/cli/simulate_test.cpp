#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "recipe_scenario.h"
#include "run_command.h"
#include "simulate_json.h"

using megasim::test::kDefaultScenario;
using megasim::test::run_megasim;
using megasim::test::simulate_json;

namespace {

nlohmann::json memory_per_stage(const std::string& args) {
  return simulate_json(args)["memory_per_stage"];
}
}  // namespace

TEST_CASE("cli: --help and --version exit 0 and usage errors exit 2") {
  auto help = run_megasim("--help");
  CHECK(help.exit_code == 0);
  CHECK(help.out.find("simulate") != std::string::npos);
  // A count's help gives its range, not "INT:INT" (read as a range syntax, 2026-12-05).
  const auto simulate_help = run_megasim("simulate --help");
  CHECK(simulate_help.exit_code == 0);
  CHECK(simulate_help.out.find("--trials INT:in [1, 100000]") != std::string::npos);
  CHECK(simulate_help.out.find("INT:INT") == std::string::npos);
  auto version = run_megasim("--version");
  CHECK(version.exit_code == 0);
  CHECK(version.out.find("megasim") != std::string::npos);
  CHECK(run_megasim("").exit_code == 2);
  CHECK(run_megasim("frobnicate").exit_code == 2);
  CHECK(run_megasim("simulate --no-such-flag x.json").exit_code == 2);
  // A count given in another notation is named as such: CLI11's Range said "Value 1e3 not in
  // range 1 to 100000" of a value that is in range.
  const auto trials = run_megasim("simulate " + kDefaultScenario + " --trials 1e3");
  CHECK(trials.exit_code == 2);
  CHECK(trials.err.find("--trials: '1e3' is not a whole number from 1 to 100000") !=
        std::string::npos);
  const auto per_node = run_megasim("collective --cluster dgx-a100-8 --per-node 2.5");
  CHECK(per_node.exit_code == 2);
  CHECK(per_node.err.find("--per-node: '2.5' is not a whole number from 1 to 1024") !=
        std::string::npos);
}

TEST_CASE("cli: simulate --json prints exactly one JSON object and nothing else") {
  auto r = run_megasim("simulate --json " + kDefaultScenario);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.empty());
  const auto doc = nlohmann::json::parse(r.out);  // throws if anything else was printed
  CHECK(doc.is_object());
  CHECK(doc["plan"]["gpus"] == 12288);
  CHECK(doc["step_time_s"].get<double>() > 0.0);
  CHECK(doc["mfu"].get<double>() > 0.0);
  CHECK(doc["mfu"].get<double>() < 1.0);
}

TEST_CASE("cli: --set reaches the scenario") {
  auto r = run_megasim("simulate --json " + kDefaultScenario +
                       " --set plan.dp=4 --set plan.global_batch=768");
  REQUIRE(r.exit_code == 0);
  const auto doc = nlohmann::json::parse(r.out);
  CHECK(doc["plan"]["gpus"] == 256);
}

TEST_CASE("cli: same scenario gives byte-identical output") {
  auto a = run_megasim("simulate --json " + kDefaultScenario);
  auto b = run_megasim("simulate --json " + kDefaultScenario);
  auto c = run_megasim("simulate " + kDefaultScenario);
  auto d = run_megasim("simulate " + kDefaultScenario);
  // Runs that failed alike would print the same nothing (a review found this test passing on
  // a binary that exits 1, 2026-12-05).
  for (const auto* r : {&a, &b, &c, &d}) {
    REQUIRE(r->exit_code == 0);
    REQUIRE(r->out.find("step") != std::string::npos);
  }
  CHECK(a.out == b.out);
  CHECK(c.out == d.out);
}

TEST_CASE("cli: compare lists every combination and the reason an infeasible one fails") {
  auto r = run_megasim("compare --json " + kDefaultScenario +
                       " --vary plan.dp=4,8 --vary plan.pp=8,64 --set plan.global_batch=768");
  REQUIRE(r.exit_code == 0);
  const auto doc = nlohmann::json::parse(r.out);
  REQUIRE(doc["variants"].size() == 4);
  int feasible = 0;
  for (const auto& v : doc["variants"]) {
    if (v["feasible"].get<bool>()) {
      ++feasible;
      CHECK(v["mfu"].get<double>() > 0.0);
    } else {
      // pp 64 does not divide 96 layers into 64 × 6 chunks.
      CHECK(v["reason"].get<std::string>().find("64") != std::string::npos);
    }
  }
  CHECK(feasible == 2);
  CHECK(run_megasim("compare " + kDefaultScenario + " --vary plan.tp").exit_code == 2);
}

TEST_CASE("cli: a scenario run on an imported calibration uses its measured collectives and says so") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("megasim_imported_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  // The A100 datasheet profile with measured rows for the TP group's collectives (8 ranks on
  // 1 node), 1 KiB-16 GiB, as `megasim calibrate import-nccl-tests` writes them: each at 30 us
  // + size x 7/8 / 120 GB/s of bus bandwidth (the model gives about 230).
  auto profile = nlohmann::json::parse(megasim::test::read_all(
      std::string(MEGASIM_SOURCE_DIR) + "/calibrate/profiles/a100-sxm4-80gb.json"));
  profile["kind"] = "imported";
  profile["measurement"] = {{"date", "2026-11-29"}, {"tool", "nccl-tests (test fixture)"}};
  profile["collective_table"] = nlohmann::json::array();
  for (const char* op : {"all_gather", "reduce_scatter"}) {
    for (double bytes = 1024.0; bytes <= 16.0 * (1 << 30); bytes *= 4.0) {
      const double us = 30.0 + bytes * 7.0 / 8.0 / 120e9 * 1e6;
      const double algbw = bytes / us * 1e-3;
      profile["collective_table"].push_back(
          {{"op", op}, {"ranks", 8}, {"nodes", 1}, {"bytes", bytes}, {"time_us", us},
           {"algbw_gbps", algbw}, {"busbw_gbps", algbw * 7.0 / 8.0}, {"run", op}});
    }
  }
  const fs::path device = dir / "a100-imported.json";
  std::ofstream(device) << profile.dump(2);
  const std::string common = " --json " + kDefaultScenario + " --set plan.dp=4 --set plan.global_batch=768" +
                             " --set run.tokens=1e9";
  auto datasheet = run_megasim("simulate" + common);
  auto imported = run_megasim("simulate" + common + " --set device=" + device.string());
  REQUIRE(datasheet.exit_code == 0);
  INFO(imported.err);
  REQUIRE(imported.exit_code == 0);
  const auto a = nlohmann::json::parse(datasheet.out);
  const auto b = nlohmann::json::parse(imported.out);
  CHECK(a["costs"]["collective_measured_share"].get<double>() == 0.0);
  CHECK(b["costs"]["device_kind"] == "imported");
  CHECK(b["costs"]["collective_measured_share"].get<double>() > 0.2);
  // 120 GB/s measured against the model's 230: the TP collectives got slower.
  CHECK(b["step_time_s"].get<double>() > a["step_time_s"].get<double>());
  fs::remove_all(dir);
}

TEST_CASE("cli: a calibration's fitted scales price the step's unmeasured collectives") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("megasim_scaled_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  // The H100 profile with fitted scales and no measured rows: NVLink and NICs at a fifth of
  // the modelled bus bandwidth. No shape is measured, so NCCL's model answers every
  // collective, under the scales: the TP collectives (8 ranks, NVLink) take longer, and the
  // step with them; none is counted as measured.
  auto profile = nlohmann::json::parse(megasim::test::read_all(
      std::string(MEGASIM_SOURCE_DIR) + "/calibrate/profiles/h100-sxm5-80gb.json"));
  profile["kind"] = "imported";
  profile["measurement"] = {{"date", "2026-12-01"}, {"tool", "nccl-tests (test fixture)"}};
  profile["collective_scales"] = nlohmann::json::array();
  for (int nodes : {1, 2}) {
    profile["collective_scales"].push_back(
        {{"run", "fixture"}, {"cluster", "llama3-h100-24576"}, {"op", "all_reduce"},
         {"ranks", 8 * nodes}, {"nodes", nodes}, {"bandwidth_scale", 0.2},
         {"latency_offset_us", 0.0}, {"bandwidth_rows", 9}, {"latency_rows", 0}, {"rows", 12},
         {"rms_log_residual", 0.0}});
  }
  const fs::path device = dir / "h100-scaled.json";
  std::ofstream(device) << profile.dump(2);
  const std::string common = " --json " + kDefaultScenario + " --set cluster=llama3-h100-24576";
  auto datasheet = run_megasim("simulate" + common + " --set device=h100-sxm5-80gb");
  auto scaled = run_megasim("simulate" + common + " --set device=" + device.string());
  REQUIRE(datasheet.exit_code == 0);
  INFO(scaled.err);
  REQUIRE(scaled.exit_code == 0);
  const auto a = nlohmann::json::parse(datasheet.out);
  const auto b = nlohmann::json::parse(scaled.out);
  CHECK(b["costs"]["collective_measured_share"].get<double>() == 0.0);
  CHECK(b["step_time_s"].get<double>() > 1.05 * a["step_time_s"].get<double>());
  fs::remove_all(dir);
}

TEST_CASE("cli: the MegaScale plan on the Llama-3-like H100 cluster runs on the H100 profile") {
  auto r = run_megasim("simulate --json " + kDefaultScenario +
                       " --set cluster=llama3-h100-24576 --set device=h100-sxm5-80gb");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto doc = nlohmann::json::parse(r.out);
  CHECK(doc["device"]["name"] == "h100-sxm5-80gb");
  CHECK(doc["mfu"].get<double>() > 0.1);
  CHECK(doc["mfu"].get<double>() < 1.0);
  CHECK(doc["power"]["it_peak_mw"].get<double>() > 0.0);
}

TEST_CASE("cli: simulate and inspect agree on the memory of a plan (issue: 118.9 vs 50.1 GiB)") {
  // Before the one assembly (plan::assemble_workload) simulate priced memory for unfused
  // attention while running MegaScale's fused kernel, and refused this plan at 118.9 GiB.
  const std::string sets =
      " --set plan.recompute=none --set plan.micro_batch=2 --set plan.dp=4 --set "
      "plan.global_batch=768";
  const auto sim = run_megasim("simulate --json " + kDefaultScenario + sets);
  REQUIRE(sim.exit_code == 0);
  const auto ins = run_megasim("inspect --json " + kDefaultScenario + sets);
  REQUIRE(ins.exit_code == 0);
  const auto s = nlohmann::json::parse(sim.out)["memory_per_stage"];
  const auto i = nlohmann::json::parse(ins.out)["stages"];
  REQUIRE(s.size() == i.size());
  for (std::size_t k = 0; k < s.size(); ++k) {
    CHECK(s[k]["total_gib"].get<double>() ==
          doctest::Approx(i[k]["memory"]["total_bytes"].get<double>() / (1024.0 * 1024 * 1024)));
  }
}

TEST_CASE("cli: a window the system switches on lowers every FLOP count, the MFU's too") {
  // MegaScale's preset runs a 1,024-token window on the default scenario: the kernels' counts
  // (model, hardware, useful) are the windowed model's in inspect and simulate (HFU) alike,
  // the MFU numerator charging attention s·window as MegaScale's published figures count it
  // (workload/flops.h): 72·l·h²·(1 + w/6h + V/12lh) = 1.0629e12 against 1.0774e12.
  // Until 2026-12-03 inspect printed the unwindowed counts and simulate's HFU charged the
  // recomputed attention at the full sequence; until the next session the MFU kept the full.
  const auto on = nlohmann::json::parse(run_megasim("inspect --json " + kDefaultScenario).out);
  const auto off = nlohmann::json::parse(
      run_megasim("inspect --json " + kDefaultScenario + " --set optimizations.sliding_window=false").out);
  CHECK(on["model_flops_per_token"].get<double>() == doctest::Approx(1.0629e12).epsilon(1e-4));
  CHECK(off["model_flops_per_token"].get<double>() == doctest::Approx(1.0774e12).epsilon(1e-4));
  for (const char* key : {"hardware_flops_per_token", "useful_flops_per_token"}) {
    CAPTURE(key);
    CHECK(on[key].get<double>() < off[key].get<double>());
  }
  const auto sim = nlohmann::json::parse(run_megasim("simulate --json " + kDefaultScenario).out);
  const double hw_ratio =
      sim["tflops_per_gpu_hw"].get<double>() / sim["tflops_per_gpu_model"].get<double>();
  CHECK(hw_ratio == doctest::Approx(on["hardware_flops_per_token"].get<double>() /
                                    on["model_flops_per_token"].get<double>())
                        .epsilon(1e-9));
}

TEST_CASE("cli: inspect counts the parameters of the model the system runs") {
  // MegaScale's parallel block has one LayerNorm a layer (2·h parameters) where the model file's
  // sequential block has two: 96 × 2 × 12,288 fewer. inspect's header printed the file's count
  // while its per-rank counts were the parallel block's (a user's trial, 2026-12-05).
  const auto on = nlohmann::json::parse(run_megasim("inspect --json " + kDefaultScenario).out);
  const auto off = nlohmann::json::parse(run_megasim("inspect --json " + kDefaultScenario +
                                                     " --set optimizations.parallel_block=false")
                                             .out);
  CHECK(off["model"]["parameters"].get<std::int64_t>() -
            on["model"]["parameters"].get<std::int64_t>() ==
        96 * 2 * 12288);
}

TEST_CASE("cli: a plan that fits only without the fragmentation margin runs, marked tight") {
  // NVIDIA's Llama 3.1 405B BF16 recipe ran on 80 GB H100s (79.2 GiB to CUDA); megasim's
  // stage 0 needs 78.1 GiB, 81.9 with its 5 % fragmentation margin: simulated, the tight
  // stage marked, the room stated.
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("megasim_tight_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path file = dir / "llama31-405b-recipe.json";
  std::ofstream(file) << megasim::test::kTightRecipeScenario;
  const std::string s = megasim::test::shell_quote(file.string());
  const auto text = run_megasim("simulate " + s);
  REQUIRE(text.exit_code == 0);
  CHECK(text.out.find("81.9  tight") != std::string::npos);
  CHECK(text.out.find("tight: stage 0 needs 78.1 of the device's 79.2 GiB, 81.9 with the 5 % "
                      "fragmentation margin; it runs only if the allocator loses under 1.1 GiB") !=
        std::string::npos);
  CHECK(text.out.find(" over") == std::string::npos);
  const auto m = memory_per_stage(s);
  CHECK(m[0]["tight"] == true);
  CHECK(m[1]["tight"] == false);
  CHECK(m[0]["over_device"] == false);
  CHECK(m[0]["fragmentation_margin_gib"].get<double>() ==
        doctest::Approx(0.05 / 1.05 * (m[0]["total_gib"].get<double>() - 2.0)));
  fs::remove_all(dir);
}

TEST_CASE(
    "cli: a published plan over megasim's memory model is simulated only when its row says so") {
  // Llama 3 405B at 8K ran on 80 GB H100s with an fp32 gradient buffer; megasim's memory model
  // puts stage 1 at 90.4 GiB. The validation scenario says the run happened
  // (validation.allow_oom): simulated, the stages over the device marked, the tight note of a
  // model that overstates the run left out. A variant needing more (micro-batch 2) is refused,
  // and without the key so is the published plan, as any plan over the device is.
  const std::string s = megasim::test::shell_quote(
      MEGASIM_SOURCE_DIR "/scenarios/validation/llama3-405b-8k-8192.json");
  const auto m = memory_per_stage(s);
  CHECK(m[1]["over_device"] == true);
  CHECK(m[1]["tight"] == false);
  CHECK(m[15]["over_device"] == false);
  const auto text = run_megasim("simulate " + s);
  REQUIRE(text.exit_code == 0);
  CHECK(text.out.find("94.8  over") != std::string::npos);
  CHECK(text.out.find("over: stage 1 needs 90.4 of the device's 79.2 GiB without the "
                      "fragmentation margin; the published run's plan needs as much by this "
                      "count and ran") != std::string::npos);
  // The tight stages are said beside the over one, as the page says both (the tight line was
  // dropped until 2026-12-07).
  CHECK(text.out.find("tight: stage 13 needs 78.5 of the device's 79.2 GiB") != std::string::npos);
  const auto more = run_megasim("simulate " + s + " --set plan.micro_batch=2");
  CHECK(more.exit_code == 2);
  // The stage that needs the most (stage 0's 130.8 GiB until 2026-12-06).
  CHECK(more.err.find("pipeline stage 15 needs 148.5 GiB per GPU") != std::string::npos);
  CHECK(more.err.find("validation.allow_oom runs a plan over the device by at most the 11.2 GiB "
                      "the published one is, not more") != std::string::npos);
  // Not carried to a smaller device: the published run says nothing of it.
  const auto smaller = run_megasim("simulate " + s + " --set device=a100-sxm4-40gb");
  CHECK(smaller.exit_code == 2);
  CHECK(smaller.err.find("but the device has 39.4 GiB") != std::string::npos);
  CHECK(smaller.err.find("by at most the 11.2 GiB the published one is") != std::string::npos);
  // Nor switched on by --set where the file does not say it.
  const auto full = megasim::test::shell_quote(MEGASIM_SOURCE_DIR "/tests/data/full_scenario.json");
  const auto plain = run_megasim("simulate " + full);
  const auto set_on = run_megasim("simulate " + full +
                                  " --set validation.run=x --set "
                                  "validation.metric=mfu --set validation.allow_oom=true");
  CHECK(plain.exit_code == 2);
  CHECK(set_on.exit_code == 2);
  CHECK(set_on.err.find("pipeline stage 0 needs 102.4 GiB per GPU") != std::string::npos);
  // The refusal does not offer allow_oom; its last line only repeats the --set given.
  const auto said = set_on.err.find("\n(the scenario read with --set validation.run=x");
  CHECK(said != std::string::npos);
  CHECK(set_on.err.substr(0, said).find("validation.allow_oom") == std::string::npos);
  const auto refused = run_megasim("simulate " + s + " --set validation.allow_oom=false");
  CHECK(refused.exit_code == 2);
  CHECK(refused.err.find("pipeline stage 1 needs 90.4 GiB per GPU") != std::string::npos);
  CHECK(refused.out.empty());
}

TEST_CASE("cli: --network shared puts PP and DP traffic on one network, folded equals full") {
  const std::string s =
      std::string(MEGASIM_SOURCE_DIR) + "/scenarios/validation/megascale-175b-256-megascale-mfu.json";
  const auto folded = run_megasim("simulate --json --network shared " + s);
  const auto full = run_megasim("simulate --json --full --network shared " + s);
  const auto priced = run_megasim("simulate --json --network priced " + s);
  REQUIRE(folded.exit_code == 0);
  REQUIRE(full.exit_code == 0);
  REQUIRE(priced.exit_code == 0);
  const double t_folded = nlohmann::json::parse(folded.out)["step_time_s"].get<double>();
  CHECK(t_folded == nlohmann::json::parse(full.out)["step_time_s"].get<double>());
  CHECK(t_folded != nlohmann::json::parse(priced.out)["step_time_s"].get<double>());
  CHECK(run_megasim("simulate --network bogus " + s).exit_code == 2);
  // Each output says which network model it ran (a saved one could not be traced to it).
  CHECK(nlohmann::json::parse(folded.out)["simulation"]["network"] == "shared");
  CHECK(nlohmann::json::parse(priced.out)["simulation"]["network"] == "priced");
  const auto text = run_megasim("simulate --network priced " + s);
  CHECK(text.out.find("events) on the priced network") != std::string::npos);
}

TEST_CASE("cli: compare --json survives a value with an invalid UTF-8 byte, and a missing scenario exits 2") {
  // The label quotes the value; a byte like it used to make the JSON writer throw (exit 1).
  // (A model that is not there is refused, exit 2: tests/data/bad/cases.tsv.) The byte comes
  // in a device file's name (until 2026-12-04 in the scenario's name, which compare now
  // refuses to vary: it changes no figure).
  const auto dir =
      std::filesystem::temp_directory_path() / ("megasim_utf8_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string odd = (dir / "\xa8.json").string();
  std::filesystem::copy_file(
      std::string(MEGASIM_SOURCE_DIR) + "/calibrate/profiles/a100-sxm4-80gb.json", odd,
      std::filesystem::copy_options::overwrite_existing);
  const auto r =
      run_megasim("compare --json " + kDefaultScenario + " --vary 'device=" + odd + ",a100-sxm4-80gb'");
  std::filesystem::remove_all(dir);
  REQUIRE(r.exit_code == 0);
  const auto doc = nlohmann::json::parse(r.out);
  CHECK(doc["variants"].size() == 2);
  CHECK(doc["variants"][0]["label"].get<std::string>().find("device=") != std::string::npos);
  // A value its key never takes is refused outright (exit 2), the byte passed on as it came.
  const auto bad = run_megasim("compare --json " + kDefaultScenario + " --vary 'plan.recompute=\xa8,full'");
  CHECK(bad.exit_code == 2);
  CHECK(bad.out.empty());
  CHECK(bad.err.find("--vary plan.recompute: '\xa8': plan.recompute:") != std::string::npos);
  const auto missing = run_megasim("compare --json no-such-scenario.json --vary plan.tp=4,8");
  CHECK(missing.exit_code == 2);
  CHECK(missing.out.empty());
  const auto twice = run_megasim("compare " + kDefaultScenario + " --vary plan.tp=4,8 --vary plan.tp=2");
  CHECK(twice.exit_code == 2);
  CHECK(twice.err.find("--vary plan.tp: given twice") != std::string::npos);
}

TEST_CASE("cli: ZeRO-3's collectives are DP time, exposed or hidden, never compute") {
  // SC'21's ZeRO-3 row on 768 GPUs under DeepSpeed's ZeRO-3 of 2021 (a collective per tensor,
  // list-form copies per rank) and under FSDP (one flat parameter per block): the same kernels,
  // so the same compute but for the interference beside each one's hidden DP time; FSDP's
  // fewer, copy-free collectives take less DP time in all.
  const std::string s =
      std::string(MEGASIM_SOURCE_DIR) + "/scenarios/validation/sc21-t2-zero3-175b-768.json";
  const auto ds = run_megasim("simulate --json " + s);
  const auto fsdp = run_megasim("simulate --json --set optimizations.preset=fsdp " + s);
  REQUIRE(ds.exit_code == 0);
  REQUIRE(fsdp.exit_code == 0);
  const auto a = nlohmann::json::parse(ds.out);
  const auto b = nlohmann::json::parse(fsdp.out);
  const auto dp = [](const nlohmann::json& j) {
    return j["breakdown_s"]["dp_exposed"].get<double>() + j["dp_hidden_s"].get<double>();
  };
  std::ifstream profile_file(std::string(MEGASIM_SOURCE_DIR) +
                             "/calibrate/profiles/a100-sxm4-80gb.json");
  const double slowdown =
      nlohmann::json::parse(profile_file)["interference"]["compute_slowdown"].get<double>();
  const double hidden = std::max(a["dp_hidden_s"].get<double>(), b["dp_hidden_s"].get<double>());
  CHECK(std::abs(a["breakdown_s"]["compute"].get<double>() -
                 b["breakdown_s"]["compute"].get<double>()) <= (slowdown - 1.0) * hidden);
  CHECK(a["dp_hidden_s"].get<double>() > 0.0);
  CHECK(dp(b) < dp(a));
  // Hybrid shard over half the GPUs: gathers on rings of 384 ranks, fewer per-rank copies, so
  // less DP time; twice the shard in memory.
  const auto hybrid = run_megasim("simulate --json --set plan.shard_group=384 " + s);
  REQUIRE(hybrid.exit_code == 0);
  const auto h = nlohmann::json::parse(hybrid.out);
  CHECK(dp(h) < dp(a));
  CHECK(h["memory_per_stage"][0]["optimizer_states_gib"].get<double>() ==
        doctest::Approx(2.0 * a["memory_per_stage"][0]["optimizer_states_gib"].get<double>()));
  // The breakdown still sums to the step: the hidden part is beside it, not in it.
  double sum = 0;
  for (const auto& [k, v] : a["breakdown_s"].items()) sum += v.get<double>();
  CHECK(sum == doctest::Approx(a["step_time_s"].get<double>()).epsilon(1e-6));
}

TEST_CASE(
    "cli: calls the step's network does not carry are priced with their peers in both network "
    "modes") {
  // A hybrid shard's replica all-reduce and its in-pass gathers stay off the shared network;
  // the priced mode and the shared one must then give them the same contention.
  const std::string s =
      std::string(MEGASIM_SOURCE_DIR) +
      "/scenarios/validation/sc21-t2-zero3-175b-1536.json --set plan.shard_group=64";
  const auto priced = simulate_json("--network priced " + s)["breakdown_s"]["dp_exposed"];
  const auto shared = simulate_json("--network shared " + s)["breakdown_s"]["dp_exposed"];
  CHECK(shared.get<double>() == doctest::Approx(priced.get<double>()).epsilon(1e-6));
}
