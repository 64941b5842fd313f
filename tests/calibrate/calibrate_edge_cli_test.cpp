// `megasim calibrate` on edge cases of its inputs: a one-rank nccl-tests log, a profile whose
// only measurements are board power, one run id over two collectives.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>

#include "cli/run_command.h"
#include "hw/device_profile.h"
#include "io/device_profile_loader.h"
#include "io/json_reader.h"
#include "scaled_log.h"

using namespace megasim;
using test::run_megasim;
using test::shell_quote;
namespace fs = std::filesystem;

namespace {
fs::path temp_file(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("megasim_calib_edge_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir / name;
}

// The H100 datasheet profile as a measured one (its tables empty), for a test to fill.
hw::DeviceProfile measured_h100() {
  auto p = io::load_device_profile(fs::path(MEGASIM_SOURCE_DIR) /
                                   "calibrate/profiles/h100-sxm5-80gb.json")
               .profile;
  p.kind = hw::ProfileKind::kMeasured;
  p.measurement = hw::MeasurementInfo{
      "2026-12-03", "test", "NVIDIA H100 80GB HBM3", "570.1", "12.8", "12.8.3", "9.7.0", "2.26.2"};
  return p;
}
}  // namespace

TEST_CASE("a one-rank log imports with the reason it fits nothing, and its file loads back") {
  const fs::path log = temp_file("one-rank.log");
  {
    std::ofstream out(log);
    out << "# nccl-tests version 2.19.6 nccl-headers=22807 nccl-library=22807\n"
           "# Collective test starting: all_reduce_perf\n"
           "# nThread 1 nGpus 1 minBytes 1024 maxBytes 4096 step: 4(factor) warmup iters: 5 "
           "iters: 20 agg iters: 1 validation: 1 graph: 0 unalign: 0\n"
           "#\n# Using devices\n"
           "#  Rank  0 Group  0 Pid  12345 on     node1 device  0 [0000:00:00] NVIDIA H100 80GB "
           "HBM3\n#\n"
           "#       size         count      type   redop    root     time   algbw   busbw  "
           "#wrong     time   algbw   busbw  #wrong\n"
           "        1024           256     float     sum      -1     5.00    0.20    0.00       "
           "0     5.00    0.20    0.00       0\n"
           "        4096          1024     float     sum      -1     5.00    0.82    0.00       "
           "0     5.00    0.82    0.00       0\n";
  }
  const fs::path out = temp_file("one-rank.json");
  const auto r = run_megasim("calibrate import-nccl-tests " + shell_quote(log.string()) +
                             " --device h100-sxm5-80gb --cluster dgx-h100-superpod-6144 -o " +
                             shell_quote(out.string()));
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("no alpha-beta fit: one rank moves nothing between GPUs") != std::string::npos);
  CHECK(r.out.find("one rank moves nothing between GPUs: no scales fitted") != std::string::npos);
  // What it wrote, megasim reads: it had written a scale fit of 1 rank that the loader refuses.
  const auto refit = run_megasim("calibrate fit " + shell_quote(out.string()) + " -o " +
                                 shell_quote(temp_file("one-rank-fit.json").string()));
  CHECK(refit.exit_code == 0);
}

TEST_CASE("calibrate fit takes a profile whose only table is board power") {
  auto p = measured_h100();
  // Idle 80 W, GEMM 690 W, memory-bound 450 W, communication 300 W, pure and at half duty.
  const auto add = [&](double g, double m, double c) {
    p.power_table.push_back({g, m, c, Watts(690 * g + 450 * m + 300 * c + 80 * (1.0 - g - m - c))});
  };
  add(0, 0, 0);
  for (double duty : {1.0, 0.5}) {
    add(duty, 0, 0);
    add(0, duty, 0);
    add(0, 0, duty);
  }
  const fs::path in = temp_file("power-only.json");
  std::ofstream(in) << io::json_file_text(io::device_profile_to_json(p), 1);
  const auto r = run_megasim("calibrate fit " + shell_quote(in.string()) + " -o " +
                             shell_quote(temp_file("power-only-fit.json").string()));
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("GEMM 690 W") != std::string::npos);
}

TEST_CASE("calibrate fit keeps the fits that succeed when the GEMM fit is refused") {
  // One GEMM shape (8192^3 in 1.6 ms, 687 TFLOP/s) cannot fit a size class and the launch
  // overhead: the GEMM fit is refused; the memory rows still fit, and the GEMM model stays the
  // input's. Until 2026-12-03 the refused GEMM fit (a --quick run's) discarded them and wrote
  // nothing. (Until 2026-12-04 the refused row ran faster than the peak, which the loader now
  // refuses before any fit.)
  auto p = measured_h100();
  const hw::GemmModelParams datasheet = p.gemm;
  p.gemm_table.push_back({{8192, 8192, 8192, 1, hw::DType::kBf16}, Time::from_us(1600.0)});
  // 3 us + bytes at 2.8 TB/s (84 % of 3.35).
  for (const double mib : {1.0, 32.0, 1024.0}) {
    const double bytes = 2.0 * mib * (1 << 20);
    p.memory_table.push_back(
        {hw::MemoryKernel::kCopy, Bytes(bytes), Time::from_seconds(3e-6 + bytes / 2.8e12)});
  }
  const fs::path in = temp_file("gemm-refused.json");
  const fs::path out = temp_file("gemm-refused-fit.json");
  std::ofstream(in) << io::json_file_text(io::device_profile_to_json(p), 1);
  const auto r =
      run_megasim("calibrate fit " + shell_quote(in.string()) + " -o " + shell_quote(out.string()));
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("warning: calibrate fit: GEMM fit needs compute-bound rows of at least 2 "
                   "different shapes") != std::string::npos);
  CHECK(r.out.find("memory: 3 points, 83.6 % of HBM bandwidth") != std::string::npos);
  CHECK(r.out.find("not fitted, kept as the input has it: GEMM fit") != std::string::npos);
  const auto fitted = io::load_device_profile(out).profile;
  CHECK(fitted.memory_model.fitted);
  CHECK_FALSE(fitted.gemm.fitted);
  CHECK(fitted.gemm.source == datasheet.source);
  CHECK(fitted.gemm.classes[2].efficiency == datasheet.classes[2].efficiency);

  // With nothing else to fit, the refused GEMM fit is an input error, and nothing is written.
  p.memory_table.clear();
  std::ofstream(in) << io::json_file_text(io::device_profile_to_json(p), 1);
  const fs::path none = temp_file("gemm-refused-alone-fit.json");
  const auto alone = run_megasim("calibrate fit " + shell_quote(in.string()) + " -o " +
                                 shell_quote(none.string()));
  CHECK(alone.exit_code == 2);
  CHECK(alone.err.find("no model could be fitted: GEMM fit") != std::string::npos);
  CHECK_FALSE(fs::exists(none));
  // Nor with a collective table none of whose shapes fits (one rank moves nothing): its
  // report lines are no fit (the first version counted them and wrote the profile, exit 0).
  for (const double bytes : {1024.0, 4096.0}) {
    hw::CollectiveMeasurement c;
    c.ranks = 1;
    c.nodes = 1;
    c.size = Bytes(bytes);
    c.time = Time::from_us(5.0);
    c.run = c.origin = "one-rank.log:1";
    p.collective_table.push_back(c);
  }
  std::ofstream(in) << io::json_file_text(io::device_profile_to_json(p), 1);
  const auto unfitted = run_megasim("calibrate fit " + shell_quote(in.string()) + " -o " +
                                    shell_quote(none.string()));
  INFO(unfitted.out);
  CHECK(unfitted.exit_code == 2);
  CHECK_FALSE(fs::exists(none));
}

TEST_CASE("one run id over two collectives is fitted collective by collective") {
  // A calibration's all-gather and all-reduce rows under one id (megasim-calibrate-gpu gave
  // every op the same until 2026-12-03): NCCL's model is fitted to each, not to the first.
  const auto loaded = io::load_device_profile(fs::path(MEGASIM_SOURCE_DIR) /
                                              "calibrate/profiles/h100-sxm5-80gb.json");
  auto p = loaded.profile;
  // Measured rows make a measured profile (a datasheet one with a table is refused on loading).
  p.kind = hw::ProfileKind::kMeasured;
  p.measurement = hw::MeasurementInfo{"2026-12-06", "test", "", "", "", "", "", ""};
  for (const auto op : {hw::CollectiveOp::kAllGather, hw::CollectiveOp::kAllReduce}) {
    for (double size = 1024.0; size <= 1024.0 * 1024 * 1024; size *= 8.0) {
      hw::CollectiveMeasurement m;
      m.op = op;
      m.ranks = 8;
      m.nodes = 1;
      m.size = Bytes(size);
      m.time = Time::from_us(20.0) + Time::from_seconds(size * hw::bus_factor(op, 8) / 300e9);
      m.algbw = BytesPerSec(size / m.time.to_seconds());
      m.busbw = m.algbw * hw::bus_factor(op, 8);
      m.run = "one-id";
      p.collective_table.push_back(m);
    }
  }
  const fs::path base = temp_file("one-id.json");
  auto doc = io::device_profile_to_json(p);
  doc["collective"] = loaded.collective;
  std::ofstream(base) << io::json_file_text(doc, 1);
  const fs::path log = temp_file("one-id-empty.log");
  std::ofstream(log)
      << "# Collective test starting: all_reduce_perf\n"
         "# nThread 1 nGpus 1 minBytes 1024 maxBytes 4096 step: 4(factor) warmup iters: 5 "
         "iters: 20\n#\n# Using devices\n"
         "#  Rank  0 Group  0 Pid  1 on     node1 device  0 [0000:00:00] NVIDIA H100 80GB HBM3\n"
         "#       size         count      type   redop    root     time   algbw   busbw  #wrong\n"
         "        1024           256     float     sum      -1     5.00    0.20    0.00       0\n"
         "        4096          1024     float     sum      -1     5.00    0.82    0.00       0\n";
  const auto r =
      run_megasim("calibrate import-nccl-tests " + shell_quote(log.string()) + " --device " +
                  shell_quote(base.string()) + " --cluster dgx-h100-superpod-6144 --json -o " +
                  shell_quote(temp_file("one-id-out.json").string()));
  REQUIRE(r.exit_code == 0);
  const auto j = io::parse_json_text(r.out, "stdout");
  std::vector<std::string> ops;
  for (const auto& s : j.at("scales"))
    if (s.at("run") == "one-id") ops.push_back(s.value("op", std::string("?")));
  CHECK(ops == std::vector<std::string>{"all_gather", "all_reduce"});
}

TEST_CASE("a log imported into a profile that already holds it is refused, writing nothing") {
  // Its rows stood twice in the table (the fit counted them twice) and its report named it as
  // answered by itself.
  const std::string log =
      shell_quote(std::string(MEGASIM_SOURCE_DIR) + "/tests/data/nccl-tests/h100-2node-all_reduce.log");
  const fs::path first = temp_file("held-once.json"), second = temp_file("held-twice.json");
  REQUIRE(run_megasim("calibrate import-nccl-tests " + log + " --device h100-sxm5-80gb -o " +
                      shell_quote(first.string()))
              .exit_code == 0);
  const auto r = run_megasim("calibrate import-nccl-tests " + log + " --device " +
                             shell_quote(first.string()) + " -o " + shell_quote(second.string()));
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("already holds these measurements") != std::string::npos);
  CHECK_FALSE(fs::exists(second));
  // By what it holds, not by the log's name: the same log under another name is refused too
  // (its rows were doubled), and another log under the first one's name and line would share
  // its run id.
  const fs::path copy = temp_file("renamed.log");
  fs::copy_file(
      std::string(MEGASIM_SOURCE_DIR) + "/tests/data/nccl-tests/h100-2node-all_reduce.log", copy,
      fs::copy_options::overwrite_existing);
  const auto renamed =
      run_megasim("calibrate import-nccl-tests " + shell_quote(copy.string()) + " --device " +
                  shell_quote(first.string()) + " -o " + shell_quote(second.string()));
  CHECK(renamed.exit_code == 2);
  CHECK(renamed.err.find("already holds these measurements") != std::string::npos);
  CHECK_FALSE(fs::exists(second));
}

TEST_CASE("a second import keeps the --device profile's scale fits on the cluster they ran on") {
  // The H100 log fitted on its own cluster, then a log imported into that profile with another
  // --cluster: the H100 run's fit stays as it was (it was refitted on the other fabric and
  // relabelled with it).
  const std::string data = std::string(MEGASIM_SOURCE_DIR) + "/tests/data/nccl-tests/";
  const fs::path first = temp_file("kept-1.json"), second = temp_file("kept-2.json");
  REQUIRE(run_megasim("calibrate import-nccl-tests " +
                      shell_quote(data + "h100-2node-all_reduce.log") +
                      " --device h100-sxm5-80gb --cluster dgx-h100-superpod-6144 -o " +
                      shell_quote(first.string()))
              .exit_code == 0);
  const auto before = io::load_device_profile(first).profile.collective_scales;
  REQUIRE(before.size() == 1);
  // Another H100 cluster: the SuperPOD's file renamed (an H200 cluster took it until
  // 2026-12-06, when a cluster of another part than the log's was refused).
  io::Json other =
      io::parse_json_file(fs::path(MEGASIM_SOURCE_DIR) / "topologies/dgx-h100-superpod-6144.json");
  other["name"] = "other-h100";
  const fs::path other_file = temp_file("other-h100.json");
  std::ofstream(other_file) << other.dump();
  const auto r = run_megasim(
      "calibrate import-nccl-tests " + shell_quote(data + "h100-2node-ib-8B-16G-all_reduce.log") +
      " --device " + shell_quote(first.string()) + " --cluster " +
      shell_quote(other_file.string()) + " -o " + shell_quote(second.string()));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto after = io::load_device_profile(second).profile.collective_scales;
  REQUIRE(after.size() == 2);
  CHECK(after[0].run == before[0].run);
  CHECK(after[0].cluster == "dgx-h100-superpod-6144");
  CHECK(after[0].bandwidth_scale == before[0].bandwidth_scale);
  CHECK(after[1].cluster == "other-h100");
}

TEST_CASE("calibrate -o X --scenario X.shapes.json is refused before it measures anything") {
  // The shapes file beside the output would replace the scenario they came from (it was
  // written without the check every other output has).
  const fs::path scenario = temp_file("cal.shapes.json");
  fs::copy_file(fs::path(MEGASIM_SOURCE_DIR) / "scenarios/validation/sc21-t1-1.7b.json", scenario,
                fs::copy_options::overwrite_existing);
  const std::string before = io::json_file_text(io::parse_json_file(scenario), 1);
  const auto r = run_megasim("calibrate -o " + shell_quote(temp_file("cal").string()) +
                             " --scenario " + shell_quote(scenario.string()));
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("-o (its .shapes.json) would overwrite it") != std::string::npos);
  CHECK(io::json_file_text(io::parse_json_file(scenario), 1) == before);
}

TEST_CASE("an import onto a measured profile keeps its measurement's versions and date") {
  const auto loaded = io::load_device_profile(fs::path(MEGASIM_SOURCE_DIR) /
                                              "calibrate/profiles/h100-sxm5-80gb.json");
  auto p = loaded.profile;
  p.kind = hw::ProfileKind::kMeasured;
  p.measurement = hw::MeasurementInfo{"2026-01-01T00:00:00Z",
                                      "megasim-calibrate-gpu",
                                      "NVIDIA H100 80GB HBM3",
                                      "550.1",
                                      "12.4",
                                      "12.4.5",
                                      "9.1.0",
                                      "2.21.5"};
  auto doc = io::device_profile_to_json(p);
  doc["collective"] = loaded.collective;
  const fs::path base = temp_file("measured-base.json"), out = temp_file("measured-import.json");
  std::ofstream(base) << io::json_file_text(doc, 1);
  const auto r =
      run_megasim("calibrate import-nccl-tests " +
                  shell_quote(std::string(MEGASIM_SOURCE_DIR) +
                              "/tests/data/nccl-tests/h100-2node-all_reduce.log") +
                  " --device " + shell_quote(base.string()) + " -o " + shell_quote(out.string()));
  REQUIRE(r.exit_code == 0);
  const auto m = io::load_device_profile(out).profile.measurement;
  REQUIRE(m.has_value());
  CHECK(m->date == "2026-01-01T00:00:00Z");
  CHECK(m->driver == "550.1");
  CHECK(m->nccl == "2.21.5");
  CHECK(m->tool.find("megasim-calibrate-gpu (2026-01-01T00:00:00Z); then megasim calibrate "
                     "import-nccl-tests") == 0);
  CHECK(m->device_name == "NVIDIA H100 80GB HBM3");
  // A second import replaces the first one's part of the tool line instead of nesting it.
  const fs::path again = temp_file("measured-import-2.json");
  REQUIRE(run_megasim("calibrate import-nccl-tests " +
                      shell_quote(std::string(MEGASIM_SOURCE_DIR) +
                                  "/tests/data/nccl-tests/h100-2node-ib-8B-16G-all_reduce.log") +
                      " --device " + shell_quote(out.string()) + " -o " +
                      shell_quote(again.string()))
              .exit_code == 0);
  const auto m2 = io::load_device_profile(again).profile.measurement;
  REQUIRE(m2.has_value());
  CHECK(m2->tool.find("; then ") == m->tool.find("; then "));
  CHECK(m2->tool.find("; then ", m2->tool.find("; then ") + 1) == std::string::npos);
  CHECK(m2->date == "2026-01-01T00:00:00Z");
}

TEST_CASE("collective: a measured row's time is the one its algbw and busbw are of") {
  // The 8 MiB row of a 2-node H100 log printed the simulated 168.67 us beside an algbw of the
  // measured 175.69 us (47.75 GB/s, not size / time); now `time` is the answer's and the
  // simulation stands beside it. The redop is nccl-tests': none for an all-gather.
  const std::string log = shell_quote(std::string(MEGASIM_SOURCE_DIR) +
                                      "/tests/data/nccl-tests/h100-2node-all_reduce.log");
  const fs::path profile = temp_file("measured-sweep.json");
  REQUIRE(run_megasim("calibrate import-nccl-tests " + log +
                      " --device h100-sxm5-80gb --cluster dgx-h100-superpod-6144 -o " +
                      shell_quote(profile.string()))
              .exit_code == 0);
  const auto r = run_megasim(
      "collective --cluster dgx-h100-superpod-6144 --op all_reduce --gpus 16 "
      "--bytes 4M:64M --json --device " +
      shell_quote(profile.string()));
  REQUIRE(r.exit_code == 0);
  const auto j = io::parse_json_text(r.out, "stdout");
  int measured = 0;
  for (const auto& row : j.at("rows")) {
    const double size = row.at("size_bytes").get<double>(), us = row.at("time_us").get<double>();
    CHECK(row.at("algbw_gbps").get<double>() == doctest::Approx(size / us * 1e-3));
    CHECK(row.at("redop") == "sum");
    if (row.at("answer") == "measured table") {
      ++measured;
      CHECK(us == row.at("measured_time_us").get<double>());
      CHECK(row.contains("simulated_time_us"));
    }
  }
  CHECK(measured > 0);
  const auto g = run_megasim(
      "collective --cluster dgx-h100-superpod-6144 --op all_gather "
      "--gpus 16 --bytes 1M:1M --json");
  REQUIRE(g.exit_code == 0);
  CHECK(io::parse_json_text(g.out, "stdout").at("rows").at(0).at("redop") == "none");
}

TEST_CASE("a log faster than its cluster's links is refused at import and where it is used") {
  // The H100 log with every time / 100: its 8 MiB all-reduce in 1.76 us, where 8 MiB into a
  // node over eight 400 Gb/s NICs takes 21 us at the least. With --cluster the import is
  // refused and writes nothing; without one it imports (the links are not known), and
  // `collective` on that cluster refuses the profile.
  const fs::path log = test::scaled_h100_log(temp_file("h100-fast.log"), 0.01);
  const fs::path out = temp_file("fast.json");
  const auto r = run_megasim("calibrate import-nccl-tests " + shell_quote(log.string()) +
                             " --device h100-sxm5-80gb --cluster dgx-h100-superpod-6144 -o " +
                             shell_quote(out.string()));
  CHECK(r.exit_code == 2);
  INFO(r.err);
  CHECK(r.err.find("h100-fast.log:10 (--cluster): all_reduce of 8388608 bytes on 16 ranks / 2 "
                   "node(s) took 1.757 us, but on cluster 'dgx-h100-superpod-6144' it takes at "
                   "least 20.972 us: 8388608 bytes over a node's 8 NICs at 400.0 GB/s raw") !=
        std::string::npos);
  CHECK_FALSE(fs::exists(out));
  REQUIRE(run_megasim("calibrate import-nccl-tests " + shell_quote(log.string()) +
                      " --device h100-sxm5-80gb -o " + shell_quote(out.string()))
              .exit_code == 0);
  const auto c = run_megasim(
      "collective --cluster dgx-h100-superpod-6144 --gpus 16 --bytes 1G "
      "--device " +
      shell_quote(out.string()));
  CHECK(c.exit_code == 2);
  CHECK(c.err.find("collective_table[0] (from " + log.string() + ":10): all_reduce") !=
        std::string::npos);
  // The log as it ran: every row within the links.
  CHECK(run_megasim("calibrate import-nccl-tests " +
                    shell_quote(test::scaled_h100_log(temp_file("h100.log"), 1.0).string()) +
                    " --device h100-sxm5-80gb --cluster dgx-h100-superpod-6144 -o " +
                    shell_quote(temp_file("as-ran.json").string()))
            .exit_code == 0);
}

TEST_CASE("a NIC scale fitted on part of each node may not beat the whole nodes' links") {
  // An 8-rank all-reduce logged as 4 + 4 GPUs on 2 nodes at the speed of all 8 NICs of a node
  // (the bound its rows pass): NCCL's model for 4 GPUs a node fits a scale near 4, and on all
  // 16 GPUs it then answers in half the least time those links allow. Imported until
  // 2026-12-05 (a reviewer's log of one node's times, fitted 2.5).
  const fs::path log = temp_file("fast8.log");
  {
    std::ofstream o(log);
    o << "# Collective test starting: all_reduce_perf\n"
         "# nThread 1 nGpus 1 minBytes 8 maxBytes 1073741824 step: 2(factor) warmup iters: 5 "
         "iters: 20\n# Using devices\n"
         "#  size  count  type  redop  root  time  algbw  busbw  #wrong  time  algbw  busbw  "
         "#wrong\n";
    for (int e = 24; e <= 30; ++e) {
      const double size = std::ldexp(1.0, e), us = 20.0 + size / 400e9 * 1e6;
      const double algbw = size / us / 1e3, busbw = 1.75 * algbw;
      o << fmt::format("{:.0f} {:.0f} float sum -1 {:.2f} {:.2f} {:.2f} 0 {:.2f} {:.2f} {:.2f} 0\n",
                       size, size / 4, us, algbw, busbw, us, algbw, busbw);
    }
  }
  const std::string out = temp_file("fast8.json").string();
  const auto r = run_megasim("calibrate import-nccl-tests " + shell_quote(log.string()) +
                             " --ranks 8 --nodes 2 --device h100-sxm5-80gb --cluster "
                             "dgx-h100-superpod-6144 -o " +
                             shell_quote(out));
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("the fitted NIC bandwidth scale") != std::string::npos);
  CHECK(r.err.find("on 16 ranks / 2 nodes (every GPU of those nodes)") != std::string::npos);
  CHECK(r.err.find("check --ranks, --nodes and --cluster") != std::string::npos);
  CHECK_FALSE(fs::exists(out));
  // The shipped 16-rank log on the same cluster imports (its scale fitted on whole nodes).
  const auto shipped = run_megasim("calibrate import-nccl-tests " +
                                   shell_quote(std::string(MEGASIM_SOURCE_DIR) +
                                               "/tests/data/nccl-tests/h100-2node-all_reduce.log") +
                                   " --device h100-sxm5-80gb --cluster dgx-h100-superpod-6144 -o " +
                                   shell_quote(out));
  CHECK(shipped.exit_code == 0);
  fs::remove(out);
}
