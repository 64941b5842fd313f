// `megasim calibrate` as a user runs it: import published logs into a calibration that loads
// as a device profile of kind "imported", refit it, and the measuring tool's absence.
#include <doctest/doctest.h>

#include <cmath>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli/run_command.h"
#include "io/device_profile_loader.h"
#include "io/gemm_shapes.h"

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
  const io::Json summary = io::parse_json_text(r.out, "stdout");
  CHECK(summary["runs"].size() == 3);
  CHECK(summary["fits"].size() == 3);

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

TEST_CASE("collective --device on an imported calibration answers with its fit") {
  // The H100 2-node all-reduce log imported, then swept on 16 GPUs packed on an H100 cluster
  // (2 nodes): the fit covers the call (16 ranks, 2 nodes), so it gives algbw and busbw, and
  // its time at each size is alpha + size x 2(n-1)/n / busbw. On 8 GPUs (1 node) it does not.
  const fs::path out = import_h100_all_reduce("imported-for-sweep.json");
  const auto fits = io::load_device_profile(out).profile.collective_fits;
  REQUIRE(fits.size() == 1);
  const auto sweep = [&](int gpus) {
    const auto r = run_megasim("collective --cluster llama3-h100-24576 --op all_reduce --gpus " +
                               std::to_string(gpus) + " --device " + shell_quote(out.string()) +
                               " --json");
    REQUIRE(r.exit_code == 0);
    return io::parse_json_text(r.out, "stdout");
  };
  const io::Json two_nodes = sweep(16);
  REQUIRE(two_nodes.contains("fit"));
  CHECK(two_nodes["fit"]["nodes"] == 2);
  // Within the sizes the log measured (8 MiB-16 GiB) only: below, the fit would extrapolate.
  CHECK(two_nodes["fit"]["min_size_bytes"] == 8388608.0);
  int inside = 0;
  for (const auto& row : two_nodes["rows"]) {
    const double size = row["size_bytes"].get<double>();
    if (size < 8388608.0 || size > 17179869184.0) {
      CHECK_FALSE(row.contains("fit_time_us"));
      continue;
    }
    ++inside;
    const double expected_us =
        fits[0].alpha.to_us() + size * 2.0 * 15.0 / 16.0 / fits[0].bus_bandwidth.value() * 1e6;
    CHECK(std::fabs(row["fit_time_us"].get<double>() - expected_us) <= 0.002);  // times are whole ns
    CHECK(row["algbw_gbps"].get<double>() ==
          doctest::Approx(size / (row["fit_time_us"].get<double>() * 1e-6) * 1e-9).epsilon(1e-9));
  }
  CHECK(inside > 5);
  const io::Json one_node = sweep(8);
  CHECK_FALSE(one_node.contains("fit"));
  CHECK_FALSE(one_node["rows"][0].contains("fit_time_us"));
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
  CHECK(summary["runs"][0]["no_fit"].get<std::string>().find("one message size") != std::string::npos);
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
