#include "io/scenario.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "engine/error.h"
#include "io/json_duplicates.h"
#include "io/json_reader.h"
#include "io/resolve.h"

namespace megasim::io {
namespace {

namespace fs = std::filesystem;
using workload::Optimizer;
using workload::Precision;
using workload::RankOrder;
using workload::Recompute;
using workload::Schedule;

constexpr std::int64_t kMaxDegree = 1 << 20;
constexpr std::int64_t kMaxBatch = std::int64_t{1} << 31;

}  // namespace

std::optional<PlanClash> plan_clash(const workload::ParallelPlan& p) {
  if (p.gpus() > kMaxGpus) {
    return PlanClash{
        "dp", fmt::format("tp × cp × pp × dp = {} × {} × {} × {} = {} GPUs exceeds the {} GPUs "
                          "megasim can simulate",
                          p.tp, p.cp, p.pp, p.dp, p.gpus(), kMaxGpus)};
  }
  if (p.schedule == Schedule::kInterleaved && p.vpp < 2) {
    return PlanClash{"schedule",
                     fmt::format("the interleaved schedule needs vpp ≥ 2, but vpp = {}", p.vpp)};
  }
  if (p.vpp > 1 && p.schedule != Schedule::kInterleaved) {
    return PlanClash{"vpp", fmt::format("vpp = {} needs schedule 'interleaved', not '{}'", p.vpp,
                                        workload::to_string(p.schedule))};
  }
  if (p.zero2 && !p.distributed_optimizer) {
    return PlanClash{"zero2",
                     "ZeRO-2 shards gradients beside the optimizer states: it needs "
                     "distributed_optimizer (ZeRO-1) true as well"};
  }
  if (p.shard_group > 0 && !p.zero3) {
    return PlanClash{"shard_group",
                     "a shard group says how far ZeRO-3 / FSDP shards: it needs zero3 true"};
  }
  if (p.shard_group > 0 && p.dp % p.shard_group != 0) {
    return PlanClash{
        "shard_group",
        fmt::format("shard_group {} does not divide dp {} into replicas", p.shard_group, p.dp)};
  }
  if (p.zero3 && p.schedule == Schedule::kZeroBubble) {
    return PlanClash{"schedule",
                     "zero-bubble defers the weight gradients that ZeRO-3 / FSDP reduce-scatter "
                     "after each layer's backward; megasim does not model the two together"};
  }
  if (p.zero3 && p.cp > 1) {
    return PlanClash{
        "cp",
        "megasim does not model ZeRO-3 / FSDP sharding across a context-parallel group: "
        "set cp 1 or zero3 false"};
  }
  if (p.fp8_params && !p.fp8) {
    return PlanClash{"fp8_params",
                     "FP8 weights are the FP8 GEMMs' inputs: fp8_params needs fp8 true"};
  }
  if (p.fp8 && p.zero3) {
    return PlanClash{"fp8",
                     "megasim prices FP8 as Transformer Engine runs it under Megatron-Core, each "
                     "weight cast to FP8 once a step; ZeRO-3 / FSDP gather the weights every pass, "
                     "which is not modelled with FP8: set fp8 false or zero3 false"};
  }
  if (p.zero2 && p.zero3) {
    return PlanClash{"zero2", "zero2 and zero3 are two stages of one choice: set one of them"};
  }
  if (p.micro_batch > p.global_batch) {
    return PlanClash{"micro_batch", fmt::format("micro_batch {} is larger than global_batch {}",
                                                p.micro_batch, p.global_batch)};
  }
  // Batch divisibility and the layer split's length are checked with the model, once, by
  // workload::validate_plan (io::load_inputs).
  return std::nullopt;
}

namespace {

// The plan's keys that clash with each other; `r` names the offending key's path.
void check_plan(const JsonReader& r, const workload::ParallelPlan& p) {
  if (const auto clash = plan_clash(p)) r.fail(clash->key, clash->message);
}

workload::ParallelPlan read_plan(JsonReader r) {
  workload::ParallelPlan p;
  p.tp = static_cast<int>(r.integer("tp", 1, 4096));
  p.pp = static_cast<int>(r.integer_or("pp", 1, 1, 65536));
  p.vpp = static_cast<int>(r.integer_or("vpp", 1, 1, 1024));
  p.dp = static_cast<int>(r.integer_or("dp", 1, 1, kMaxDegree));
  p.cp = static_cast<int>(r.integer_or("cp", 1, 1, 1024));
  p.micro_batch = static_cast<int>(r.integer_or("micro_batch", 1, 1, 1 << 16));
  p.global_batch = r.integer("global_batch", 1, kMaxBatch);
  p.sequence_parallel = r.boolean_or("sequence_parallel", false);
  p.distributed_optimizer = r.boolean_or("distributed_optimizer", false);
  p.zero2 = r.boolean_or("zero2", false);
  p.zero3 = r.boolean_or("zero3", false);
  p.shard_group = static_cast<int>(r.integer_or("shard_group", 0, 0, kMaxDegree));
  const std::string rc = r.choice_or("recompute", "none", {"none", "selective", "full"});
  p.recompute = rc == "full" ? Recompute::kFull : rc == "selective" ? Recompute::kSelective
                                                                    : Recompute::kNone;
  p.optimizer = r.choice_or("optimizer", "adam", {"adam", "lamb"}) == "lamb" ? Optimizer::kLamb
                                                                             : Optimizer::kAdam;
  p.precision = r.choice_or("precision", "bf16", {"bf16", "fp16"}) == "fp16" ? Precision::kFp16
                                                                            : Precision::kBf16;
  p.fp32_gradients = r.boolean_or("fp32_gradients", p.precision == Precision::kBf16);
  p.fp8 = r.boolean_or("fp8", false);
  p.fp8_params = r.boolean_or("fp8_params", false);
  const std::string sched = r.choice_or("schedule", p.vpp > 1 ? "interleaved" : "1f1b",
                                        {"gpipe", "1f1b", "interleaved", "zero-bubble"});
  p.schedule = sched == "gpipe"         ? Schedule::kGpipe
               : sched == "interleaved" ? Schedule::kInterleaved
               : sched == "zero-bubble" ? Schedule::kZeroBubble
                                        : Schedule::kOneFOneB;
  p.microbatch_group = static_cast<int>(r.integer_or("microbatch_group", 0, 1, 1 << 16));
  p.rank_order =
      r.choice_or("rank_order", "tp-cp-dp-pp", {"tp-cp-dp-pp", "tp-cp-pp-dp"}) == "tp-cp-pp-dp"
          ? RankOrder::kTpCpPpDp
          : RankOrder::kTpCpDpPp;
  if (r.has("layer_split")) {
    for (auto n : r.integer_array("layer_split", 0, 1 << 16)) p.layer_split.push_back(static_cast<int>(n));
    if (p.layer_split.empty()) {
      r.fail_value("layer_split",
                   "empty: give one entry per virtual stage (pp × vpp), or leave the key "
                   "out for an even split");
    }
  } else {
    r.ignore("layer_split");
  }
  r.finish();
  check_plan(r, p);
  return p;
}

OptimizationSpec read_optimizations(JsonReader r) {
  OptimizationSpec o;
  o.preset = r.choice_or("preset", "megatron-lm",
                         {"megatron-lm", "megascale", "megatron-core", "deepspeed", "fsdp"});
  for (std::size_t i = 0; i < step::kSwitches.size(); ++i) {
    o.overrides.switches[i] = r.optional_boolean(step::kSwitches[i].key);
  }
  // A window of 0 reads as "no window", which is optimizations.sliding_window false: said so
  // first, then the range [1, 2^24]. Both are values the key never takes (compare's --vary
  // listed 0 as an infeasible variant, and -5 was said to be outside [0, 16777216], until
  // 2026-12-06).
  try {
    o.overrides.attention_window = r.optional_integer("attention_window", 1, 1 << 24);
  } catch (const ValueError&) {
    bool zero = false;
    try {
      zero = r.optional_number("attention_window", -HUGE_VAL, HUGE_VAL) == 0.0;
    } catch (const InputError&) {
      // not a number: the integer's own message stands
    }
    if (zero) {
      r.fail_value("attention_window",
                   "0 is no window size; to run without a window set "
                   "optimizations.sliding_window false, else give a size in [1, 16777216]");
    }
    throw;
  }
  if (r.has("attention")) {
    o.overrides.attention =
        step::attention_kernel_from_string(r.choice("attention", step::attention_kernel_names()));
  } else {
    r.ignore("attention");
  }
  o.overrides.bf16_optimizer = r.optional_boolean("bf16_optimizer");
  o.overrides.cp_overlap = r.optional_boolean("context_parallel_overlap");
  o.overrides.dp_bucket_overlap = r.optional_boolean("dp_bucket_overlap");
  o.overrides.backward_tp_overlap = r.optional_boolean("backward_tp_overlap");
  o.overrides.grad_accumulation_pass = r.optional_boolean("grad_accumulation_pass");
  o.overrides.scatter_gather_list_copy = r.optional_boolean("scatter_gather_list_copy");
  if (r.has("fp32_main_gradient")) {
    o.overrides.main_gradient_at_step = step::main_gradient_at_step_from_string(
        r.choice("fp32_main_gradient", step::main_gradient_names()));
  } else {
    r.ignore("fp32_main_gradient");
  }
  r.finish();
  return o;
}

StragglerSettings read_stragglers(JsonReader r) {
  StragglerSettings s;
  s.host_fraction = r.number_or("host_fraction", 0.0, 0.0, 1.0);
  s.slowdown = r.number_or("slowdown", 1.0, 1.0, 100.0);
  // A slow host runs every kernel slow: all passes by default (forward alone until 2026-12-06,
  // where MegaScale's Figure 10 timed the forward; "slowdown 1.1" then slowed a third of the
  // host's work).
  s.all_passes = r.choice_or("passes", "all", {"forward", "all"}) == "all";
  s.seed = static_cast<std::uint64_t>(r.integer_or("seed", 1, 0, std::int64_t{1} << 53));
  r.finish();
  return s;
}

DataLoadingSettings read_data_loading(JsonReader r) {
  DataLoadingSettings d;
  constexpr double kMaxMsPerSample = 1e5;  // 100 s a sample: far past any data pipeline
  d.host_ms_per_sample = r.number_or("host_ms_per_sample", 0.0, 0.0, kMaxMsPerSample);
  d.source = r.text_or("source", "");
  r.finish();
  return d;
}

ValidationSettings read_validation(JsonReader r) {
  ValidationSettings v;
  v.run = r.string("run");
  v.metric = r.string("metric");
  if (auto step = r.optional_integer("step", 0, 1000)) v.step = static_cast<int>(*step);
  v.role = r.choice_or("role", "check", {"check", "fit", "context"});
  v.allow_oom = r.boolean_or("allow_oom", false);
  v.measurement_of = r.string_or("measurement_of", "");
  r.finish();
  return v;
}

RunSettings read_run(JsonReader r) {
  RunSettings s;
  s.tokens = r.optional_number("tokens", 1.0, 1e16);
  s.seed = static_cast<std::uint64_t>(r.integer_or("seed", 1, 0, std::int64_t{1} << 53));
  s.trials = static_cast<int>(r.integer_or("trials", 1, 1, 100000));
  if (auto e = r.optional_object("evaluation")) {
    s.evaluation_interval_steps = e->integer("interval_steps", 1, std::int64_t{1} << 40);
    s.evaluation_iterations = static_cast<int>(e->integer("iterations", 0, 1000000));
    e->finish();
  }
  // Without tokens there is no run: its settings would be dropped without a word (as
  // `--set run.trials=5` was until 2026-12-04, where --trials 5 is refused).
  if (!s.tokens) {
    for (const char* key : {"trials", "seed", "evaluation"}) {
      if (r.has(key)) {
        r.fail(key,
               "sets the run, but run.tokens is not set, so there is no run; set "
               "run.tokens, or drop run." +
                   std::string(key));
      }
    }
  }
  r.finish();
  return s;
}

ReliabilitySettings read_reliability(JsonReader r) {
  ReliabilitySettings s;
  // A built-in preset by name, or a preset file of one's own by path (one with a folder, or
  // ending .json), found as the power preset is: beside the scenario, then in the working
  // directory (names only until 2026-12-07: a planner could not give their cluster's own
  // detection, restart or failure figures).
  s.preset = r.string_or("preset", "default");
  const std::vector<std::string> names{"default", "megascale", "megatron-lm", "none"};
  const bool path = s.preset.find('/') != std::string::npos ||
                    (s.preset.size() > 5 && s.preset.ends_with(".json"));
  if (!path && std::find(names.begin(), names.end(), s.preset) == names.end()) {
    r.fail("preset", fmt::format("'{}' is not one of 'default', 'megascale', 'megatron-lm', "
                                 "'none', nor a path to a preset of one's own (one with a folder "
                                 "or ending .json: './{}.json')",
                                 s.preset, s.preset.empty() ? "ours" : s.preset));
  }
  s.checkpoint_interval_min = r.optional_number("checkpoint_interval_min", 0.1, 1e6);
  s.spare_nodes = r.optional_integer("spare_nodes", 0, kMaxGpus);
  s.evict_stragglers = r.optional_boolean("evict_stragglers");
  s.failure_rate_scale = r.number_or("failure_rate_scale", 1.0, 0.0, 100.0);
  s.planned_stops_per_day = r.optional_number("planned_stops_per_day", 0.0, 100.0);
  r.finish();
  return s;
}

PowerSettings read_power(JsonReader r) {
  PowerSettings s;
  if (std::string preset = r.string_or("preset", ""); !preset.empty()) s.preset = std::move(preset);
  s.pue = r.number_or("pue", 1.2, 1.0, 3.0);
  s.usd_per_gpu_hour = r.optional_number("usd_per_gpu_hour", 0.0, 1000.0);
  s.usd_per_kwh = r.optional_number("usd_per_kwh", 0.0, 100.0);
  s.grid_kg_co2_per_kwh = r.optional_number("grid_kg_co2_per_kwh", 0.0, 10.0);
  r.finish();
  return s;
}

void apply_override(Json& doc, const std::string& assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw InputError("--set " + assignment + ": expected PATH=VALUE, e.g. --set plan.tp=4");
  }
  const std::string path = assignment.substr(0, eq);
  const std::string text = assignment.substr(eq + 1);
  Json value;
  // Taken literally: a value with a space at either end is a string (" 8" and "8 " alike), so
  // a number key refuses it by name instead of one end's space passing and the other's not.
  const bool padded = !text.empty() && (std::isspace(static_cast<unsigned char>(text.front())) ||
                                        std::isspace(static_cast<unsigned char>(text.back())));
  const bool looks_json = !text.empty() && !padded &&
                          (text.find_first_of("{[\"") == 0 || text == "true" || text == "false" ||
                           text == "null" || text.find_first_of("-0123456789") == 0);
  if (looks_json) {
    check_json_text_shape(text, "--set " + path);
    std::optional<std::string> duplicate;  // json_duplicates.h
    try {
      value = Json::parse(text, duplicate_key_finder(duplicate));
    } catch (const Json::exception&) {
      value = text;  // e.g. "1f1b": a string that merely starts with a digit
    }
    if (duplicate)
      throw InputError("--set " + path + ": '" + *duplicate + "' appears twice in the value");
  } else {
    value = text;
  }
  Json* node = &doc;
  std::size_t start = 0;
  for (;;) {
    const auto dot = path.find('.', start);
    const std::string key = path.substr(start, dot == std::string::npos ? dot : dot - start);
    if (key.empty()) throw InputError("--set " + assignment + ": empty key in path '" + path + "'");
    if (!node->is_object()) {
      throw InputError("--set " + assignment + ": '" + path.substr(0, start - 1) +
                       "' is not an object");
    }
    if (dot == std::string::npos) {
      (*node)[key] = value;
      return;
    }
    node = &(*node)[key];
    if (node->is_null()) *node = Json::object();
    start = dot + 1;
  }
}

Scenario read_scenario(const Json& doc, const fs::path& file, KeyLog* log);

}  // namespace

bool path_within(const std::string& path, const std::string& object) {
  return path == object || path.rfind(object + ".", 0) == 0;
}

void named_by(const Scenario& s, const std::string& key, const std::string& ref,
              const std::function<void()>& load) {
  try {
    load();
  } catch (const InputError& e) {
    throw InputError(
        fmt::format("{}\n{}: {}: '{}' names the file above", e.what(), s.file.string(), key, ref));
  }
}

Scenario load_scenario(const fs::path& file, const std::vector<std::string>& overrides,
                       KeyLog* log, FilesRead* read) {
  Json doc = parse_json_file(file, read);
  const std::string origin = file.string();
  if (!doc.is_object()) {
    throw InputError(fmt::format("{}: expected a scenario object, found {}", origin,
                                 json_type_name(doc)));
  }
  // One path set twice, or a key and an object holding it (plan.micro_batch and plan), would
  // silently keep the last value: refused, as a key twice in a file.
  std::vector<std::string> set_paths;
  for (const auto& o : overrides) {
    const std::string path = o.substr(0, o.find('='));
    for (const auto& other : set_paths) {
      if (other == path)
        throw InputError("--set " + path + ": given twice; give each key one value");
      const auto& [outer, inner] =
          other.size() < path.size() ? std::pair{other, path} : std::pair{path, other};
      if (path_within(inner, outer)) {
        throw InputError("--set " + inner + " and --set " + outer +
                         ": the second holds the "
                         "first; set the key inside the object, or the object alone");
      }
    }
    set_paths.push_back(path);
    apply_override(doc, o);
  }
  return read_scenario(doc, file, log);
}

namespace {

Scenario read_scenario(const Json& doc, const fs::path& file, KeyLog* log) {
  const std::string origin = file.string();
  check_input_kind(doc, InputKind::kScenario, origin);
  Scenario s;
  s.file = file;
  JsonReader r(doc, "", origin, log);
  r.string_or("$schema", "");  // a string when given, as the schemas say
  s.name = r.string("name");
  s.description = r.text_or("description", "");
  s.assumptions = r.text_or("assumptions", "");
  s.model_ref = r.string("model");
  s.cluster_ref = r.string("cluster");
  s.device_ref = r.string("device");
  {
    JsonReader plan = r.object("plan");
    s.optimizer_written = plan.has("optimizer");
    s.fp32_gradients_written = plan.has("fp32_gradients");
    s.plan = read_plan(std::move(plan));
  }
  if (auto o = r.optional_object("optimizations")) s.optimizations = read_optimizations(*o);
  if (auto o = r.optional_object("run")) s.run = read_run(*o);
  if (auto o = r.optional_object("reliability")) s.reliability = read_reliability(*o);
  if (auto o = r.optional_object("power")) s.power = read_power(*o);
  // As the run's own settings: without tokens there is no run for these to set (`--set
  // power.pue=3` printed the same step without a word until 2026-12-05).
  for (const char* key : {"reliability", "power"}) {
    if (!s.run.tokens && r.has(key)) {
      r.fail(key, fmt::format("sets the run's {0}, but run.tokens is not set, so there is no "
                              "run; set run.tokens, or drop {0}",
                              key));
    }
  }
  if (auto o = r.optional_object("stragglers")) s.stragglers = read_stragglers(*o);
  if (auto o = r.optional_object("data_loading")) s.data_loading = read_data_loading(*o);
  s.placement = r.choice_or("placement", "pack", {"pack", "spread"});
  if (auto o = r.optional_object("validation")) s.validation = read_validation(*o);
  r.finish();

  const fs::path dir = file.parent_path().empty() ? fs::path(".") : file.parent_path();
  // Only found here; each file is read once, by io::load_inputs.
  s.model_file = resolve_data_file(s.model_ref, DataKind::kModel, dir, origin, "model");
  s.cluster_file = resolve_data_file(s.cluster_ref, DataKind::kCluster, dir, origin, "cluster");
  s.device_file = resolve_data_file(s.device_ref, DataKind::kDevice, dir, origin, "device");
  return s;
}

}  // namespace

}  // namespace megasim::io
