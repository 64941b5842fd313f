// `megasim collective` as a user runs it: an nccl-tests-style table, one JSON object with
// --json, and exit status 2 with a clear message for bad input.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "../cli/run_command.h"

using megasim::test::run_megasim;

namespace {

// The H100 SuperPOD with one of its node's figures changed, written to a scratch file named
// `name`.json; the cluster as written.
nlohmann::json superpod_with(const std::string& name, const std::string& node_key, double value,
                             std::filesystem::path& file) {
  auto cluster = nlohmann::json::parse(megasim::test::read_all(
      std::string(MEGASIM_SOURCE_DIR) + "/topologies/dgx-h100-superpod-6144.json"));
  cluster["name"] = name;
  cluster["node"][node_key] = value;
  file = megasim::test::temp_file(name + ".json");
  std::ofstream(file) << cluster.dump();
  return cluster;
}

}  // namespace

TEST_CASE("megasim collective prints one JSON object with nccl-tests columns") {
  const auto r = run_megasim("collective --cluster dgx-a100-8 --op all_reduce --gpus 8 --bytes 8:1G --json");
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["rows"].size() == 28);  // 8 B .. 1 GiB, doubling: 2^3 .. 2^30
  const auto& last = j["rows"].back();
  CHECK(last["size_bytes"].get<double>() == 1073741824.0);
  // busbw = algbw x 2(n-1)/n with n = 8.
  CHECK(last["busbw_gbps"].get<double>() == doctest::Approx(last["algbw_gbps"].get<double>() * 1.75));
  CHECK(last["time_us"].get<double>() > 0.0);
}

TEST_CASE("megasim collective text table has one row per size") {
  const auto r = run_megasim("collective --cluster megascale-a100-12288 --gpus 64 --bytes 1M:4M");
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("busbw") != std::string::npos);
  // 1, 2 and 4 MiB, each once (nccl-tests' doubling), and nothing else below the header.
  int rows = 0;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream cells(line);
    double size = 0;
    cells >> size;
    CHECK(size == doctest::Approx(1048576.0 * (1 << rows)));
    ++rows;
  }
  CHECK(rows == 3);
}

TEST_CASE("megasim collective rejects bad input with exit status 2") {
  const auto missing = run_megasim("collective --cluster no-such-cluster");
  CHECK(missing.exit_code == 2);
  // Named once ("--cluster: cluster: cluster '…'" until 2026-12-07).
  CHECK(missing.err.find("error: --cluster: cluster 'no-such-cluster' not found") !=
        std::string::npos);
  const auto bad_op = run_megasim("collective --cluster dgx-a100-8 --op allreduce");
  CHECK(bad_op.exit_code == 2);
  CHECK(bad_op.err.find("all_reduce") != std::string::npos);
  CHECK(run_megasim("collective --cluster dgx-a100-8 --bytes 8:4").exit_code == 2);
  CHECK(run_megasim("collective --cluster dgx-a100-8 --bytes 8Q").exit_code == 2);
  CHECK(run_megasim("collective --cluster dgx-a100-8 --gpus 16").exit_code == 2);
  CHECK(run_megasim("collective --cluster dgx-a100-8 --routing random").exit_code == 2);
  CHECK(run_megasim("collective --cluster dgx-a100-8 --op all_gather --algo tree").exit_code == 2);
  // Past a petabyte a call, and a cluster past what is built for the call: named, not an
  // internal error or an out-of-memory kill.
  const auto huge = run_megasim("collective --cluster dgx-a100-8 --bytes 1e30");
  CHECK(huge.exit_code == 2);
  CHECK(huge.err.find("--bytes: size '1e30'") != std::string::npos);
  // A sweep past 200 sizes, or a size that is no whole number of bytes, is refused, not cut.
  const auto many = run_megasim("collective --cluster dgx-a100-8 --bytes 8:8G --step-factor 1.1");
  CHECK(many.exit_code == 2);
  CHECK(many.err.find("more than 200 sizes") != std::string::npos);
  const auto half = run_megasim("collective --cluster dgx-a100-8 --bytes 1.5");
  CHECK(half.exit_code == 2);
  CHECK(half.err.find("a whole number of bytes") != std::string::npos);
  // Sizes that round to the one before are dropped, as nccl-tests steps: 8 to 16 B in whole
  // floats, 8, 12 and 16 B (9 rows of a byte each until 2026-12-05).
  const auto fine =
      run_megasim("collective --cluster dgx-a100-8 --bytes 8:16 --step-factor 1.001 --json");
  REQUIRE(fine.exit_code == 0);
  CHECK(nlohmann::json::parse(fine.out)["rows"].size() == 3);
  // A factor so near 1 that the steps never end is refused before stepping.
  const auto endless =
      run_megasim("collective --cluster dgx-a100-8 --bytes 8:8G --step-factor 1.0000000000001");
  CHECK(endless.exit_code == 2);
  CHECK(endless.err.find("give a larger factor") != std::string::npos);
  // nccl-tests' spelling of the op is taken too.
  CHECK(run_megasim("collective --cluster dgx-a100-8 --op alltoall --bytes 1M").exit_code == 0);
  const auto big = run_megasim("collective --gpus 8 --cluster " + std::string(MEGASIM_SOURCE_DIR) +
                               "/tests/data/bad/huge-cluster-topology.json");
  CHECK(big.exit_code == 2);
  CHECK(big.err.find("--cluster: cluster 'huge-cluster' has 4194304 GPUs, more than the 65536") !=
        std::string::npos);
}

TEST_CASE("megasim collective says when the fabric overturns NCCL's pick") {
  // 8 H100 servers on the Llama-3-like ToR cluster, 1 GiB: NCCL's model picks NVLSTree, whose
  // head-to-head tree flows collide on ECMP uplinks; the ring, timed alone, ends sooner.
  const auto r = run_megasim("collective --cluster llama3-h100-24576 --gpus 64 --bytes 1G --json");
  REQUIRE(r.exit_code == 0);
  const auto row = nlohmann::json::parse(r.out)["rows"].back();
  CHECK(row["nccl_algorithm"] == "nvls_tree");
  CHECK(row["algorithm"] == "ring");
  const auto text = run_megasim("collective --cluster llama3-h100-24576 --gpus 64 --bytes 1G");
  CHECK(text.out.find("ring*") != std::string::npos);
  // On the rail-optimised SuperPOD nothing collides: NCCL's pick runs, unmarked.
  const auto rail = run_megasim("collective --cluster dgx-h100-superpod-6144 --gpus 64 --bytes 1G --json");
  const auto rail_row = nlohmann::json::parse(rail.out)["rows"].back();
  CHECK(rail_row["algorithm"] == "nvls_tree");
  CHECK(rail_row["nccl_algorithm"] == "nvls_tree");
}

TEST_CASE("megasim collective: NVLink SHARP only where the profile has it") {
  const auto a100 = run_megasim("collective --cluster dgx-a100-8 --algo nvls --bytes 1G");
  CHECK(a100.exit_code == 2);
  CHECK(a100.err.find("no NVLink SHARP") != std::string::npos);
  const auto h200 = run_megasim("collective --cluster dgx-h200-superpod-1024 --gpus 8 --bytes 1G --json");
  REQUIRE(h200.exit_code == 0);
  CHECK(nlohmann::json::parse(h200.out)["rows"].back()["algorithm"] == "nvls");
}

TEST_CASE("megasim collective: a --device of another part than the cluster's is said") {
  // As simulate says it (the sweep ran an H100 profile on A100 nodes without a word until
  // 2026-12-07, a bad-input trial).
  const auto other =
      run_megasim("collective --cluster dgx-a100-8 --device h100-sxm5-80gb --bytes 1M --json");
  REQUIRE(other.exit_code == 0);
  CHECK(other.err.find("megasim: warning: cluster dgx-a100-8 holds") != std::string::npos);
  CHECK(other.err.find("but the device profile h100-sxm5-80gb is another part's") !=
        std::string::npos);
  const auto own = run_megasim("collective --cluster dgx-a100-8 --bytes 1M --json");
  REQUIRE(own.exit_code == 0);
  CHECK(own.err.empty());
}

TEST_CASE("megasim collective --per-node: a DP group's one GPU a node, where NCCL runs PAT") {
  const auto r = run_megasim(
      "collective --cluster dgx-h100-superpod-6144 --op all_gather --gpus 16 --per-node 1 "
      "--bytes 64 --json");
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["per_node"] == 1);
  CHECK(j["rows"][0]["algorithm"] == "pat");
  const auto text = run_megasim(
      "collective --cluster dgx-h100-superpod-6144 --op all_gather --gpus 16 --per-node 1 --bytes "
      "64");
  CHECK(text.out.find("1 a node") != std::string::npos);
  // It must divide the GPUs and fit the node and the cluster.
  const auto odd = run_megasim("collective --cluster dgx-h100-superpod-6144 --gpus 16 --per-node 3");
  CHECK(odd.exit_code == 2);
  CHECK(odd.err.find("--per-node") != std::string::npos);
  CHECK(run_megasim("collective --cluster dgx-a100-8 --gpus 8 --per-node 1").exit_code == 2);
  CHECK(run_megasim("collective --cluster dgx-h100-superpod-6144 --gpus 16 --per-node 16").exit_code == 2);
  // A whole node's worth must divide the GPUs too: 12 GPUs are not 8 a node.
  CHECK(run_megasim("collective --cluster dgx-h100-superpod-6144 --gpus 12 --per-node 8").exit_code == 2);
  const auto one = run_megasim("collective --cluster dgx-h100-superpod-6144 --op all_gather --gpus 1 --algo pat");
  CHECK(one.exit_code == 2);
  CHECK(one.err.find("a collective of 1 GPU moves nothing between GPUs; give 2 or more") !=
        std::string::npos);
}

TEST_CASE("megasim collective: a size is taken down to whole elements, each rank's where split") {
  // nccl-tests' getCollByteCount: 1001 bytes of all-reduce are 250 floats, 1000 bytes; 100
  // bytes of all-gather on 8 ranks are 3 floats a rank, 96 bytes.
  const auto reduce = run_megasim("collective --cluster dgx-a100-8 --gpus 8 --bytes 1001 --json");
  REQUIRE(reduce.exit_code == 0);
  const auto r = nlohmann::json::parse(reduce.out)["rows"][0];
  CHECK(r["size_bytes"] == 1000);
  CHECK(r["count"] == 250);
  const auto gather =
      run_megasim("collective --cluster dgx-a100-8 --op all_gather --gpus 8 --bytes 100 --json");
  REQUIRE(gather.exit_code == 0);
  const auto g = nlohmann::json::parse(gather.out)["rows"][0];
  CHECK(g["size_bytes"] == 96);
  // The count a rank's, as nccl-tests prints it for the split ops (it was the buffer's, 24,
  // until 2026-12-05, 8 times off beside a real all_gather_perf log).
  CHECK(g["count"] == 3);
  // The default sweep (8 bytes up) leaves out the sizes under a float a rank: its first row is
  // 32 bytes on 8 ranks, and no size comes twice.
  const auto sweep = run_megasim("collective --cluster dgx-a100-8 --op all_gather --gpus 8 --json");
  REQUIRE(sweep.exit_code == 0);
  const auto rows = nlohmann::json::parse(sweep.out)["rows"];
  CHECK(rows[0]["size_bytes"] == 32);
  for (std::size_t i = 1; i < rows.size(); ++i)
    CHECK(rows[i]["size_bytes"].get<double>() > rows[i - 1]["size_bytes"].get<double>());
}

TEST_CASE("megasim collective: a PCIe link slower than the NIC paces the ring, tree and all-to-all") {
  // PCIe at 200 Gb/s behind the H100 SuperPOD's 400G NICs: NCCL's path search takes the slowest
  // link between GPU and NIC (25 GB/s), and the flows cross it. The model had no PCIe term
  // until 2026-12-06, so it priced such a node at the NIC's rate.
  std::filesystem::path file;
  superpod_with("slow-pcie", "pcie_gbps", 200, file);
  // The tree's flows did not follow it until 2026-12-06 (5,928 µs against the model's 11,763).
  for (const char* run : {"--op all_reduce --algo ring --proto simple",
                          "--op all_reduce --algo tree --proto simple", "--op all_to_all"}) {
    CAPTURE(run);
    const auto row = [&](const std::string& c) {
      const auto r =
          run_megasim("collective --cluster " + c + " --gpus 16 --bytes 1G --json " + run);
      REQUIRE(r.exit_code == 0);
      return nlohmann::json::parse(r.out)["rows"].back();
    };
    const auto fast = row("dgx-h100-superpod-6144"), slow = row(file.string());
    CHECK(slow["model_time_us"].get<double>() > 1.5 * fast["model_time_us"].get<double>());
    CHECK(slow["simulated_time_us"].get<double>() ==
          doctest::Approx(slow["model_time_us"].get<double>()).epsilon(0.03));
  }
}

TEST_CASE("megasim collective: ring and tree flows alone take the model's time, node shapes alike") {
  // Until 2026-12-06 the flows were sized from the link rate the model assumes: a ring of 3, 5
  // or 7 GPUs a node on Jean Zay's 4 NICs (two GPUs a NIC) ran 12-25 % over the model, its 4 or
  // 8 channels entering the nodes on the rails unevenly, and a tree on two to four nodes ran up
  // to 50 % under it, no node interior in both trees (a reviewer's sweep).
  const auto row = [](const std::string& args) {
    const auto r = run_megasim("collective --bytes 1G --json " + args);
    REQUIRE(r.exit_code == 0);
    return nlohmann::json::parse(r.out)["rows"].back();
  };
  for (const char* per_node : {"3", "5", "7"}) {
    CAPTURE(per_node);
    const auto r = row(std::string("--cluster jean-zay-a100-384 --op all_gather --algo ring "
                                   "--proto simple --gpus ") +
                       std::to_string(4 * std::stoi(per_node)) + " --per-node " + per_node);
    CHECK(r["simulated_time_us"].get<double>() ==
          doctest::Approx(r["model_time_us"].get<double>()).epsilon(0.01));
  }
  // On the Llama-3-like cluster (a ToR per two servers) a tree's flows carried the bytes that
  // slowed them to the model, which then collided above the ToR (1.18 x the model on 32 GPUs;
  // 1.35 x in this change's first version): they carry their own bytes at its pace now.
  for (const char* shape :
       {"--cluster jean-zay-a100-384 --gpus 16", "--cluster jean-zay-a100-384 --gpus 32",
        "--cluster dgx-h100-superpod-6144 --gpus 16", "--cluster llama3-h100-24576 --gpus 32",
        "--cluster llama3-h100-24576 --gpus 16 --per-node 4"}) {
    CAPTURE(shape);
    const auto r = row(std::string(shape) + " --op all_reduce --algo tree --proto simple");
    CHECK(r["simulated_time_us"].get<double>() ==
          doctest::Approx(r["model_time_us"].get<double>()).epsilon(0.01));
  }
}

TEST_CASE("megasim collective: NVLSTree on two nodes runs no faster than a node's NICs take in") {
  // Eight 200 Gb/s NICs a node (198.7 GB/s at their efficiency): each node takes in the other's
  // sums, the whole buffer, so algbw stays under that. The doubled two-node NIC term put it at
  // 209.7 GB/s until 2026-12-06, and the flows, sized from the model, agreed.
  std::filesystem::path file;
  const auto cluster = superpod_with("nic-200g", "nic_gbps", 200, file);
  const double nics = 8 * 25e9 * cluster["node"]["nic_efficiency"].get<double>();
  const auto r = run_megasim("collective --cluster " + file.string() +
                             " --gpus 16 --bytes 1G:4G --algo nvls_tree --json");
  REQUIRE(r.exit_code == 0);
  const auto sweep = nlohmann::json::parse(r.out);
  REQUIRE(sweep["rows"].size() == 3);
  for (const auto& row : sweep["rows"]) {
    const double algbw = row["size_bytes"].get<double>() / (row["time_us"].get<double>() * 1e-6);
    CHECK(algbw <= nics);
    CHECK(algbw > 0.95 * nics);
  }
}

TEST_CASE("megasim collective --routing spray and --placement spread reach the flows") {
  // Only a bad --routing was held at the command until a test audit (2026-12-07); spray was a
  // library test's. A 1 GiB all-reduce on 64 GPUs of the Llama 3 cluster: hashed (ECMP) flows
  // collide above the ToR, so NCCL's NVLSTree is re-checked and loses to the ring, slower than
  // the model; sprayed, the tree's flows take the model's time; spread over more leaves, the
  // placement changes the hashed time.
  const std::string base = "collective --cluster llama3-h100-24576 --gpus 64 --bytes 1G --json";
  const auto row = [](const std::string& args) {
    const auto r = run_megasim(args);
    REQUIRE(r.exit_code == 0);
    return nlohmann::json::parse(r.out);
  };
  const auto hashed = row(base);
  const auto sprayed = row(base + " --routing spray");
  const auto spread = row(base + " --placement spread");
  CHECK(hashed["routing"] == "ecmp");
  CHECK(sprayed["routing"] == "spray");
  CHECK(spread["placement"] == "spread");
  const auto& h = hashed["rows"][0];
  const auto& s = sprayed["rows"][0];
  const auto& p = spread["rows"][0];
  CHECK(h["nccl_algorithm"] == "nvls_tree");
  CHECK(h["algorithm"] == "ring");
  CHECK(h["simulated_time_us"].get<double>() > 1.2 * h["model_time_us"].get<double>());
  CHECK(s["algorithm"] == "nvls_tree");
  CHECK(s["simulated_time_us"].get<double>() ==
        doctest::Approx(s["model_time_us"].get<double>()).epsilon(1e-6));
  CHECK(s["simulated_time_us"].get<double>() < h["simulated_time_us"].get<double>());
  CHECK(p["simulated_time_us"].get<double>() != h["simulated_time_us"].get<double>());
}
