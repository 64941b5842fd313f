#include "plan/compare.h"

#include <algorithm>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "engine/error.h"
#include "io/cluster_loader.h"
#include "io/device_profile_loader.h"
#include "io/inputs.h"
#include "io/json_reader.h"
#include "io/model_loader.h"
#include "io/resolve.h"
#include "io/scenario.h"
#include "plan/evaluate.h"
#include "workload/memory.h"

namespace megasim::plan {

namespace {

// The next comma that separates values: outside brackets, braces and quotes, so that a JSON
// array or object is one value (plan.layer_split=[24,24],[20,28]).
std::size_t next_separator(const std::string& spec, std::size_t start) {
  int depth = 0;
  bool quoted = false;
  for (std::size_t i = start; i < spec.size(); ++i) {
    const char c = spec[i];
    if (quoted) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        quoted = false;
    } else if (c == '"') {
      quoted = true;
    } else if (c == '[' || c == '{') {
      ++depth;
    } else if (c == ']' || c == '}') {
      --depth;
    } else if (c == ',' && depth <= 0) {
      return i;
    }
  }
  return std::string::npos;
}

}  // namespace

Axis parse_axis(const std::string& spec, const std::string& option) {
  const auto eq = spec.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) {
    throw InputError(option + " " + spec + ": expected PATH=V1,V2,... e.g. " + option +
                     " plan.tp=4,8");
  }
  Axis a{spec.substr(0, eq), {}};
  // Two spellings of one value (2 and 2.0, "2" and 2) are one value, as --set reads them.
  std::vector<io::Json> seen;
  std::size_t start = eq + 1;
  for (;;) {
    const auto comma = next_separator(spec, start);
    const std::string v = spec.substr(start, comma == std::string::npos ? comma : comma - start);
    if (v.empty()) throw InputError(option + " " + spec + ": empty value in the list");
    const io::Json j = io::Json::parse(v, nullptr, false);
    const io::Json value = j.is_discarded() ? io::Json(v) : j;
    if (std::find(seen.begin(), seen.end(), value) != seen.end()) {
      throw InputError(option + " " + spec + ": '" + v +
                       "' is listed twice (each plan would be run, and ranked, twice)");
    }
    seen.push_back(value);
    a.values.push_back(v);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return a;
}

std::size_t count_combinations(const std::vector<Axis>& axes) {
  if (axes.empty()) throw InputError("compare: give at least one --vary PATH=V1,V2,...");

  // Checked axis by axis: 65 axes of two values would wrap a 64-bit product to 0.
  double combos = 1.0;
  for (const auto& a : axes) {
    combos *= static_cast<double>(a.values.size());
    if (combos > static_cast<double>(kMaxCombinations)) {
      throw InputError(fmt::format("compare: {} --vary axes give more than {} combinations ({:.3g} "
                                   "or more); at most {} are evaluated",
                                   axes.size(), kMaxCombinations, combos, kMaxCombinations));
    }
  }
  return static_cast<std::size_t>(combos);
}

namespace {

// dp is derived from the GPU count when tp, cp or pp varies and neither --vary nor --set gives
// dp.
bool derives_dp(const std::vector<std::string>& overrides, const std::vector<Axis>& axes) {
  bool varies_split = false;
  for (const auto& a : axes) {
    if (a.path == "plan.dp") return false;
    if (a.path == "plan.tp" || a.path == "plan.cp" || a.path == "plan.pp") varies_split = true;
  }
  for (const auto& o : overrides) {
    if (o.rfind("plan.dp=", 0) == 0) return false;
  }
  return varies_split;
}

// A model, cluster or device that is not there, or does not read, is bad in every variant
// that names it: refused before any runs (a variant with a model file of broken JSON was an
// "infeasible" row, the command's exit 0, until 2026-12-05).
void check_references(const std::filesystem::path& scenario, const std::vector<Axis>& axes) {
  const std::pair<const char*, io::DataKind> references[] = {{"model", io::DataKind::kModel},
                                                             {"cluster", io::DataKind::kCluster},
                                                             {"device", io::DataKind::kDevice}};
  for (const auto& a : axes) {
    for (const auto& [key, kind] : references) {
      if (a.path != key) continue;
      std::vector<std::pair<std::string, std::filesystem::path>> seen;
      for (const auto& value : a.values) {
        const auto file = io::resolve_data_file(value, kind, scenario.parent_path(),
                                                "--vary " + a.path, "'" + value + "'");
        // One file by a name and by its path: two rows alike under two labels (until
        // 2026-12-05; the same value twice was refused already).
        for (const auto& [other, other_file] : seen) {
          std::error_code ec;
          if (std::filesystem::equivalent(file, other_file, ec)) {
            throw InputError(
                fmt::format("--vary {}: '{}' and '{}' name the same file ({}); give "
                            "it once",
                            a.path, other, value, file.string()));
          }
        }
        seen.emplace_back(value, file);
        try {
          if (kind == io::DataKind::kModel) (void)io::load_model(file);
          if (kind == io::DataKind::kCluster) (void)io::load_cluster(file);
          if (kind == io::DataKind::kDevice) (void)io::load_device_profile(file);
        } catch (const InputError& e) {
          throw InputError(fmt::format("--vary {}: '{}': {}", a.path, value, e.what()));
        }
      }
    }
  }
}

// What is the user's error in every variant it is in: an axis given twice or beside a
// --set of its key, and a value its key never takes.
void check_axes(const std::filesystem::path& scenario, const std::vector<std::string>& overrides,
                const std::vector<Axis>& axes) {
  for (std::size_t i = 0; i < axes.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (axes[i].path == axes[j].path) {
        throw InputError("--vary " + axes[i].path +
                         ": given twice; list every value in one --vary");
      }
    }
  }
  // compare prices the step: the run level's keys would change no column.
  // An object varied whole and a key inside it varied apart: each variant would set the key
  // twice (every variant was refused as clashing, 2026-12-05).
  for (const auto& a : axes) {
    for (const auto& b : axes) {
      if (a.path != b.path && io::path_within(b.path, a.path)) {
        throw InputError("--vary " + b.path + " and --vary " + a.path +
                         ": the second sets the "
                         "whole of what the first sets a key of; vary one of them");
      }
    }
  }
  for (const auto& a : axes) {
    for (const char* level : {"run", "reliability", "power"}) {
      if (io::path_within(a.path, level)) {
        throw InputError("--vary " + a.path + ": compare prices the step, which " + level +
                         " keys do not change; run simulate with --set " + a.path +
                         "=… for each value");
      }
    }
  }
  // The scenario's labels and its validation row change no number either (a trial's
  // `--vary name=a,b` printed two identical rows, both on the Pareto front).
  for (const auto& a : axes) {
    for (const char* label : {"$schema", "name", "description", "assumptions", "validation"}) {
      if (io::path_within(a.path, label)) {
        throw InputError("--vary " + a.path + ": " + label +
                         " labels the scenario and changes no figure of its step; vary a "
                         "plan, optimizations, model, cluster or device key");
      }
    }
  }
  for (const auto& a : axes) {
    for (const auto& o : overrides) {
      const std::string set = o.substr(0, o.find('='));
      if (io::path_within(set, a.path) || io::path_within(a.path, set)) {
        throw InputError("--vary " + a.path + ": also given by --set " + o +
                         "; give the key in one of them");
      }
    }
  }
  // A value its key never takes: a string for an integer, a recompute that is not one.
  for (const auto& a : axes) {
    for (const auto& value : a.values) {
      std::vector<std::string> sets = overrides;
      sets.push_back(a.path + "=" + value);
      try {
        (void)io::load_scenario(scenario, sets);
      } catch (const ValueError& e) {
        throw InputError(fmt::format("--vary {}: '{}': {}", a.path, value, e.detail()));
      } catch (const InputError& e) {
        // The axis's own key unknown, or its path through a value that is no object, is the
        // axis's fault: named as --vary (until 2026-12-06 the first named no option, the
        // second --set).
        const std::string what = e.what();
        const std::string own = "--set " + a.path + "=" + value + ": ";
        if (what.rfind(own, 0) == 0) {
          throw InputError(
              fmt::format("--vary {}: '{}': {}", a.path, value, what.substr(own.size())));
        }
        if (what.find(a.path + ": unknown key") != std::string::npos) {
          throw InputError(fmt::format("--vary {}: {}", a.path, what));
        }
        // Another key's rule (vpp against schedule, zero2 against zero3): a plan the other
        // axes' values may make whole, judged variant by variant below.
      }
    }
  }
  check_references(scenario, axes);
}

}  // namespace

// A varied value the variant does not run, because a system switch decides it: such a row
// would be labelled with a value it was not priced with (until 2026-12-05 `--vary
// plan.optimizer=adam,lamb` under MegaScale's preset printed two LAMB rows, one called adam;
// simulate --set took it silently until the next session, and an object set whole, e.g.
// `optimizations={...}`, until the fortieth). io::load_inputs finds the keys by effect.
void check_values_run(const std::vector<std::pair<std::string, std::string>>& set,
                      const io::Inputs& in, const std::vector<std::string>& off) {
  for (const auto& [path, value] : set) {
    for (const io::KeyNotRun& k : in.keys_not_run) {
      if (!k.overridden || !io::path_within(k.path, path)) continue;
      if (std::find(off.begin(), off.end(), k.by) != off.end()) continue;
      if (path == k.path) throw InputError(fmt::format("{}={} {}", path, value, k.why));
      throw InputError(fmt::format("{}: {}={} {}", path, k.path, k.written, k.why));
    }
  }
}

std::vector<std::pair<std::string, std::string>> split_sets(
    const std::vector<std::string>& overrides) {
  std::vector<std::pair<std::string, std::string>> set;
  for (const std::string& o : overrides) {
    const auto eq = o.find('=');
    if (eq != std::string::npos) set.emplace_back(o.substr(0, eq), o.substr(eq + 1));
  }
  return set;
}

void check_sets_run(const std::vector<std::string>& overrides, const io::Inputs& in,
                    const std::vector<std::string>& off) {
  try {
    check_values_run(split_sets(overrides), in, off);
  } catch (const InputError& e) {
    throw InputError(fmt::format("--set {}", e.what()));
  }
}

// The keys --set writes that are run but apply nothing, and the file's own keys a switch
// overrides: said, not refused (in compare a row of them is still a true row; values_alike
// says it there). --set's own overridden keys are refused before (check_sets_run).
std::vector<std::string> keys_written_that_do_not_run(const std::vector<std::string>& overrides,
                                                      const io::Inputs& in) {
  std::vector<std::string> lines;
  const auto set = split_sets(overrides);
  for (const io::KeyNotRun& k : in.keys_not_run) {
    const auto by = std::find_if(set.begin(), set.end(),
                                 [&](const auto& s) { return io::path_within(k.path, s.first); });
    // A file's own inert key is its author's (MegaScale's ablation files keep the window that
    // their sliding_window step turns on): not said.
    if (by == set.end() && !k.overridden) continue;
    const std::string said =
        by == set.end()
            ? fmt::format("{}: {}={}", in.scenario.file.filename().string(), k.path, k.written)
        : by->first == k.path ? fmt::format("--set {}={}", by->first, by->second)
                              : fmt::format("--set {}: {}={}", by->first, k.path, k.written);
    lines.push_back(fmt::format("{} {}", said, k.overridden ? k.why : "changes nothing: " + k.why));
  }
  return lines;
}

namespace {

// As search: nothing to compare is the user's error (exit 2), not a table of refusals.
void refuse_if_none_runs(const std::vector<Variant>& out) {
  if (std::any_of(out.begin(), out.end(), [](const Variant& v) { return v.step.has_value(); })) {
    return;
  }
  // One cause every variant shares (a scenario's model file that does not read) said once:
  // it was repeated per variant until 2026-12-05.
  if (out.size() > 1 && std::all_of(out.begin(), out.end(), [&](const Variant& v) {
        return v.reason == out.front().reason;
      })) {
    throw InputError(
        fmt::format("compare: none of the {} variants can run, each for this "
                    "reason:\n  {}",
                    out.size(), out.front().reason));
  }
  std::string reasons;
  constexpr std::size_t kShown = 3;
  for (std::size_t i = 0; i < std::min(out.size(), kShown); ++i) {
    reasons += fmt::format("\n  {}: {}", out[i].label, out[i].reason);
  }
  if (out.size() > kShown) reasons += fmt::format("\n  and {} more", out.size() - kShown);
  throw InputError(
      fmt::format("compare: none of the {} variant{} can run (loosen --vary or "
                  "--set):{}",
                  out.size(), out.size() == 1 ? "" : "s", reasons));
}

}  // namespace

std::vector<Variant> compare(const std::filesystem::path& scenario,
                             const std::vector<std::string>& overrides,
                             const std::vector<Axis>& axes, io::FilesRead* read,
                             const WorkLimits& limits) {
  const std::size_t combos = count_combinations(axes);
  // The scenario itself must load: a file that is missing or broken is the user's error, not
  // a column of infeasible variants.
  const std::int64_t gpus = io::load_scenario(scenario, overrides, nullptr, read).plan.gpus();
  check_axes(scenario, overrides, axes);
  const bool derive_dp = derives_dp(overrides, axes);
  std::vector<Variant> out;
  for (std::size_t i = 0; i < combos; ++i) {
    Variant v;
    std::vector<std::string> sets = overrides;
    std::size_t rest = i;
    for (const auto& a : axes) {
      const std::string& value = a.values[rest % a.values.size()];
      rest /= a.values.size();
      sets.push_back(a.path + "=" + value);
      v.set.emplace_back(a.path, value);
      if (!v.label.empty()) v.label += ' ';
      v.label.append(a.path, a.path.rfind('.') + 1).append("=").append(value);
    }
    try {
      if (derive_dp) {
        // The scenario's GPU count kept: dp follows the varied tp, cp and pp.
        const workload::ParallelPlan p = io::load_scenario(scenario, sets).plan;
        const std::int64_t replica = static_cast<std::int64_t>(p.tp) * p.cp * p.pp;
        if (gpus % replica != 0) {
          throw InputError(
              fmt::format("tp × cp × pp = {} × {} × {} = {} does not divide the scenario's {} "
                          "GPUs (give plan.dp to set it)",
                          p.tp, p.cp, p.pp, replica, gpus));
        }
        sets.push_back(fmt::format("plan.dp={}", gpus / replica));
        v.label += fmt::format(" (dp={})", gpus / replica);
      }
      io::InputOptions io_options;
      io_options.run_level = false;
      const io::Inputs inputs =
          io::load_inputs(io::load_scenario(scenario, sets, nullptr, read), io_options, read);
      check_values_run(v.set, inputs);
      // compare's own --set values too, in each variant (one whose switch is off runs them):
      // they ran silently under the switch until 2026-12-05.
      check_sets_run(overrides, inputs);
      EvaluateOptions options;
      options.limits = limits;
      v.warning = cluster_device_mismatch(inputs);  // as simulate says it, run or refused
      if (const std::string lacks = framework_lacks(inputs); !lacks.empty()) {
        v.warning += (v.warning.empty() ? "" : "; ") + lacks;
      }
      v.step = evaluate(inputs, options).step;
      // A borrowed validation.allow_oom, said as simulate says it (compare ran the plan over the
      // device without a word until 2026-12-07).
      if (const std::string borrowed = allow_oom_without_run(inputs, v.step->memory);
          !borrowed.empty()) {
        v.warning += (v.warning.empty() ? "" : "; ") + borrowed;
      }
      v.plan = inputs.scenario.plan;
      v.device_memory = inputs.device.memory;
      v.sets_not_run = keys_written_that_do_not_run(overrides, inputs);
    } catch (const UnknownKeyError&) {
      throw;  // a misspelt path: the user's error in every variant, not an infeasible plan
    } catch (const InputError& e) {
      // One line (a table cell): several clashes, a line each in the message, joined by "; ".
      v.reason = e.what();
      for (std::size_t at = v.reason.find('\n'); at != std::string::npos;
           at = v.reason.find('\n', at))
        v.reason.replace(at, 1, "; ");
    }
    out.push_back(std::move(v));
  }
  refuse_if_none_runs(out);
  mark_pareto_front(out);
  return out;
}

bool tight(const Variant& v) {
  return v.step && workload::worst_fit(v.step->memory, v.device_memory) == workload::Fit::kTight;
}

bool over_device(const Variant& v) {
  return v.step &&
         workload::worst_fit(v.step->memory, v.device_memory) == workload::Fit::kDoesNotFit;
}

double memory_headroom_gib(const Variant& v) {
  return v.device_memory.value() / kGiB.value() - peak_memory_gib(*v.step);
}

void mark_pareto_front(std::vector<Variant>& variants) {
  // Tokens a second, not step time: variants of another global batch (or sequence) move
  // different tokens a step (a front by step time put the smallest batch on it and the
  // fastest-training one off, until 2026-12-03). Equal tokens a step: the same front.
  for (Variant& v : variants) {
    v.pareto = false;
    if (!v.step) continue;
    const double rate = v.step->tokens_per_s;
    const double room = shown_gib(memory_headroom_gib(v));
    v.pareto = std::none_of(variants.begin(), variants.end(), [&](const Variant& o) {
      if (!o.step) return false;
      const double orate = o.step->tokens_per_s;
      const double oroom = shown_gib(memory_headroom_gib(o));
      return orate >= rate && oroom >= room && (orate > rate || oroom > room);
    });
  }
}

double peak_memory_gib(const step::StepPrediction& p) {
  double mem = 0;
  for (const auto& m : p.memory) mem = std::max(mem, m.total().value() / kGiB.value());
  return mem;
}

Time exposed_comm(const step::StepPrediction& p) {
  return p.breakdown.tp_exposed + p.breakdown.pp_exposed + p.breakdown.dp_exposed;
}

}  // namespace megasim::plan
