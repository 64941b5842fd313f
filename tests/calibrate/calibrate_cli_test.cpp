// `megasim calibrate` as a user runs it: import published logs into a calibration that loads
// as a device profile of kind "imported", refit it, and the measuring tool's absence.
#include <doctest/doctest.h>

#include <cmath>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "cli/run_command.h"
#include "io/device_profile_loader.h"
#include "io/gemm_shapes.h"
#include "scaled_log.h"

using namespace megasim;
using test::run_megasim;
using test::shell_quote;
namespace fs = std::filesystem;

namespace {
const std::string kLogs = std::string(MEGASIM_SOURCE_DIR) + "/tests/data/nccl-tests/";

fs::path temp_file(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("megasim_calib_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir / name;
}

// The H100 2-node all-reduce log imported on its base profile, into a temporary file `name`.
fs::path import_h100_all_reduce(const std::string& name) {
  const fs::path out = temp_file(name);
  REQUIRE(run_megasim("calibrate import-nccl-tests " +
                      shell_quote(kLogs + "h100-2node-all_reduce.log") +
                      " --device h100-sxm5-80gb -o " + shell_quote(out.string()))
              .exit_code == 0);
  return out;
}
}  // namespace

TEST_CASE("calibrate without an output file is a usage error") {
  const auto r = run_megasim("calibrate");
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("--output") != std::string::npos);
  CHECK(r.out.empty());
}

TEST_CASE("calibrate on a machine without a usable GPU or tool exits 2 and writes nothing") {
  // The test machines have no GPU: either the tool was not built (the message says how to
  // get it and how to import logs instead) or it runs and finds no usable device.
  const fs::path out = temp_file("measured.json");
  const auto r = run_megasim("calibrate --quick -o " + shell_quote(out.string()));
  CHECK(r.exit_code == 2);
  const bool explained = r.err.find("import-nccl-tests") != std::string::npos ||
                         r.err.find("no usable GPU") != std::string::npos;
  CHECK(explained);
  CHECK_FALSE(fs::exists(out));
}

TEST_CASE("calibrate help lists measuring options and the subcommands") {
  const auto r = run_megasim("calibrate --help");
  CHECK(r.exit_code == 0);
  for (const char* word : {"--quick", "--resume", "--timeout", "--skip", "import-nccl-tests",
                           "fit", "NVML", "NCCL", "cuBLASLt"}) {
    CAPTURE(word);
    CHECK(r.out.find(word) != std::string::npos);
  }
}

TEST_CASE("import-nccl-tests writes an imported calibration usable as a device") {
  const fs::path out = temp_file("imported.json");
  const auto r = run_megasim("calibrate import-nccl-tests " +
                             shell_quote(kLogs + "h100-2node-all_reduce.log") + " " +
                             shell_quote(kLogs + "gb10-2node-all_gather.log") +
                             " --device h100-sxm5-80gb --json -o " + shell_quote(out.string()));
  REQUIRE(r.exit_code == 0);
  // The GB10 log is taken onto the H100 profile, and said (silent until 2026-12-05).
  CHECK(r.err.find("gb10-2node-all_gather.log: its rank lines name 'NVIDIA GB10', not an h100 "
                   "part") != std::string::npos);
  CHECK(r.err.find("h100-2node-all_reduce.log") == std::string::npos);
  const io::Json summary = io::parse_json_text(r.out, "stdout");
  CHECK(summary["runs"].size() == 3);
  CHECK(summary["fits"].size() == 3);
  // The GB10 log's second run re-measures three sizes of its first: the table answers them
  // with the first's rows, and says so.
  CHECK_FALSE(summary["runs"][1].contains("answered_by"));
  CHECK(summary["runs"][2]["answered_by"] == summary["runs"][1]["log"].get<std::string>() + ":5");

  const auto loaded = io::load_device_profile(out);
  const auto& p = loaded.profile;
  CHECK(p.kind == hw::ProfileKind::kImported);
  CHECK(p.name == "h100-sxm5-80gb-nccl-tests");
  REQUIRE(p.measurement.has_value());
  CHECK(p.measurement->device_name.find("H100") != std::string::npos);
  CHECK(p.collective_table.size() == 24 + 12);
  // The H100 run's fit: large messages reach 466 GB/s busbw; the relative fit over 8 MiB–16 GiB
  // lands below that (latency-bound small sizes pull it), within 20 %.
  bool found = false;
  for (const auto& f : p.collective_fits) {
    if (f.op != hw::CollectiveOp::kAllReduce) continue;
    found = true;
    CHECK(f.ranks == 16);
    CHECK(f.nodes == 2);
    CHECK(f.bus_bandwidth.value() / 1e9 > 380.0);
    CHECK(f.bus_bandwidth.value() / 1e9 < 480.0);
    CHECK(f.rms_relative_residual < 0.10);
  }
  CHECK(found);

  // fit refits the same tables and writes a loadable file.
  const fs::path refit = temp_file("refit.json");
  const auto f = run_megasim("calibrate fit " + shell_quote(out.string()) + " -o " +
                             shell_quote(refit.string()));
  CHECK(f.exit_code == 0);
  CHECK(f.out.find("all_reduce 16 ranks / 2 nodes") != std::string::npos);
  CHECK(io::load_device_profile(refit).profile.collective_fits.size() == 3);
}

// The H100 2-node log imported with NCCL's model fitted on the DGX H100 SuperPOD (8 x NDR400
// per node, as the Azure ND H100 v5 nodes the log ran on), into a temporary file `name`.
fs::path import_h100_fitted(const std::string& name, std::string* report = nullptr) {
  const fs::path out = temp_file(name);
  const auto r = run_megasim("calibrate import-nccl-tests " +
                             shell_quote(kLogs + "h100-2node-all_reduce.log") +
                             " --device h100-sxm5-80gb --cluster dgx-h100-superpod-6144 -o " +
                             shell_quote(out.string()));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  if (report) *report = r.out;
  return out;
}

io::Json sweep_h100(const std::string& device, int gpus, const std::string& bytes = "8:16G") {
  const auto r = run_megasim("collective --cluster dgx-h100-superpod-6144 --op all_reduce --gpus " +
                             std::to_string(gpus) + " --bytes " + bytes + " --device " +
                             shell_quote(device) + " --json");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return io::parse_json_text(r.out, "stdout");
}

TEST_CASE("import says which regimes the H100 log pins and which it leaves to the profile") {
  // 8 MiB-16 GiB across 2 nodes: NVLSTree's 66.8 us latency is at most 40 % of the modelled
  // time (8 MiB: 66.8 of 169.0 us), under the 80 % that makes a row latency-bound; the
  // bandwidth term with the pipeline's fill is 80 % or more from 64 MiB (408.9 of 475.7 us),
  // so the log pins the NIC-side bandwidth with 9 rows, 64 MiB-16 GiB, and nothing else.
  std::string report;
  import_h100_fitted("imported-regimes.json", &report);
  INFO(report);
  CHECK(report.find("h100-2node-all_reduce.log:1: NCCL's model on dgx-h100-superpod-6144 fitted "
                    "over 12 rows") != std::string::npos);
  CHECK(report.find("  latency: not pinned (0 rows where it is 80 % of the modelled time or "
                    "more, 2 needed), left to the profile\n") != std::string::npos);
  CHECK(report.find("  NIC bandwidth of nvls_tree: pinned by 9 rows (64 MiB-16 GiB), scale ") !=
        std::string::npos);
  CHECK(report.find("  NVLink bandwidth: not measured (a 2-node run), left to the profile\n") !=
        std::string::npos);
  const auto plain = run_megasim("calibrate import-nccl-tests " +
                                 shell_quote(kLogs + "h100-2node-all_reduce.log") +
                                 " --device h100-sxm5-80gb -o " +
                                 shell_quote(temp_file("imported-plain.json").string()));
  CHECK(plain.out.find("no --cluster: NCCL's model not fitted") != std::string::npos);
}

TEST_CASE("collective --device answers the imported H100 log's sizes with the log's times") {
  const fs::path out = import_h100_fitted("imported-round-trip.json");
  const auto profile = io::load_device_profile(out).profile;
  const io::Json sweep = sweep_h100(out.string(), 16);
  // The log holds 8 MiB to 16 GiB: the fitted model answers below it, the table with the log's
  // own times from it (the test allowed those 5 %, and was named for every size, where a table
  // lookup gives the time back to the printed digit; a review, 2026-12-05).
  // The log's bandwidth-bound rows ran NVLSTree, so its fit moves NVLSTree alone: below the
  // log the NVLSTree rows are the fitted model's, the trees' NCCL's model as the profile has it
  // (every row of the link class read "fitted model" until 2026-12-06).
  int measured = 0, fitted = 0, model = 0;
  for (const auto& row : sweep["rows"]) {
    const double size = row["size_bytes"].get<double>();
    const double us = size / row["algbw_gbps"].get<double>() * 1e-3;
    if (size < 8388608.0) {
      const bool nvls_tree = row["algorithm"] == "nvls_tree";
      CHECK(row["answer"] == (nvls_tree ? "fitted model" : "NCCL model"));
      ++(nvls_tree ? fitted : model);
      continue;
    }
    CHECK(row["answer"] == "measured table");
    for (const auto& m : profile.collective_table) {
      if (m.size.value() != size || m.in_place) continue;
      ++measured;
      INFO(size);
      CHECK(std::fabs(us / m.time.to_us() - 1.0) < 1e-6);
    }
  }
  CHECK(measured == 12);
  CHECK(fitted > 0);
  CHECK(model > 0);
  // The text says the same per row, and a datasheet sweep says the model answered throughout.
  const auto text = run_megasim("collective --cluster dgx-h100-superpod-6144 --gpus 16 --bytes "
                                "4M:8M --device " + shell_quote(out.string()));
  CHECK(text.out.find("  fitted model\n") != std::string::npos);
  CHECK(text.out.find("  measured table\n") != std::string::npos);
  const auto plain = run_megasim("collective --cluster dgx-h100-superpod-6144 --gpus 16 --bytes 8M");
  CHECK(plain.out.find("# answer: the time column on every row, simulated with the profile's "
                       "NCCL constants") != std::string::npos);
}

TEST_CASE("collective --device reproduces the 8 B-16 GiB H100 log at every size it holds") {
  // NVIDIA/nccl-tests#309's bare-metal log: 32 sizes, tree/LL at 8 B to NVLSTree at 16 GiB,
  // with an 8-byte outlier (68.5 us beside 25 us at 16 B). Every size the run measured is
  // answered by its own row.
  const fs::path out = temp_file("imported-8b-16g.json");
  const auto r = run_megasim(
      "calibrate import-nccl-tests " + shell_quote(kLogs + "h100-2node-ib-8B-16G-all_reduce.log") +
      " --device h100-sxm5-80gb --cluster dgx-h100-superpod-6144 -o " + shell_quote(out.string()));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto profile = io::load_device_profile(out).profile;
  const io::Json sweep = sweep_h100(out.string(), 16);
  int compared = 0;
  for (const auto& row : sweep["rows"]) {
    const double size = row["size_bytes"].get<double>();
    const double us = size / row["algbw_gbps"].get<double>() * 1e-3;
    for (const auto& m : profile.collective_table) {
      if (m.size.value() != size || m.in_place) continue;
      ++compared;
      INFO(size);
      CHECK(row["answer"] == "measured table");
      // algbw is printed to 2 decimals: the time read back from it is within their rounding.
      CHECK(std::fabs(us / m.time.to_us() - 1.0) < 0.05);
    }
  }
  CHECK(compared == 32);
}

TEST_CASE("a fitted H100 calibration prices 4 nodes in the direction its fit says") {
  // A log 25 % slower than the shipped one (the datasheet profile reproduces the shipped log
  // itself within 4 %, so its own fit is neutral: k = 1.003) fits NVLSTree's NIC-side
  // bandwidth at k near 0.8 (its bandwidth-bound rows all ran NVLSTree). 4 nodes (32 GPUs)
  // were never measured, so NCCL's model answers with that scale where NCCL runs NVLSTree
  // (1-2 GiB: the time x 1/k) and leaves the ring it picks from 4 GiB as the profile has it.
  const fs::path log = test::scaled_h100_log(temp_file("h100-slowed.log"), 1.25);
  const fs::path out = temp_file("imported-transfer.json");
  const auto r = run_megasim("calibrate import-nccl-tests " + shell_quote(log.string()) +
                             " --device h100-sxm5-80gb --cluster dgx-h100-superpod-6144 -o " +
                             shell_quote(out.string()));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto profile = io::load_device_profile(out).profile;
  REQUIRE(profile.collective_scales.size() == 1);
  CHECK(profile.collective_scales[0].bandwidth_algorithm == "nvls_tree");
  const double k = profile.collective_scales[0].bandwidth_scale;
  CHECK(k == doctest::Approx(0.8).epsilon(0.03).scale(0));
  const io::Json fitted = sweep_h100(out.string(), 32, "1G:16G");
  const io::Json datasheet = sweep_h100("h100-sxm5-80gb", 32, "1G:16G");
  REQUIRE(fitted["rows"].size() == datasheet["rows"].size());
  int scaled = 0, kept = 0;
  for (std::size_t i = 0; i < fitted["rows"].size(); ++i) {
    const auto& f = fitted["rows"][i];
    // The fit's scale moves NVLSTree's rows; the ring's are the profile's as they were.
    CHECK(f["answer"] == (f["algorithm"] == "nvls_tree" ? "fitted model" : "NCCL model"));
    CHECK(datasheet["rows"][i]["answer"] == "NCCL model");
    CHECK(f["algorithm"] == datasheet["rows"][i]["algorithm"]);  // NCCL's pick does not move
    const double ratio = f["time_us"].get<double>() / datasheet["rows"][i]["time_us"].get<double>();
    INFO(f["size_bytes"].get<double>());
    if (f["algorithm"] == "nvls_tree") {
      ++scaled;
      CHECK(ratio == doctest::Approx(1.0 / k).epsilon(0.05));
    } else {
      ++kept;
      CHECK(ratio == doctest::Approx(1.0).epsilon(1e-6));
    }
  }
  CHECK(scaled == 2);
  CHECK(kept == 3);
  // One node (8 GPUs): the 2-node log says nothing of NVLink, so the profile answers as it is.
  const io::Json one_node = sweep_h100(out.string(), 8, "1G:1G");
  const io::Json one_node_datasheet = sweep_h100("h100-sxm5-80gb", 8, "1G:1G");
  CHECK(one_node["rows"][0]["answer"] == "NCCL model");
  CHECK(one_node["rows"][0]["time_us"] == one_node_datasheet["rows"][0]["time_us"]);
}

TEST_CASE("a forced algorithm megasim does not model is said and left unfitted") {
  // nccl-tests run with NCCL_ALGO=CollnetDirect (labelled so at import): no scales, and why.
  const fs::path out = temp_file("imported-collnet.json");
  const auto r = run_megasim("calibrate import-nccl-tests " +
                             shell_quote(kLogs + "h100-2node-all_reduce.log") +
                             " --algorithm CollnetDirect --device h100-sxm5-80gb --cluster "
                             "dgx-h100-superpod-6144 -o " +
                             shell_quote(out.string()));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("forced CollnetDirect / - is not an algorithm and protocol megasim models") !=
        std::string::npos);
  CHECK(io::load_device_profile(out).profile.collective_scales.empty());
}

TEST_CASE("an imported calibration as a scenario's device takes its base profile's power preset") {
  // The imported profile is named h100-sxm5-80gb-nccl-tests; no power preset has that name.
  // It records its base (base_profile), whose preset the run's power figures use.
  const fs::path out = import_h100_all_reduce("imported-as-device.json");
  CHECK(io::load_device_profile(out).profile.base == "h100-sxm5-80gb");
  io::Json scenario =
      io::parse_json_file(std::string(MEGASIM_SOURCE_DIR) + "/scenarios/megascale-175b-12288.json");
  scenario.erase("$schema");
  scenario["device"] = out.string();
  scenario["cluster"] = "llama3-h100-24576";
  const fs::path file = temp_file("scenario-on-imported.json");
  std::ofstream(file) << scenario.dump(2);
  const auto r = run_megasim("simulate " + shell_quote(file.string()));
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("power (preset h100-sxm5-80gb") != std::string::npos);
}

TEST_CASE("import-nccl-tests says when a run gets no fit, and why") {
  // The H100 log cut to its header, its first size (8 MiB, out-of-place and in-place rows) and
  // its footer: one size cannot pin alpha and beta apart.
  std::ifstream in(kLogs + "h100-2node-all_reduce.log");
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  REQUIRE(lines.size() > 13);
  const fs::path log = temp_file("one-size.log");
  {
    std::ofstream cut(log);
    for (std::size_t i = 0; i < 10; ++i) cut << lines[i] << "\n";
    for (std::size_t i = lines.size() - 3; i < lines.size(); ++i) cut << lines[i] << "\n";
  }
  const fs::path out = temp_file("one-size.json");
  const auto r = run_megasim("calibrate import-nccl-tests " + shell_quote(log.string()) +
                             " --device h100-sxm5-80gb --json -o " + shell_quote(out.string()));
  REQUIRE(r.exit_code == 0);
  const io::Json summary = io::parse_json_text(r.out, "stdout");
  REQUIRE(summary["runs"].size() == 1);
  CHECK(summary["runs"][0]["fitted"] == false);
  CHECK(summary["runs"][0]["no_fit"].get<std::string>().find(
            "1 message size, and alpha and beta need two") != std::string::npos);
  CHECK(summary["fits"].empty());
}

TEST_CASE("import-nccl-tests with a bad log or device exits 2") {
  const fs::path out = temp_file("bad.json");
  const fs::path bad = temp_file("not-a-log.txt");
  std::ofstream(bad) << "no table here\n";
  auto r = run_megasim("calibrate import-nccl-tests " + shell_quote(bad.string()) +
                       " --device a100-sxm4-80gb -o " + shell_quote(out.string()));
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("no nccl-tests result rows") != std::string::npos);
  CHECK_FALSE(fs::exists(out));
  r = run_megasim("calibrate import-nccl-tests " + shell_quote(kLogs + "h100-2node-all_reduce.log") +
                  " --device no-such-gpu -o " + shell_quote(out.string()));
  CHECK(r.exit_code == 2);
}

TEST_CASE("calibrate shapes lists every distinct GEMM of a scenario, the tool's input") {
  const fs::path out = temp_file("shapes.json");
  const auto r = run_megasim("calibrate shapes " + std::string(MEGASIM_SOURCE_DIR) +
                             "/scenarios/megascale-175b-12288.json -o " + shell_quote(out.string()));
  REQUIRE(r.exit_code == 0);
  const auto shapes = megasim::io::read_gemm_shapes(out);
  // MegaScale 175B on TP 8, a micro-batch of 2048 tokens: QKV 2048 x 3·12288/8 x 12288, FC1
  // 2048 x 4·12288/8 x 12288 and the logits 2048 x 64000/8 x 12288, each once ...
  const auto has = [&](std::int64_t m, std::int64_t n, std::int64_t k) {
    int count = 0;
    for (const auto& g : shapes) count += g.m == m && g.n == n && g.k == k && !g.transpose_b;
    return count == 1;
  };
  CHECK(has(2048, 4608, 12288));
  CHECK(has(2048, 6144, 12288));
  CHECK(has(2048, 8000, 12288));
  // ... and no shape twice.
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    for (std::size_t j = i + 1; j < shapes.size(); ++j) {
      CHECK_FALSE((shapes[i].m == shapes[j].m && shapes[i].n == shapes[j].n &&
                   shapes[i].k == shapes[j].k && shapes[i].transpose_a == shapes[j].transpose_a &&
                   shapes[i].transpose_b == shapes[j].transpose_b));
    }
  }
  fs::remove(out);
}

TEST_CASE("calibrate shapes asks for FP8's forward GEMMs with the fast accumulation") {
  // Transformer Engine's forward FP8 GEMMs take cuBLASLt's fast accumulation, its dgrad and
  // wgrad the split one: the tool is to time each as it runs.
  const fs::path out = temp_file("fp8-shapes.json");
  const auto r = run_megasim("calibrate shapes " + std::string(MEGASIM_SOURCE_DIR) +
                             "/scenarios/mcore-h100-177b-fp8.json -o " + shell_quote(out.string()));
  REQUIRE(r.exit_code == 0);
  int fast = 0, split = 0;
  for (const auto& g : megasim::io::read_gemm_shapes(out)) {
    if (g.dtype != megasim::hw::DType::kFp8) continue;
    (g.fast_accum ? fast : split) += 1;
  }
  CHECK(fast > 0);
  CHECK(split > 0);
  CHECK(r.out.find("   fp8  A-         fast\n") != std::string::npos);
  CHECK(r.out.find("   fp8  A-         split\n") != std::string::npos);
  fs::remove(out);
}

TEST_CASE("calibrate shapes adds the pieces Transformer Engine cuts an overlapped GEMM into") {
  // Megatron-Core's 70B row on TP 8 (megatron-core preset: TE's ring exchange in tp pieces,
  // its pipeline in 4): QKV's 4096 x 3·8192/8 x 8192 also as 512 and 1024 rows. MegaScale's
  // preset runs its pairs whole: no 256-row piece of its QKV.
  const fs::path out = temp_file("pieces.json");
  auto r =
      run_megasim("calibrate shapes " + std::string(MEGASIM_SOURCE_DIR) +
                  "/scenarios/validation/mcore-h100-70b-768.json -o " + shell_quote(out.string()));
  REQUIRE(r.exit_code == 0);
  const auto has = [](const std::vector<megasim::hw::GemmShape>& shapes, std::int64_t m,
                      std::int64_t n) {
    for (const auto& g : shapes) {
      if (g.m == m && g.n == n && g.k == 8192 && !g.transpose_b) return true;
    }
    return false;
  };
  auto shapes = megasim::io::read_gemm_shapes(out);
  CHECK(has(shapes, 4096, 3072));
  CHECK(has(shapes, 512, 3072));
  CHECK(has(shapes, 1024, 3072));
  r = run_megasim("calibrate shapes " + std::string(MEGASIM_SOURCE_DIR) +
                  "/scenarios/megascale-175b-12288.json -o " + shell_quote(out.string()));
  REQUIRE(r.exit_code == 0);
  shapes = megasim::io::read_gemm_shapes(out);
  for (const auto& g : shapes) CHECK(g.m != 256);
  fs::remove(out);
}

TEST_CASE("import-nccl-tests takes a log whose device names are not UTF-8") {
  // Mutation fuzzing (seed 10) found a byte 0xd8 in a log's "Using devices" line ending the
  // import with an internal error: the name went into the profile's JSON, which could not be
  // written. The bad byte is now replaced (U+FFFD) where the name is written.
  std::ifstream in(kLogs + "rtx6000d-2node-alltoall.log", std::ios::binary);
  std::string log((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto at = log.find("NVIDIA RTX 6000D");
  REQUIRE(at != std::string::npos);
  log[at + 9] = static_cast<char>(0xd8);  // the X of "RTX"
  const fs::path bad = temp_file("latin1.log");
  std::ofstream(bad, std::ios::binary) << log;
  const fs::path out = temp_file("latin1.json");
  const auto r = run_megasim("calibrate import-nccl-tests " + shell_quote(bad.string()) +
                             " --device a100-sxm4-80gb -o " + shell_quote(out.string()));
  CHECK(r.exit_code == 0);
  INFO(r.err);
  const auto loaded = io::load_device_profile(out);
  REQUIRE(loaded.profile.measurement.has_value());
  CHECK(loaded.profile.measurement->device_name.find("\xef\xbf\xbd") != std::string::npos);
}
