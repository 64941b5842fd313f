#include <filesystem>
#include <fstream>
#include <functional>

#include <doctest/doctest.h>

#include "engine/error.h"
#include "input_error_of.h"
#include "io/device_profile_loader.h"
#include "io/reliability_loader.h"
#include "io/scenario.h"
#include "test_profiles.h"

namespace fs = std::filesystem;
using megasim::Time;
using namespace megasim::run;

TEST_CASE("presets: Llama 3 rates reproduce 419 interruptions in 54 days on 16384 GPUs") {
  // Rates per GPU and per node times 16,384 GPUs / 2,048 nodes give back 419 / (54 × 24 h).
  for (const char* name : {"default", "megascale", "megatron-lm"}) {
    INFO(name);
    const ReliabilityModel m = megasim::io::load_reliability_preset(name);
    CHECK(m.causes.size() == 18);
    StepProfile step = uniform_step(Time::from_seconds(1), 1.0, 16384, 8, 0, Activity::kGemm);
    CHECK(m.failures_per_hour(step) == doctest::Approx(419.0 / (54.0 * 24.0)));
    CHECK(m.causes[0].name == "faulty_gpu");
    CHECK(m.causes[0].rate_per_unit_hour ==
          doctest::Approx(148.0 / (16384.0 * 54.0 * 24.0)).scale(0));
  }
}

TEST_CASE("presets: MegaScale and Megatron-LM communicator init at 2048 and 12288 ranks") {
  const ReliabilityModel ms = megasim::io::load_reliability_preset("megascale");
  const ReliabilityModel mt = megasim::io::load_reliability_preset("megatron-lm");
  CHECK(ms.comm_init.at(2048).to_seconds() == doctest::Approx(5.0));
  // MegaScale's "< 30 s on more than 10,000 GPUs" placed at its 12,288-GPU jobs: linear.
  CHECK(ms.comm_init.at(12288).to_seconds() == doctest::Approx(30.0));
  CHECK(ms.comm_init.at(10000).to_seconds() == doctest::Approx(30.0 * 10000 / 12288));
  CHECK(mt.comm_init.at(2048).to_seconds() == doctest::Approx(1047.0));
  CHECK(mt.comm_init.at(12288).to_seconds() == doctest::Approx(1047.0 * 6.0));
  // Straggler penalty from 0.7 MFU points at 55.2%: 0.552 / 0.545 − 1 ≈ 1.28%.
  CHECK(ms.straggler_slowdown == doctest::Approx(0.552 / 0.545 - 1.0));
  CHECK(ms.async_checkpoint);
  CHECK_FALSE(mt.async_checkpoint);
  const ReliabilityModel none = megasim::io::load_reliability_preset("none");
  CHECK(none.causes.empty());
}

namespace {

// The error of loading the shipped megascale preset edited by `edit`, as a file `name` in a
// temporary folder.
std::string error_of_edited_preset(const std::string& name,
                                   const std::function<void(std::string&)>& edit) {
  const fs::path dir = fs::temp_directory_path() / ("megasim_run_presets_" + name);
  fs::create_directories(dir);
  std::ifstream in(fs::path(MEGASIM_SOURCE_DIR) / "reliability/megascale.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  edit(text);
  const fs::path file = dir / name;
  std::ofstream(file) << text;
  const std::string e =
      megasim::test::input_error_of([&] { megasim::io::load_reliability_file(file); });
  fs::remove_all(dir);
  return e;
}

// Writes dir/preset.json: the shipped default reliability preset with its failure-rate table
// replaced by dir/rates.json, which the caller writes.
void write_preset_naming_rates(const fs::path& dir) {
  std::ifstream in(fs::path(MEGASIM_SOURCE_DIR) / "reliability/default.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string named = "\"failure-rates-llama3-405b\"";
  REQUIRE(text.find(named) != std::string::npos);
  std::string path = "\"";  // not "\"" + path + "\"": GCC 12 warns (-Wrestrict) on that
  path += (dir / "rates.json").string();
  path += '"';
  text.replace(text.find(named), named.size(), path);
  std::ofstream(dir / "preset.json") << text;
}

}  // namespace

TEST_CASE("presets: an unknown key in a reliability file is an error naming it") {
  const std::string e = error_of_edited_preset("bad.json", [](std::string& text) {
    text.insert(text.find("\"detection_min\""), "\"detecton_min\": 3, ");
  });
  CHECK(e.find("detecton_min") != std::string::npos);
  CHECK_THROWS_AS(megasim::io::load_reliability_preset("no-such-preset"), megasim::InputError);
}

TEST_CASE("presets: a checkpoint bandwidth under its old _gbps name is refused, saying GB/s") {
  // Gigabytes a second, where a cluster's *_gbps keys are gigabits: the old name invited a
  // NIC-style figure 8x too fast (a code review, 2026-12-05).
  const std::string e = error_of_edited_preset("old.json", [](std::string& text) {
    const std::string renamed = "\"checkpoint_read_gbyte_per_s\"";
    REQUIRE(text.find(renamed) != std::string::npos);
    text.replace(text.find(renamed), renamed.size(), "\"checkpoint_read_gbps\"");
  });
  CHECK(e.find("old.json: checkpoint_read_gbps: renamed checkpoint_read_gbyte_per_s, in "
               "gigabytes a second") != std::string::npos);
}

TEST_CASE("presets: a reliability file's errors name the file and the key") {
  const fs::path bad = fs::path(MEGASIM_SOURCE_DIR) / "tests/data/bad";
  const std::string same = megasim::test::input_error_of(
      [&] { megasim::io::load_reliability_file(bad / "reliability-comm-init-same-ranks.json"); });
  CHECK(same.find("reliability-comm-init-same-ranks.json: comm_init.points: both points are at "
                  "2048 ranks") != std::string::npos);
  const std::string missing = megasim::test::input_error_of(
      [&] { megasim::io::load_reliability_file(bad / "reliability-failure-rates-missing.json"); });
  CHECK(missing.find("reliability-failure-rates-missing.json: failure_rates: reliability preset "
                     "'nope' not found") != std::string::npos);
}

TEST_CASE("presets: the 530B production scenario gives the run inputs") {
  const auto s = megasim::io::load_scenario(fs::path(MEGASIM_SOURCE_DIR) /
                                            "scenarios/megascale-production-530b.json");
  // TP 8 × PP 35 × DP 43 = 12,040 GPUs at work; 31 servers (248 GPUs) of 12,288 as spares.
  CHECK(s.plan.gpus() == 12040);
  CHECK(*s.reliability.spare_nodes == 31);
  const ReliabilityModel m = megasim::io::reliability_for(s, 8);
  CHECK(m.name == "megascale");
  CHECK(m.checkpoint_interval == Time::from_minutes(10));
  // Unset, the power preset is the device profile's own name.
  const auto device = megasim::io::load_device_profile(fs::path(MEGASIM_SOURCE_DIR) /
                                                       "calibrate/profiles/a100-sxm4-80gb.json");
  const PowerInputs p = megasim::io::power_for(s, device.profile);
  CHECK(p.name == "a100-sxm4-80gb");
  CHECK(p.gpu_in(Activity::kIdle).value() == doctest::Approx(55.0));  // the profile's idle_w
  CHECK(*p.usd_per_gpu_hour == doctest::Approx(1.5));
  const RunSpec spec = megasim::io::run_spec_for(s, 3);
  CHECK(spec.tokens == doctest::Approx(2e12));
  CHECK(spec.trials == 3);
}

TEST_CASE("presets: reliability.failure_rate_scale multiplies every cause's rate") {
  // A planner's own fleet against Llama 3's rates (a user's trial: the rates could only be
  // changed by editing reliability/, 2026-12-07).
  auto s = megasim::io::load_scenario(fs::path(MEGASIM_SOURCE_DIR) /
                                      "scenarios/megascale-production-530b.json");
  const ReliabilityModel base = megasim::io::reliability_for(s, 8);
  CHECK(base.failure_rate_scale == 1.0);
  s.reliability.failure_rate_scale = 2.5;
  const ReliabilityModel scaled = megasim::io::reliability_for(s, 8);
  CHECK(scaled.failure_rate_scale == 2.5);
  REQUIRE(scaled.causes.size() == base.causes.size());
  for (std::size_t i = 0; i < base.causes.size(); ++i) {
    CHECK(scaled.causes[i].rate_per_unit_hour ==
          doctest::Approx(2.5 * base.causes[i].rate_per_unit_hour));
  }
  const StepProfile step = uniform_step(Time::from_seconds(1), 1.0, 12040, 8, 0, Activity::kGemm);
  CHECK(scaled.failures_per_hour(step) == doctest::Approx(2.5 * base.failures_per_hour(step)));
  CHECK(scaled.replacements_per_hour(step) ==
        doctest::Approx(2.5 * base.replacements_per_hour(step)));
}

TEST_CASE("presets: a measured profile's board power is the run's GPU power") {
  // `megasim calibrate` writes NVML figures into the profile's power; the run level takes the
  // GPU's watts by activity from there, and node, switch and grid figures from the preset of
  // the shipped profile it was made from.
  const auto s = megasim::io::load_scenario(fs::path(MEGASIM_SOURCE_DIR) /
                                            "scenarios/megascale-production-530b.json");
  auto measured = megasim::io::load_device_profile(fs::path(MEGASIM_SOURCE_DIR) /
                                                   "calibrate/profiles/a100-sxm4-80gb.json")
                      .profile;
  const PowerInputs shipped = megasim::io::power_for(s, measured);
  measured.base = measured.name;
  measured.name = "a100-measured-here";
  measured.kind = megasim::hw::ProfileKind::kMeasured;
  measured.power.gemm = megasim::Watts(371);
  measured.power.memory = megasim::Watts(262);
  measured.power.communication = megasim::Watts(118);
  measured.power.idle = megasim::Watts(64);
  const PowerInputs p = megasim::io::power_for(s, measured);
  CHECK(p.name == "a100-sxm4-80gb");
  CHECK(p.gpu_in(Activity::kGemm).value() == doctest::Approx(371.0));
  CHECK(p.gpu_in(Activity::kMemory).value() == doctest::Approx(262.0));
  CHECK(p.gpu_in(Activity::kCommunication).value() == doctest::Approx(118.0));
  CHECK(p.gpu_in(Activity::kIdle).value() == doctest::Approx(64.0));
  CHECK(p.gpu_source == "device profile a100-measured-here (measured)");
  CHECK(p.node_overhead == shipped.node_overhead);
}

TEST_CASE("presets: a power preset whose components add up past any server is refused") {
  const std::string error = megasim::test::input_error_of([&] {
    megasim::io::load_power_file(fs::path(MEGASIM_SOURCE_DIR) /
                                 "tests/data/bad/power-overhead-absurd.json");
  });
  CHECK(
      error.find("node_overhead: its components add up to 1.04858e+12 W, more than the 100000 W") !=
      std::string::npos);
}

TEST_CASE("presets: a power preset listing no switch components is refused, not 0 W") {
  const std::string error = megasim::test::input_error_of([&] {
    megasim::io::load_power_file(fs::path(MEGASIM_SOURCE_DIR) /
                                 "tests/data/bad/power-no-switch.json");
  });
  CHECK(error.find("power-no-switch.json: switch: empty: list what draws the power") !=
        std::string::npos);
}

TEST_CASE("presets: a power preset with GPU figures is refused, naming gpu_w") {
  const fs::path dir = fs::temp_directory_path() / "megasim_run_presets_gpu_w";
  fs::create_directories(dir);
  std::ifstream in(fs::path(MEGASIM_SOURCE_DIR) / "power/a100-sxm4-80gb.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  text.insert(text.find("\"node_overhead\""), "\"gpu_w\": {\"idle\": 60}, ");
  std::ofstream(dir / "power.json") << text;
  const std::string error =
      megasim::test::input_error_of([&] { megasim::io::load_power_file(dir / "power.json"); });
  CHECK(error.find("gpu_w: a GPU's power by activity is the device profile's") !=
        std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("presets: a failure-rate file listing a cause twice is refused, naming both rows") {
  // The run counts interruptions by cause: a second row of a name dropped the first's count from
  // --json's interruptions_by_cause (a user's trial, 2026-12-06).
  const fs::path dir = fs::temp_directory_path() / "megasim_run_presets_cause_twice";
  fs::create_directories(dir);
  std::ofstream(dir / "rates.json")
      << R"({"name": "twice", "source": "test", "observed": {"gpus": 8, "gpus_per_node": 8,)"
      << R"( "days": 1, "source": "test"}, "components": [)"
      << R"({"name": "faulty_gpu", "count": 3, "scope": "gpu"},)"
      << R"({"name": "network", "count": 1, "scope": "node"},)"
      << R"({"name": "faulty_gpu", "count": 2, "scope": "gpu"}]})";
  write_preset_naming_rates(dir);
  const std::string error = megasim::test::input_error_of(
      [&] { megasim::io::load_reliability_file(dir / "preset.json"); });
  CHECK(error.find((dir / "rates.json").string() +
                   ": components[2].name: 'faulty_gpu' is components[0]'s cause too") !=
        std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("presets: a failure-rate file's planned stops are read per job, or refused by path") {
  const fs::path dir = fs::temp_directory_path() / "megasim_run_presets_planned";
  fs::create_directories(dir);
  const auto write_rates = [&](const std::string& planned) {
    std::ofstream(dir / "rates.json")
        << R"({"name": "t", "source": "test", "observed": {"gpus": 16, "gpus_per_node": 8,)"
        << R"( "days": 2, "source": "test"}, "components": [)"
        << R"({"name": "faulty_gpu", "count": 3, "scope": "gpu"}])" << planned << "}";
  };
  write_preset_naming_rates(dir);
  write_rates(R"(, "planned": {"count": 6, "source": "a test"})");
  // Six in two days of one job: 0.125 an hour, whatever the job's GPUs.
  CHECK(megasim::io::load_reliability_file(dir / "preset.json").planned_per_hour ==
        doctest::Approx(0.125));
  write_rates("");
  CHECK(megasim::io::load_reliability_file(dir / "preset.json").planned_per_hour == 0.0);
  write_rates(R"(, "planned": {"count": -1, "source": "a test"})");
  const std::string error = megasim::test::input_error_of(
      [&] { megasim::io::load_reliability_file(dir / "preset.json"); });
  CHECK(error.find((dir / "rates.json").string() + ": planned.count: ") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("presets: a failure-rate file with 100,000 components is refused, naming the cap") {
  // The run simulation draws every cause after each event, so 10^5 causes would multiply its
  // time by thousands: the loader accepts at most 256 and says so before reading any.
  const fs::path dir = fs::temp_directory_path() / "megasim_run_presets_many_causes";
  fs::create_directories(dir);
  {
    std::ofstream rates(dir / "rates.json");
    rates << R"({"name": "many", "source": "test", "observed": {"gpus": 8, "gpus_per_node": 8,)"
          << R"( "days": 1, "source": "test"}, "components": [)";
    for (int i = 0; i < 100000; ++i)
      rates << (i ? "," : "") << R"({"name": "c)" << i << R"(", "count": 1, "scope": "gpu"})";
    rates << "]}";
  }
  write_preset_naming_rates(dir);
  const std::string error = megasim::test::input_error_of(
      [&] { megasim::io::load_reliability_file(dir / "preset.json"); });
  CHECK(error.find((dir / "rates.json").string() + ": components: 100000 elements; at most 256 "
                   "are accepted here") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE(
    "presets: a scenario's power preset file is found beside the scenario, wherever megasim runs") {
  // A scenario in a folder of its own names a power preset by file name; megasim runs
  // elsewhere (the test's working directory). Until 2026-12-03 a preset path was taken from the
  // working directory alone, where a model, cluster or device path is also taken from the
  // scenario's folder.
  const fs::path dir = fs::temp_directory_path() / "megasim_run_presets_beside";
  fs::create_directories(dir);
  fs::copy_file(fs::path(MEGASIM_SOURCE_DIR) / "power/a100-sxm4-80gb.json", dir / "my-power.json",
                fs::copy_options::overwrite_existing);
  REQUIRE_FALSE(fs::exists(fs::current_path() / "my-power.json"));
  megasim::io::Scenario s = megasim::io::load_scenario(
      fs::path(MEGASIM_SOURCE_DIR) / "scenarios/megascale-175b-12288.json", {});
  s.file = dir / "scenario.json";
  s.power.preset = "my-power.json";
  CHECK(megasim::io::scenario_power_preset(s).name == "a100-sxm4-80gb");
  fs::remove_all(dir);
}

TEST_CASE(
    "presets: a failure table of no component is refused, and every preset file takes a schema "
    "key") {
  // An empty table ran a run without failures under a preset that names one (until
  // 2026-12-06); "$schema", which the scenario, model, cluster and device files take, was an
  // unknown key in the reliability, failure-rate and power files.
  const fs::path dir = fs::temp_directory_path() / "megasim_run_presets_empty_table";
  fs::create_directories(dir);
  const auto table = [&](const std::string& components) {
    std::ofstream(dir / "rates.json")
        << R"({"$schema": "x", "name": "t", "source": "test", "observed": {"gpus": 8,)"
        << R"( "gpus_per_node": 8, "days": 1, "source": "test"}, "components": [)" << components
        << "]}";
    write_preset_naming_rates(dir);
  };
  table("");
  const std::string error = megasim::test::input_error_of(
      [&] { megasim::io::load_reliability_file(dir / "preset.json"); });
  CHECK(error.find("rates.json: components: no component: a failure table lists the causes it "
                   "counted (a run without failures is reliability.preset \"none\")") !=
        std::string::npos);
  table(R"({"name": "gpu", "count": 1, "scope": "gpu"})");
  CHECK(megasim::io::load_reliability_file(dir / "preset.json").causes.size() == 1);
  std::ifstream in(fs::path(MEGASIM_SOURCE_DIR) / "power/a100-sxm4-80gb.json");
  std::string power((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  power.insert(power.find('{') + 1, R"("$schema": "x", )");
  std::ofstream(dir / "power.json") << power;
  CHECK(megasim::io::load_power_file(dir / "power.json").name == "a100-sxm4-80gb");
  fs::remove_all(dir);
}
