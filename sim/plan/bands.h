// An error band on a prediction, from how far megasim was off on published runs like it.
//
// Every validation row gives a step-time residual r = predicted step time / true step time − 1
// (a throughput metric, MFU or TFLOP/s, is the inverse of a time). A prediction's band is the
// range of the residuals of its basis: the rows of the same system family (system_family:
// the scenario's optimisation preset, or MegaScale's for Megatron-LM running any of MegaScale's
// optimisations) within a factor of 8 in GPU count; with fewer than three of those, the
// family's rows at any scale; with fewer still, every row of the families megasim predicts
// within 8 % (their rows' mean |residual|: a family not yet validated, such as the DeepSpeed
// rows of 2021, lends its errors to no other); a basis of one row draws no band (its residual
// alone is a band of no width). Rows of the source being predicted
// (the publication a validation scenario reproduces) are left out, so a row never vouches for
// itself. The true step time then lies in [T / (1 + max r), T / (1 + min r)], and the MFU in
// [MFU · (1 + min r), MFU · (1 + max r)]: as wide as megasim's errors on those rows, no wider.
// `validate` measures the bands' coverage: how many published rows fall inside their band.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "hw/device_profile.h"
#include "io/files_read.h"
#include "io/scenario.h"

namespace megasim::plan {

struct ResidualRow {
  std::string scenario, source, family;
  std::int64_t gpus = 0;
  double residual = 0;  // predicted step time over the true one, less 1
  std::string gpu = {};  // the GPU family it ran on (gpu_family: "a100"); "" where not known
  // The published measurement its figure is (a run, and a chain's step): rows of one
  // measurement (a run's iteration time and MFU) count as one in coverage; "" = its own.
  std::string measurement = {};
};

struct Band {
  double low = 0, high = 0;         // least and largest residual of the basis
  std::vector<std::string> basis;   // the scenarios of its rows
  std::string rule;                 // which selection gave them
  // What the basis does not share with the prediction ("none runs FP8", "none ran on H200
  // GPUs"): the band is drawn all the same, from rows unlike it in that.
  std::vector<std::string> caveats;
};

// The GPU family a device profile runs (hw::gpu_part of its part's name: "a100", "h100",
// "h200"), "" where neither its name nor its base's names one.
std::string gpu_family(const hw::DeviceProfile& device);

// What a band is drawn for: the prediction's GPUs, their family ("a100"; "" not known) and
// whether it runs FP8 GEMMs.
struct BandTarget {
  std::int64_t gpus = 0;
  std::string gpu = {};
  bool fp8 = false;
};
// The caveats of band `b` (drawn from `rows`) for `target`: no published row runs FP8; none of
// the basis's rows ran within 8x its GPUs (the nearest named); none of them may have run on its
// GPU (a row whose GPU is not known may have; a target whose GPU is not known draws no caveat).
std::vector<std::string> band_caveats(const std::vector<ResidualRow>& rows, const Band& b,
                                      const BandTarget& target);

// The family whose rows a scenario's band rests on: its optimisation preset, except that the
// megatron-lm preset running any of MegaScale's own optimisations (parallel block, sliding
// window, TP and PP overlap, efficient operators, misc, LAMB; not DP overlap, which PyTorch's
// DDP gave SC'21's Megatron-LM too) is MegaScale's system, in part, as
// MegaScale's Table 3 builds it on Megatron-LM a switch at a time: its chain's rows lent their
// errors to Megatron-LM's bands until 2026-12-05 (its last row is MegaScale's whole system).
std::string system_family(const io::Scenario& s);

// The publication a run id belongs to: its first word ("sc21-t2-..." -> "sc21").
std::string source_of_run(const std::string& run);
// r from a metric's predicted and published values.
double step_time_residual(const std::string& metric, double predicted, double published);

Band band_for(const std::vector<ResidualRow>& rows, const std::string& family, std::int64_t gpus,
              const std::string& exclude_source);

// The rows of a `megasim validate --json` output (validation/residuals.json); InputError
// naming the file when it does not hold them.
std::vector<ResidualRow> load_residuals(const std::filesystem::path& file,
                                        io::FilesRead* read = nullptr);

struct Coverage {
  std::size_t rows = 0, covered = 0;
  // Counted once a measurement: each measurement counts one, shared by its rows, so one
  // whose rows lie inside and outside counts as the share inside.
  std::size_t measurements = 0;
  double measurements_covered = 0;
  // The bands' median widths: high − low, the MFU band's width over the predicted MFU; and
  // 1 / (1 + low) − 1 / (1 + high), the step-time band's over the predicted step time.
  double median_width = 0;
  double median_step_width = 0;
};
// One row's band (from `rows`, its own source left out): whether its residual lies inside, and
// the band's widths as Coverage counts them; nullopt when the band has no basis.
struct BandCheck {
  bool covered = false;
  double width = 0, step_width = 0;
  std::string measurement = {};  // the row's (its scenario where it names none)
};
std::optional<BandCheck> check_band(const std::vector<ResidualRow>& rows, const ResidualRow& r);
Coverage coverage_of(const std::vector<BandCheck>& checks);
// Each row's band from the other sources' rows, and whether its truth lies inside.
Coverage band_coverage(const std::vector<ResidualRow>& rows);

}  // namespace megasim::plan
