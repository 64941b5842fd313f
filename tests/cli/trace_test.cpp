// `simulate --trace`: the Chrome trace written, and its compute slices against breakdown_s.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "run_command.h"

using megasim::test::kDefaultScenario;
using megasim::test::run_megasim;

namespace {
// `simulate ARGS --trace FILE`: the command's result and the trace it wrote, parsed (its file
// removed); each test had written this out again.
struct Traced {
  megasim::test::CommandResult result;
  nlohmann::json trace;
};

Traced simulate_traced(const std::string& args) {
  const std::filesystem::path file = megasim::test::temp_file("trace.json");
  Traced t{
      run_megasim("simulate " + args + " --trace " + megasim::test::shell_quote(file.string())),
      {}};
  if (t.result.exit_code == 0) t.trace = nlohmann::json::parse(megasim::test::read_all(file));
  std::filesystem::remove(file);
  return t;
}
}  // namespace

TEST_CASE("cli: simulate --trace writes a Chrome trace") {
  const auto t = simulate_traced(
      kDefaultScenario + " --set plan.dp=4 --set plan.global_batch=768 --set run.tokens=1e9");
  REQUIRE(t.result.exit_code == 0);
  CHECK(t.trace["traceEvents"].size() > 100);
}

TEST_CASE("cli: a send's and a collective's slice carry a rank's bytes, as inspect gives them") {
  // The slices carried no args until 2026-12-07: a viewer showed a send's time, not its size.
  const std::string args =
      kDefaultScenario + " --set plan.dp=4 --set plan.global_batch=768 --set run.tokens=1e9";
  const auto t = simulate_traced(args);
  REQUIRE(t.result.exit_code == 0);
  const auto inspected = run_megasim("inspect " + args + " --json");
  REQUIRE(inspected.exit_code == 0);
  const auto stage0 = nlohmann::json::parse(inspected.out)["stages"][0];
  double gathered = 0.0;
  int sends = 0;
  for (const auto& e : t.trace["traceEvents"]) {
    if (e["ph"] != "X") continue;
    if (e["cat"] == "pp") {
      ++sends;
      CHECK(e["args"]["bytes"].get<double>() == stage0["pp_send_bytes"].get<double>());
    }
    const std::string name = e["name"];
    if (e["cat"] == "dp" && e["pid"] == 0 && name.rfind("parameter all-gather", 0) == 0)
      gathered += e["args"]["bytes"].get<double>();
  }
  CHECK(sends > 0);
  // Stage 0's bf16 parameters, gathered once a step over its chunks' slices.
  CHECK(gathered == doctest::Approx(2.0 * stage0["parameters_per_rank"].get<double>()));
}

TEST_CASE("cli: the trace's compute slices hold what breakdown_s counts as compute, not DP waits") {
  // Megatron-Core's 70B row gathers each chunk's parameters bucket by bucket: a first forward
  // held for its last bucket is drawn on the "dp wait" line. SC'21's ZeRO-3 row waits for its
  // layers' gathers inside each pass: each wait is drawn where it falls, between the pass's
  // compute slices, on the same line (summed at the pass's end until 2026-12-07). Either way the
  // critical rank's compute slices sum to compute + tp_exposed + slowest_gpu + power_cap +
  // optimizer, and the DP line holds only calls that move something. The 70B row is run on the
  // measured H200 profile too, whose power-limited clock lengthens the passes (power_cap).
  const std::string measured = " --set device=h200-sxm-141gb-measured";
  // MegaScale's 256-GPU row waits for chunk 0's parameters before its first forward and for
  // its gradients before the optimizer, between passes.
  // With straggling hosts, a replica's wait for the slow one to reach a DP collective is
  // slowest_gpu, drawn on the compute line (the whole wait was on the DP line, past dp_exposed,
  // until 2026-12-06, a review's find).
  const std::string stragglers =
      " --set stragglers.host_fraction=0.02 --set stragglers.slowdown=1.5";
  for (const std::string& run : {std::string("mcore-h100-70b-768"), "mcore-h100-70b-768" + measured,
                                 std::string("sc21-t2-zero3-175b-768"),
                                 std::string("megascale-175b-256-megascale-iteration"),
                                 "megascale-175b-256-megascale-iteration" + stragglers}) {
    CAPTURE(run);
    const std::string name = run.substr(0, run.find(' '));
    const auto t = simulate_traced(std::string(MEGASIM_SOURCE_DIR) + "/scenarios/validation/" +
                                   name + ".json --json" + run.substr(name.size()));
    REQUIRE(t.result.exit_code == 0);
    const auto out = nlohmann::json::parse(t.result.out);
    const auto& doc = t.trace;
    const int rank = 0;  // stage 0, the critical one, is traced as rank 0
    REQUIRE(out["critical_stage"] == 0);
    double compute = 0.0, wait = 0.0, inside = 0.0;
    for (const auto& e : doc["traceEvents"]) {
      if (e["ph"] != "X" || e["pid"] != rank) continue;
      if (e["cat"] == "compute") compute += e["dur"].get<double>() * 1e-6;
      if (e["cat"] == "dp wait") {
        wait += e["dur"].get<double>() * 1e-6;
        // Named by what it waits for and the bare pass (the hold's name quoted a compute slice's
        // "(DP wait …)", and every in-pass wait was called ZeRO-3's, FP8's amax ones too).
        const auto label = e["name"].get<std::string>();
        const bool in_pass = label.rfind("in pass: ", 0) == 0 ||
                             label.rfind("DP collectives inside the pass, summed (", 0) == 0;
        if (in_pass) inside += e["dur"].get<double>() * 1e-6;
        CHECK((in_pass || label.rfind("parameter all-gather (", 0) == 0 ||
               label.rfind("gradient reduction (", 0) == 0 ||
               label.rfind("gradient reduce-scatters (", 0) == 0));
        CHECK(label.find("DP wait") == std::string::npos);
      }
      if (e["cat"] == "dp") {
        CHECK(e["dur"].get<double>() > 0.0);
        const auto label = e["name"].get<std::string>();
        CHECK((label.rfind("parameter all-gather c", 0) == 0 ||
               label.rfind("gradient reduction c", 0) == 0));
      }
    }
    const auto& b = out["breakdown_s"];
    CHECK(compute == doctest::Approx(b["compute"].get<double>() + b["tp_exposed"].get<double>() +
                                     b["slowest_gpu"].get<double>() + b["power_cap"].get<double>() +
                                     b["optimizer"].get<double>())
                         .epsilon(1e-6));
    CHECK((b["power_cap"].get<double>() > 0.0) == (run.find(measured) != std::string::npos));
    CHECK(wait > 0.0);
    // Every wait dp_exposed counts is drawn (those between passes and at the step's end were
    // not until 2026-12-05: 155 ms of the default scenario's stage 0 showed as gaps).
    CHECK(wait == doctest::Approx(b["dp_exposed"].get<double>()).epsilon(1e-6));
    // ZeRO-3's exposed DP time is all waiting inside its passes; MegaScale's all between them.
    if (name.rfind("sc21", 0) == 0) CHECK(inside == doctest::Approx(wait).epsilon(1e-9));
    if (name.rfind("megascale", 0) == 0) CHECK(inside == 0.0);
  }
}

TEST_CASE("cli: a ZeRO-3 pass is drawn as it runs, its layers' collectives on their own line") {
  // SC'21's ZeRO-3 175B row, at two micro-batches a step: its forward and backward each
  // interleave the layers' kernels with their parameter all-gathers (and the backward's
  // reduce-scatters). Until 2026-12-07 each pass was one compute slice and one summed wait, and
  // no collective of the 2,208 a micro-batch runs was drawn. The first micro-batch is drawn so;
  // the second as before, its passes alike.
  const auto t = simulate_traced(std::string(MEGASIM_SOURCE_DIR) +
                                 "/scenarios/validation/sc21-t2-zero3-175b-768.json --set "
                                 "plan.global_batch=3072");
  REQUIRE(t.result.exit_code == 0);
  struct Slice {
    double ts, end;
    std::string cat, name;
    double bytes;
  };
  std::vector<Slice> line, collectives;  // rank 0's compute and waits; its in-pass collectives
  for (const auto& e : t.trace["traceEvents"]) {
    if (e["ph"] != "X" || e["pid"] != 0) continue;
    const double ts = e["ts"].get<double>();
    const double bytes = e.contains("args") ? e["args"]["bytes"].get<double>() : 0.0;
    Slice s{ts, ts + e["dur"].get<double>(), e["cat"], e["name"], bytes};
    if (s.cat == "compute" || s.cat == "dp wait") line.push_back(s);
    if (s.cat == "dp in pass") collectives.push_back(s);
  }
  std::sort(line.begin(), line.end(), [](const Slice& a, const Slice& b) { return a.ts < b.ts; });
  // The passes' compute and waits tile the step without overlapping (to the µs's rounding).
  for (std::size_t i = 1; i < line.size(); ++i) CHECK(line[i].ts >= line[i - 1].end - 1e-3);
  int waits = 0, summed = 0;
  for (const Slice& s : line) {
    if (s.cat != "dp wait") continue;
    ++waits;
    if (s.name.rfind("DP collectives inside the pass, summed (", 0) == 0) {
      ++summed;
      CHECK(s.name.find("mb1 c0)") != std::string::npos);
    } else {
      CHECK(s.name.rfind("in pass: ", 0) == 0);
      CHECK(s.name.find("mb0 c0)") != std::string::npos);
    }
  }
  CHECK(waits > 2 * 96);  // at least a wait a layer in each pass, not one a pass
  CHECK(summed == 2);     // the second micro-batch's forward and backward
  // Every parameter tensor of the 96 layers above DeepSpeed's persistence threshold (the
  // weights: 12·h² a layer, h = 12,288) is gathered in the forward, in fp16; the gradients are
  // reduce-scattered in the backward only.
  const double h = 12288.0;
  double forward_gathered = 0.0;
  int scatters = 0;
  for (const Slice& s : collectives) {
    CHECK(s.end > s.ts);
    const bool forward = s.name.find("(F mb0 c0)") != std::string::npos;
    CHECK((forward || s.name.find("(B mb0 c0)") != std::string::npos));
    if (s.name.rfind("parameter all-gather, layer ", 0) == 0 && forward)
      forward_gathered += s.bytes;
    if (s.name.rfind("gradient reduce-scatter, layer ", 0) == 0) {
      CHECK_FALSE(forward);
      ++scatters;
    }
  }
  CHECK(forward_gathered == doctest::Approx(96.0 * 12.0 * h * h * 2.0).epsilon(1e-6));
  CHECK(scatters >= 96);
}

TEST_CASE("cli: an FP8 plan's amax all-reduces are drawn as DP collectives, not ZeRO-3's") {
  // Priced on the DP group inside each pass, they were labelled "ZeRO-3/FSDP waits" on a plan
  // with no ZeRO-3.
  const auto t =
      simulate_traced(std::string(MEGASIM_SOURCE_DIR) + "/scenarios/mcore-h100-177b-fp8.json");
  REQUIRE(t.result.exit_code == 0);
  const auto& doc = t.trace;
  int inside = 0;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] != "X") continue;
    const auto name = e["name"].get<std::string>();
    CHECK(name.find("ZeRO") == std::string::npos);
    if (e["cat"] == "dp in pass" && name.rfind("DP all-reduce (", 0) == 0) ++inside;
  }
  CHECK(inside > 0);
}

TEST_CASE("cli: with one replica the trace names the tied embedding's all-reduce, not DP's") {
  // Korthikanti's 22B on PP 8, DP 1: the first and last stages all-reduce the tied embedding's
  // gradient; it was drawn as a "gradient reduction" on a plan with no data parallelism.
  const auto t = simulate_traced(std::string(MEGASIM_SOURCE_DIR) +
                                 "/scenarios/validation/korthikanti-22b-selective.json --set "
                                 "plan.tp=1 plan.pp=8 plan.dp=1 plan.global_batch=8 "
                                 "plan.micro_batch=1 plan.sequence_parallel=false");
  REQUIRE(t.result.exit_code == 0);
  const auto& doc = t.trace;
  int tied = 0;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] != "X" || e["cat"] != "dp") continue;
    const auto name = e["name"].get<std::string>();
    CHECK(name.rfind("tied embedding gradient all-reduce c", 0) == 0);
    ++tied;
  }
  CHECK(tied == 2);  // the first stage's and the last's
}

TEST_CASE("cli: asynchronous loading exposed past the step's end is drawn, so the trace spans it") {
  // MegaScale's preset at 50 ms a sample: 9.5 s of loading that the step's end does not hide.
  // The step counted it (breakdown other), but the trace ended 9.5 s early and the HTML drew
  // the gap as a bubble until 2026-12-05.
  const auto t =
      simulate_traced("--json " + std::string(MEGASIM_SOURCE_DIR) +
                      "/scenarios/validation/megascale-175b-256-megascale-iteration.json "
                      "--set data_loading.host_ms_per_sample=50");
  REQUIRE(t.result.exit_code == 0);
  const auto& doc = t.trace;
  const auto out = nlohmann::json::parse(t.result.out);
  const double step_us = out["step_time_s"].get<double>() * 1e6;
  double last_end = 0.0, loading = 0.0;
  int slices = 0;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] != "X") continue;
    last_end = std::max(last_end, e["ts"].get<double>() + e["dur"].get<double>());
    if (e["name"] == "data loading (asynchronous, exposed)") {
      ++slices;
      loading = e["dur"].get<double>();
    }
  }
  CHECK(slices > 0);
  CHECK(last_end == doctest::Approx(step_us).epsilon(1e-6));
  CHECK(loading == doctest::Approx(out["breakdown_s"]["other"].get<double>() * 1e6).epsilon(1e-6));
}
