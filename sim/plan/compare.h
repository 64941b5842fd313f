// `megasim compare`: every combination of the varied scenario keys, evaluated side by side at
// the step level. A combination that cannot run (a plan/model clash, memory over capacity) is
// a row with its reason; a scenario that cannot be read at all is an InputError. When tp, cp or
// pp varies and dp is given neither by --vary nor by --set, dp is derived so that every variant
// runs on the scenario's GPU count, that of the scenario with --set applied (--set plan.pp=4 on
// a TP 8 × PP 8 × DP 4 scenario makes it 8 × 4 × 4 = 128 GPUs, as simulate would run it; the
// text says the count every variant runs on); a tp × cp × pp that does not divide it is a row
// with its reason.
#pragma once

#include <cmath>

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/units.h"
#include "io/files_read.h"
#include "io/inputs.h"
#include "plan/work_bounds.h"
#include "step/step_model.h"
#include "workload/parallel_plan.h"

namespace megasim::plan {

// Most combinations one compare evaluates.
constexpr std::size_t kMaxCombinations = 4096;

struct Axis {
  std::string path;  // a scenario key, "plan.tp"
  std::vector<std::string> values;
};

// "plan.tp=4,8" → {"plan.tp", {"4", "8"}}; InputError, naming `option`, for anything else
// (a value listed twice, in any spelling of it, included).
Axis parse_axis(const std::string& spec, const std::string& option = "--vary");
// The combinations of `axes` (the product of their value counts); InputError when there are
// none or more than kMaxCombinations, found without overflowing however many axes are given.
std::size_t count_combinations(const std::vector<Axis>& axes);

struct Variant {
  std::vector<std::pair<std::string, std::string>> set;  // (path, value), in axis order
  std::string label;                                     // "tp=4 pp=8"
  std::optional<step::StepPrediction> step;              // when feasible
  std::string reason;                                    // when not
  workload::ParallelPlan plan;                           // when feasible: as it ran
  Bytes device_memory;                                   // when feasible: one GPU's capacity
  // Feasible and no other feasible variant is at least as fast with at least as much memory
  // headroom and strictly better in one of the two.
  bool pareto = false;
  // What simulate would warn of (a device profile of another part than the cluster's GPUs).
  std::string warning;
  // compare's own --set keys that apply nothing in this variant (keys_written_that_do_not_run),
  // when feasible: said where every feasible variant has them.
  std::vector<std::string> sets_not_run;
};

// The first axis varies fastest. Each variant's step is held to `limits` (simulate's
// --max-events and --max-memory); one past them is a row with the refusal as its reason.
std::vector<Variant> compare(const std::filesystem::path& scenario,
                             const std::vector<std::string>& overrides,
                             const std::vector<Axis>& axes, io::FilesRead* read = nullptr,
                             const WorkLimits& limits = {});

// Values of one axis that ran to the same step (time, MFU, tokens, memory and the device's
// capacity all equal; not the power, which compare does not show) with
// every other axis the same: a value the scenario does not use (a window longer than the
// sequence, a key a system switch overrides), found by its effect rather than case by case.
// One line per axis and set of such values, "optimizations.attention_window=4096, 8192".
std::vector<std::string> values_alike(const std::vector<Variant>& variants);

// compare's --set keys that apply nothing (keys_written_that_do_not_run's lines) in every
// variant that ran: one that applies in some variant is not among them (a key inert at VPP 1
// and priced at VPP 2). Said by simulate alone until 2026-12-08, a review's find.
std::vector<std::string> sets_not_run_in_all(const std::vector<Variant>& variants);

// Throws InputError when a value set (path, value), or one inside an object set whole, does
// not run as written because a system switch overrides it (plan.optimizer under the lamb
// switch, optimizations.attention under efficient_operators: io::Inputs::keys_not_run).
// check_sets_run does it for --set's "PATH=VALUE" overrides.
// `off`: switches some other system in play runs off (a search's --fix/--vary of them), under
// which the key does run: not refused.
void check_values_run(const std::vector<std::pair<std::string, std::string>>& set,
                      const io::Inputs& in, const std::vector<std::string>& off = {});
void check_sets_run(const std::vector<std::string>& overrides, const io::Inputs& in,
                    const std::vector<std::string>& off = {});
// A line each to say for the keys written that do not run as written and are not refused: a
// key --set writes that applies nothing (optimizations.attention_window with sliding_window
// off), and the file's own keys a system switch overrides.
std::vector<std::string> keys_written_that_do_not_run(const std::vector<std::string>& overrides,
                                                      const io::Inputs& in);

// The variant's largest memory per GPU over its stages, in GiB.
double peak_memory_gib(const step::StepPrediction& p);
// Device memory less the peak memory per GPU, in GiB (feasible variants). The peak includes
// the fragmentation margin, so a tight variant's is below 0.
double memory_headroom_gib(const Variant& v);
// Headroom as the reports print it (0.1 GiB), which the Pareto fronts compare: 0.0007 GiB more
// room (139.80072 against 139.8 GiB of memory) kept a row 4.3 % slower with the same printed
// room on the front (a user's trial, 2026-12-06).
inline double shown_gib(double gib) {
  return std::round(gib * 10.0) / 10.0;
}
// A feasible variant with a stage that fits only without the fragmentation margin
// (workload::Fit::kTight), and none over the device.
bool tight(const Variant& v);
// A variant simulated with a stage over the device memory: only a variant of a validation
// scenario whose publication ran its plan (validation.allow_oom) gets one, and only when it is
// over its device by no more than that plan is (plan::assemble_workload).
bool over_device(const Variant& v);
// Sets `pareto` on every variant: the front of tokens a second (higher) against memory
// headroom (higher).
void mark_pareto_front(std::vector<Variant>& variants);
// Exposed TP, PP and DP communication of the critical stage.
Time exposed_comm(const step::StepPrediction& p);

}  // namespace megasim::plan
