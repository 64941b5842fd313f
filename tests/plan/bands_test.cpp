// Error bands from validation residuals (plan/bands.h), worked by hand.
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "engine/error.h"
#include "plan/bands.h"

using namespace megasim::plan;

namespace {

ResidualRow row(std::string name, std::string source, std::string family, long gpus, double r) {
  return ResidualRow{std::move(name), std::move(source), std::move(family), gpus, r};
}

}  // namespace

TEST_CASE("bands: a residual is the step time's, whatever the metric") {
  // Time predicted 10 s against 8 s published: the step is 25 % too long. A throughput
  // predicted 200 against 160 published (25 % too high) means a step 20 % too short.
  CHECK(step_time_residual("iteration_time_s", 10.0, 8.0) == doctest::Approx(0.25));
  CHECK(step_time_residual("tflops_per_gpu_hw", 200.0, 160.0) == doctest::Approx(-0.2));
  CHECK(step_time_residual("mfu", 0.5, 0.5) == doctest::Approx(0.0));
  CHECK(source_of_run("sc21-t2-ptdp-175b-384") == "sc21");
  CHECK(source_of_run("korthikanti-175b") == "korthikanti");
}

TEST_CASE("bands: a row at exactly 8x or an eighth of the GPUs is near, one past it is not") {
  // 256 GPUs: 32 and 2,048 are within the factor (inclusive), 31 and 2,049 outside it (the
  // boundary was held only by the goldens until 2026-12-06, a mutation test's find).
  const std::vector<ResidualRow> rows = {
      row("low", "p1", "megatron-lm", 32, -0.01), row("high", "p1", "megatron-lm", 2048, 0.02),
      row("mid", "p1", "megatron-lm", 256, 0.0), row("under", "p1", "megatron-lm", 31, -0.5),
      row("over", "p1", "megatron-lm", 2049, 0.5)};
  const Band b = band_for(rows, "megatron-lm", 256, "");
  CHECK(b.rule == "megatron-lm rows within 8x the GPUs");
  CHECK(b.basis == std::vector<std::string>{"low", "high", "mid"});
  CHECK(b.low == doctest::Approx(-0.01));
  CHECK(b.high == doctest::Approx(0.02));
}

TEST_CASE("bands: the family's rows near the scale, then at any scale, then every row") {
  const std::vector<ResidualRow> rows = {
      row("a", "p1", "megatron-lm", 64, -0.02), row("b", "p1", "megatron-lm", 256, 0.03),
      row("c", "p2", "megatron-lm", 512, 0.01), row("d", "p2", "megatron-lm", 8192, -0.08),
      row("e", "p3", "megascale", 256, 0.05), row("g", "p4", "deepspeed", 256, 0.60)};
  // 256 GPUs: a, b, c are within 8x (32..2048); d is not. Band [-0.02, 0.03].
  Band b = band_for(rows, "megatron-lm", 256, "");
  CHECK(b.basis == std::vector<std::string>{"a", "b", "c"});
  CHECK(b.low == doctest::Approx(-0.02));
  CHECK(b.high == doctest::Approx(0.03));
  // Leaving out p1 leaves c alone near 256 and c, d in the family: fewer than three, so every
  // row not of p1 of a family within 8 % (mean |residual|: megatron-lm 0.035, megascale 0.05,
  // deepspeed 0.60, left out): c, d, e. Band [-0.08, 0.05], not [-0.08, 0.60].
  b = band_for(rows, "megatron-lm", 256, "p1");
  CHECK(b.rule == "rows of the families whose mean error is within 8 %");
  CHECK(b.basis == std::vector<std::string>{"c", "d", "e"});
  CHECK(b.low == doctest::Approx(-0.08));
  CHECK(b.high == doctest::Approx(0.05));
  // At 8192 GPUs only d is near: the family at any scale, a to d.
  b = band_for(rows, "megatron-lm", 8192, "");
  CHECK(b.rule == "megatron-lm rows at any scale");
  CHECK(b.basis.size() == 4);
}

TEST_CASE("bands: coverage counts the rows whose residual lies in the band of the other sources") {
  // Three sources of two rows each, one family at one scale. p1's band comes from p2 and p3:
  // [-0.01, 0.04]; a (0.0) is inside, b (0.06) is not. p2's from p1, p3: [-0.01, 0.06]: both
  // inside. p3's from p1, p2: [0.0, 0.06]: e (0.04) inside, f (-0.01) not. 4 of 6; widths
  // 0.05, 0.07, 0.06: median 0.06.
  const std::vector<ResidualRow> rows = {
      row("a", "p1", "m", 64, 0.0),   row("b", "p1", "m", 64, 0.06), row("c", "p2", "m", 64, 0.01),
      row("d", "p2", "m", 64, 0.02),  row("e", "p3", "m", 64, 0.04), row("f", "p3", "m", 64, -0.01)};
  const Coverage c = band_coverage(rows);
  CHECK(c.rows == 6);
  CHECK(c.covered == 4);
  CHECK(c.median_width == doctest::Approx(0.06));
  // The step band's widths: 1/(1-0.01) - 1/1.04 = 0.0486, 1/0.99 - 1/1.06 = 0.0667,
  // 1 - 1/1.06 = 0.0566: median 0.0566.
  CHECK(c.median_step_width == doctest::Approx(1.0 - 1.0 / 1.06));
}

TEST_CASE("bands: the source left out does not vouch for its family either") {
  // Family "x": p1's three rows are right (0.0), p2's one is 30 % off. With p1, x's mean
  // |residual| is 0.3 / 4 = 0.075, within 8 %; without p1 it is 0.3. A prediction of family "y"
  // (no rows) that leaves p1 out must not borrow p2's 0.3 on the strength of p1's own rows.
  const std::vector<ResidualRow> rows = {row("a", "p1", "x", 64, 0.0), row("b", "p1", "x", 64, 0.0),
                                         row("c", "p1", "x", 64, 0.0), row("d", "p2", "x", 64, 0.3),
                                         row("e", "p3", "z", 64, 0.02)};
  Band b = band_for(rows, "y", 64, "");
  CHECK(b.rule == "rows of the families whose mean error is within 8 %");
  CHECK(b.basis.size() == 5);
  // Without p1 only e is left, and one row draws no band (its residual alone is a band of no
  // width, which a validation of a few scenarios scored as missing every row).
  b = band_for(rows, "y", 64, "p1");
  CHECK(b.basis.empty());
  // With a second row of family z, f, the two draw none either: two residuals gave a band as
  // narrow as their difference (until 2026-12-07); a third, g, draws one.
  std::vector<ResidualRow> more = rows;
  more.push_back(row("f", "p4", "z", 64, -0.01));
  CHECK(band_for(more, "y", 64, "p1").basis.empty());
  more.push_back(row("g", "p5", "z", 64, 0.0));
  b = band_for(more, "y", 64, "p1");
  CHECK(b.basis == std::vector<std::string>{"e", "f", "g"});
  CHECK(b.low == doctest::Approx(-0.01));
  CHECK(b.high == doctest::Approx(0.02));
}

TEST_CASE("bands: a band drawn at any scale names its nearest row where none ran within 8x") {
  // Three rows of family x at 256, 512 and 64 GPUs. At 12,288 none is within 8x: the band is
  // the family's at any scale and says the nearest ran 24x fewer (512). At 2,048 the 256 and
  // 512 rows are within 8x (two, so the band is still the family's at any scale) and nothing
  // is said; at 8 GPUs the 64 row is within 8x, exactly, and nothing is said either; at 4 GPUs
  // the nearest, 64, is 16x more.
  const std::vector<ResidualRow> rows = {row("a", "p1", "x", 256, 0.01),
                                         row("b", "p2", "x", 512, -0.02),
                                         row("c", "p3", "x", 64, 0.03)};
  const auto caveats = [&](std::int64_t gpus) {
    return band_caveats(rows, band_for(rows, "x", gpus, ""), {gpus, "", false});
  };
  CHECK(band_for(rows, "x", 12288, "").rule == "x rows at any scale");
  CHECK(caveats(12288) ==
        std::vector<std::string>{"none ran within 8x its GPUs: the nearest on 512, 24x fewer"});
  CHECK(caveats(2048).empty());
  CHECK(caveats(8).empty());
  CHECK(caveats(4) ==
        std::vector<std::string>{"none ran within 8x its GPUs: the nearest on 64, 16x more"});
  // Just past 8x, the factor keeps its decimals (7 GPUs: the 64 row is 9.14x more).
  CHECK(caveats(7) ==
        std::vector<std::string>{"none ran within 8x its GPUs: the nearest on 64, 9.14x more"});
  // With FP8 the scale's caveat follows FP8's.
  const Band far = band_for(rows, "x", 12288, "");
  CHECK(band_caveats(rows, far, {12288, "", true}) ==
        std::vector<std::string>{"none runs FP8",
                                 "none ran within 8x its GPUs: the nearest on 512, 24x fewer"});
}

TEST_CASE("bands: a band from rows of other GPUs or of 16-bit GEMMs says so") {
  // Three A100 rows of family x and an H100 row of family w. A prediction of x on an H200 draws
  // from the A100 rows and says none ran on its GPUs; on an A100, nothing to say; a row whose
  // GPU is not known (an older residuals file) may have run on it.
  std::vector<ResidualRow> rows = {row("a", "p1", "x", 64, 0.01), row("b", "p2", "x", 64, -0.02),
                                   row("c", "p3", "x", 64, 0.03), row("d", "p4", "w", 64, 0.1)};
  for (std::size_t i = 0; i < 3; ++i) rows[i].gpu = "a100";
  rows[3].gpu = "h100";
  const Band b = band_for(rows, "x", 64, "");
  REQUIRE(b.basis.size() == 3);
  CHECK(band_caveats(rows, b, {64, "h200", false}) ==
        std::vector<std::string>{"none ran on H200 GPUs"});
  CHECK(band_caveats(rows, b, {64, "a100", false}).empty());
  CHECK(band_caveats(rows, b, {64, "", false}).empty());  // a device whose GPU is not known
  CHECK(band_caveats(rows, b, {64, "a100", true}) == std::vector<std::string>{"none runs FP8"});
  rows[1].gpu.clear();
  CHECK(band_caveats(rows, b, {64, "h200", false}).empty());
  // The GPU family of a profile: its part's, from its name or else its base's. A name's
  // letter and digits are no family ("rack-b12-measured" of an H100 read as a B12 until a
  // reviewer's trial of 2026-12-07).
  const auto family = [](const char* name, const char* base) {
    megasim::hw::DeviceProfile p;
    p.name = name;
    p.base = base;
    return gpu_family(p);
  };
  CHECK(family("h200-sxm-141gb-measured", "h200-sxm-141gb") == "h200");
  CHECK(family("my-node-measured", "a100-sxm4-80gb") == "a100");
  CHECK(family("rack-b12-measured", "h100-sxm5-80gb") == "h100");
  CHECK(family("DGX-A100-measured", "") == "a100");
  CHECK(family("my-node", "").empty());
}

TEST_CASE("bands: a residuals file with a wrong type or an impossible residual is refused") {
  namespace fs = std::filesystem;
  const fs::path file = fs::temp_directory_path() / "megasim_bands_residuals.json";
  const std::string good = R"("scenario": "a", "source": "p1", "family": "m")";
  const std::pair<std::string, std::string> cases[] = {
      {R"("gpus": "384", "step_time_residual": 0.1)", "rows[0].gpus: not a whole number"},
      {R"("gpus": 384, "step_time_residual": null)", "rows[0].step_time_residual: not a number"},
      {R"("gpus": 384, "step_time_residual": -1.0)", "is not above -1"},
      {R"("gpus": 0, "step_time_residual": 0.1)", "rows[0].gpus: not a whole number"}};
  for (const auto& [fields, fragment] : cases) {
    CAPTURE(fields);
    std::ofstream(file) << "{\"rows\": [{" << good << ", " << fields << "}]}";
    try {
      (void)load_residuals(file);
      FAIL("accepted");
    } catch (const megasim::InputError& e) {
      CHECK(std::string(e.what()).find(fragment) != std::string::npos);
      CHECK(std::string(e.what()).find(file.string()) != std::string::npos);
    }
  }
  fs::remove(file);
}

TEST_CASE(
    "bands: a Megatron-LM system running MegaScale's own optimisations is MegaScale's family") {
  // MegaScale's Table 3 builds its system on Megatron-LM one switch at a time: those rows lent
  // their errors to Megatron-LM's bands until 2026-12-05. DP overlap alone is PyTorch DDP's too.
  const auto family = [](const std::string& preset, const char* on) {
    megasim::io::Scenario s;
    s.optimizations.preset = preset;
    for (std::size_t i = 0; i < megasim::step::kSwitches.size(); ++i) {
      if (on != nullptr && std::string(megasim::step::kSwitches[i].key) == on) {
        s.optimizations.overrides.switches[i] = true;
      }
    }
    return system_family(s);
  };
  CHECK(family("megatron-lm", nullptr) == "megatron-lm");
  CHECK(family("megatron-lm", "dp_overlap") == "megatron-lm");
  for (const char* on : {"parallel_block", "sliding_window", "tp_overlap", "pp_overlap",
                         "efficient_operators", "misc", "lamb"}) {
    CAPTURE(on);
    CHECK(family("megatron-lm", on) == "megascale");
  }
  CHECK(family("megascale", nullptr) == "megascale");
  CHECK(family("deepspeed", "tp_overlap") == "deepspeed");
  // A switch set off is no MegaScale optimisation run.
  megasim::io::Scenario off;
  off.optimizations.overrides.switches[0] = false;
  CHECK(system_family(off) == "megatron-lm");
  // The same parts written as the plan's optimizer or the attention kernel run the same system
  // (they were Megatron-LM's rows, the lamb and efficient_operators switches MegaScale's: one
  // step, two bands, until 2026-12-06).
  megasim::io::Scenario lamb;
  lamb.plan.optimizer = megasim::workload::Optimizer::kLamb;
  CHECK(system_family(lamb) == "megascale");
  megasim::io::Scenario flash2;
  flash2.optimizations.overrides.attention = megasim::step::AttentionKernel::kFlashV2;
  CHECK(system_family(flash2) == "megascale");
  flash2.optimizations.preset = "megatron-core";
  CHECK(system_family(flash2) == "megatron-core");
  megasim::io::Scenario flash1;
  flash1.optimizations.overrides.attention = megasim::step::AttentionKernel::kFlashV1;
  CHECK(system_family(flash1) == "megatron-lm");
}
