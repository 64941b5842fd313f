#include "io/reliability_loader.h"

#include "io/json_reader.h"
#include "io/resolve.h"
#include "step/step_model.h"

#include <cmath>
#include <system_error>
#include <vector>

#include <fmt/format.h>

#include "engine/error.h"

namespace megasim::io {
namespace {

namespace fs = std::filesystem;

// Pounds to kilograms: the international avoirdupois pound is defined as 0.45359237 kg.
constexpr double kKgPerLb = 0.45359237;
constexpr double kHoursPerDay = 24.0;
// Failure causes in one rate file: published tables list a few dozen (Llama 3: 18), and the
// run simulation draws every cause's next failure after each event, so the count multiplies
// its time.
constexpr std::size_t kMaxFailureCauses = 256;

// `origin` and `json_path` name the file and key that refer to it, in errors ("" for none).
// A preset by name, or by a path relative to `base` (the scenario that names it; empty: none)
// or to the working directory.
fs::path find_preset(const std::string& ref, DataKind kind, const fs::path& base,
                     const std::string& origin = "", const std::string& json_path = "") {
  return resolve_data_file(ref, kind, base.empty() ? working_dir() : base, origin, json_path);
}

// A {"value": x, "source": "..."} pair; the source is required so no figure goes unsourced.
double sourced(JsonReader& r, const std::string& key, double lo, double hi) {
  JsonReader o = r.object(key);
  const double v = o.number("value", lo, hi);
  (void)o.string("source");
  o.finish();
  return v;
}

bool sourced_bool(JsonReader& r, const std::string& key) {
  JsonReader o = r.object(key);
  const auto v = o.optional_boolean("value");
  if (!v) o.fail("value", "missing: expected true or false");
  (void)o.string("source");
  o.finish();
  return *v;
}

// Sum of {"item", "count", "watts", "source"} components.
Watts sum_components(JsonReader& r, const std::string& key) {
  Watts total;
  const auto components = r.object_array(key);
  // No component is not no power: a server or a switch draws some, and the preset says what.
  if (components.empty()) r.fail(key, "empty: list what draws the power, with a source each");
  for (JsonReader c : components) {
    (void)c.string("item");
    const auto count = c.integer("count", 0, 1 << 20);
    const double w = c.number("watts", 0.0, 1e6);
    (void)c.string("source");
    c.finish();
    total += Watts(w * static_cast<double>(count));
  }
  // Each count and figure has its bound; their sum has one too: a DGX draws about 10 kW in
  // all, a switch about 1 kW.
  constexpr double kMaxTotalW = 1e5;
  if (total.value() > kMaxTotalW) {
    r.fail(key, fmt::format("its components add up to {:g} W, more than the {:g} W a server's "
                            "or a switch's overhead may be",
                            total.value(), kMaxTotalW));
  }
  return total;
}

// A failure table: its causes, and the stops its source counted as planned (per job hour).
struct FailureTable {
  std::vector<run::FailureCause> causes;
  double planned_per_hour = 0.0;
};

FailureTable load_failure_rates(const std::string& ref, const std::string& origin,
                                FilesRead* read) {
  // A path is taken beside the preset that names it first (a preset file of one's own and its
  // table kept together), then in the working directory.
  // Beside the file itself where the preset was reached through a link.
  std::error_code ec;
  const fs::path real = fs::weakly_canonical(fs::path(origin), ec);
  const fs::path file =
      find_preset(ref, DataKind::kReliability, (ec ? fs::path(origin) : real).parent_path(), origin,
                  "failure_rates");
  Json doc;
  try {
    doc = parse_json_file(file, read);
    check_input_kind(doc, InputKind::kFailureRates, file.string());
  } catch (const InputError& e) {
    // Said as the preset's key, as a table not found is.
    throw InputError(fmt::format("{}: failure_rates: {}", origin, e.what()));
  }
  JsonReader r(doc, "", file.string());
  (void)r.string_or("$schema", "");
  (void)r.string("name");
  const std::string source = r.string("source");
  (void)r.text_or("assumptions", "");
  JsonReader obs = r.object("observed");
  const double gpus = static_cast<double>(obs.integer("gpus", 1, std::int64_t{1} << 24));
  const double per_node = static_cast<double>(obs.integer("gpus_per_node", 1, 1024));
  const double days = obs.number("days", 1e-3, 1e5);
  (void)obs.string("source");
  obs.finish();
  const double hours = days * kHoursPerDay;
  const double nodes = std::ceil(gpus / per_node);
  std::vector<run::FailureCause> causes;
  for (JsonReader c : r.object_array("components", kMaxFailureCauses)) {
    run::FailureCause f;
    f.name = c.string("name");
    // One row a cause: the run's interruptions are counted by name, so a second row of a name
    // dropped the first's from --json's interruptions_by_cause (until 2026-12-06).
    for (std::size_t i = 0; i < causes.size(); ++i) {
      if (causes[i].name == f.name) {
        c.fail("name", fmt::format("'{}' is components[{}]'s cause too; give each cause one "
                                   "row, with one scope and its count",
                                   f.name, i));
      }
    }
    const auto count = c.integer("count", 0, 1 << 30);
    f.scope = c.choice("scope", {"gpu", "node"}) == "gpu" ? run::FailureScope::kGpu
                                                          : run::FailureScope::kNode;
    f.needs_replacement = c.boolean_or("replace", false);
    c.finish();
    const double units = f.scope == run::FailureScope::kGpu ? gpus : nodes;
    f.rate_per_unit_hour = static_cast<double>(count) / (units * hours);
    f.source = fmt::format("{} interruptions in {} days on {} {}s; {}", count, days, units,
                           run::to_string(f.scope), source);
    causes.push_back(std::move(f));
  }
  // As a power preset's empty list: a table of no cause is no failure table (it ran a preset's
  // run without failures, unsaid, until 2026-12-06); reliability.preset "none" is that run.
  if (causes.empty()) {
    r.fail("components",
           "no component: a failure table lists the causes it counted (a run "
           "without failures is reliability.preset \"none\")");
  }
  FailureTable table;
  table.causes = std::move(causes);
  // Stops the operators planned, counted per job: a table without them counted none.
  if (r.has("planned")) {
    JsonReader p = r.object("planned");
    const auto count = p.integer("count", 0, 1 << 30);
    (void)p.string("source");
    p.finish();
    table.planned_per_hour = static_cast<double>(count) / hours;
  }
  r.finish();
  return table;
}

run::CommInitModel read_comm_init(JsonReader r) {
  std::vector<std::pair<double, double>> pts;
  for (JsonReader p : r.object_array("points")) {
    const double n = static_cast<double>(p.integer("ranks", 1, std::int64_t{1} << 24));
    const double t = p.number("seconds", 1e-6, 1e7);
    p.finish();
    pts.emplace_back(n, t);
  }
  const auto exponent = r.optional_number("exponent", 0.0, 4.0);
  const std::string source = r.string("source");
  run::CommInitModel m;
  if (pts.size() == 2 && !exponent) {
    if (pts[0].first == pts[1].first) {
      r.fail("points", fmt::format("both points are at {} ranks; a power law needs two rank "
                                   "counts",
                                   pts[0].first));
    }
    m = run::fit_comm_init(pts[0].first, Time::from_seconds(pts[0].second), pts[1].first,
                           Time::from_seconds(pts[1].second));
  } else if (pts.size() == 1 && exponent) {
    m.reference_ranks = pts[0].first;
    m.at_reference = Time::from_seconds(pts[0].second);
    m.exponent = *exponent;
  } else {
    r.fail("points", fmt::format("give two points, or one point and an exponent; found {} "
                                 "point(s) and {} exponent",
                                 pts.size(), exponent ? "an" : "no"));
  }
  for (const auto& pt : pts)
    m.published_ranks = std::max(m.published_ranks, static_cast<std::int64_t>(pt.first));
  m.source = source;
  r.finish();
  return m;
}

}  // namespace

run::ReliabilityModel load_reliability_file(const fs::path& file, FilesRead* read) {
  const Json doc = parse_json_file(file, read);
  check_input_kind(doc, InputKind::kReliabilityPreset, file.string());
  JsonReader r(doc, "", file.string());
  (void)r.string_or("$schema", "");
  run::ReliabilityModel m;
  m.name = r.string("name");
  m.source = r.string("source");
  FailureTable table = load_failure_rates(r.string("failure_rates"), file.string(), read);
  m.causes = std::move(table.causes);
  m.planned_per_hour = table.planned_per_hour;
  m.detection = Time::from_minutes(sourced(r, "detection_min", 0.0, 1e5));
  m.restart_overhead = Time::from_seconds(sourced(r, "restart_overhead_s", 0.0, 1e7));
  m.comm_init = read_comm_init(r.object("comm_init"));
  m.checkpoint_stall = Time::from_seconds(sourced(r, "checkpoint_stall_s", 0.0, 1e6));
  m.async_checkpoint = sourced_bool(r, "async_checkpoint");
  // Gigabytes a second, named so: they were `checkpoint_*_gbps` until 2026-12-05, where a
  // cluster's `*_gbps` are gigabits, so a NIC-style figure written there was 8x too fast.
  for (const char* io : {"write", "read"}) {
    if (r.has(fmt::format("checkpoint_{}_gbps", io))) {
      throw InputError(fmt::format(
          "{}: checkpoint_{}_gbps: renamed checkpoint_{}_gbyte_per_s, in gigabytes a second (a "
          "cluster's *_gbps keys are gigabits a second)",
          file.string(), io, io));
    }
  }
  m.checkpoint_write_bw = gbyte_per_s(sourced(r, "checkpoint_write_gbyte_per_s", 1e-6, 1e7));
  m.checkpoint_read_bw = gbyte_per_s(sourced(r, "checkpoint_read_gbyte_per_s", 1e-6, 1e7));
  m.checkpoint_interval = Time::from_minutes(sourced(r, "checkpoint_interval_min", 0.01, 1e7));
  m.spare_fraction = sourced(r, "spare_fraction", 0.0, 1.0);
  m.replacement_time = Time::from_minutes(sourced(r, "replacement_min", 0.0, 1e6));
  m.repair_time = Time::from_hours(sourced(r, "repair_hours", 0.0, 1e6));
  m.straggler_node_fraction = sourced(r, "straggler_node_fraction", 0.0, 1.0);
  const double gain = sourced(r, "straggler_mfu_gain", 0.0, 1.0);
  const double mfu = sourced(r, "straggler_reference_mfu", 1e-3, 1.0);
  if (gain >= mfu) {
    r.fail("straggler_mfu_gain",
           fmt::format("gain {} must be below the reference MFU {}", gain, mfu));
  }
  m.straggler_slowdown = mfu / (mfu - gain) - 1.0;
  m.evict_stragglers = sourced_bool(r, "evict_stragglers");
  r.finish();
  return m;
}

run::ReliabilityModel load_reliability_preset(const std::string& ref, FilesRead* read,
                                              const fs::path& base) {
  if (ref == "none") return run::no_failures_model();
  return load_reliability_file(find_preset(ref, DataKind::kReliability, base), read);
}

run::PowerInputs load_power_file(const fs::path& file, FilesRead* read) {
  const Json doc = parse_json_file(file, read);
  check_input_kind(doc, InputKind::kPowerPreset, file.string());
  JsonReader r(doc, "", file.string());
  (void)r.string_or("$schema", "");
  run::PowerInputs p;
  p.name = r.string("name");
  p.source = r.string("source");
  if (doc.contains("gpu_w")) {
    r.fail("gpu_w",
           "a GPU's power by activity is the device profile's (its `power`, which `megasim "
           "calibrate` measures); a power preset holds node, switch and grid figures only");
  }
  p.node_overhead = sum_components(r, "node_overhead");
  p.per_switch = sum_components(r, "switch");
  p.grid_kg_co2_per_kwh = sourced(r, "grid_lb_co2_per_kwh", 0.0, 20.0) * kKgPerLb;
  r.finish();
  return p;
}

run::PowerInputs load_power_preset(const std::string& ref, FilesRead* read, const fs::path& base) {
  return load_power_file(find_preset(ref, DataKind::kPower, base), read);
}

run::ReliabilityModel reliability_for(const Scenario& s, int gpus_per_node, FilesRead* read) {
  run::ReliabilityModel m;
  named_by(s, "reliability.preset", s.reliability.preset,
           [&] { m = load_reliability_preset(s.reliability.preset, read, s.file.parent_path()); });
  // A preset of one's own is named by its path: its "name" may be a built-in's (a copy).
  if (!is_data_name(s.reliability.preset)) m.name = s.reliability.preset;
  if (s.reliability.checkpoint_interval_min) {
    m.checkpoint_interval = Time::from_minutes(*s.reliability.checkpoint_interval_min);
  }
  if (s.reliability.spare_nodes) {
    // Spares stand beside the described cluster (which holds the part in use), but a pool of
    // more servers than the job has GPUs is no spare pool.
    if (*s.reliability.spare_nodes > s.plan.gpus()) {
      throw InputError(
          fmt::format("{}: reliability.spare_nodes: {} spare servers for a job of {} "
                      "GPUs; at most one a GPU",
                      s.file.string(), *s.reliability.spare_nodes, s.plan.gpus()));
    }
    m.spare_nodes = *s.reliability.spare_nodes;
  }
  if (s.reliability.evict_stragglers) m.evict_stragglers = *s.reliability.evict_stragglers;
  if (s.reliability.planned_stops_per_day) {
    // The none preset's relaunch, communicator init and checkpoints are free: its stops would
    // be counted at no cost (a trial's "0.0 min each", 2026-12-07).
    if (s.reliability.preset == "none" && *s.reliability.planned_stops_per_day > 0.0) {
      throw InputError(fmt::format(
          "{}: reliability.planned_stops_per_day: {:g} with reliability.preset \"none\", whose "
          "restarts and checkpoints cost nothing; choose a preset that prices them",
          s.file.string(), *s.reliability.planned_stops_per_day));
    }
    m.planned_per_hour = *s.reliability.planned_stops_per_day / kHoursPerDay;
  }
  m.failure_rate_scale = s.reliability.failure_rate_scale;
  for (run::FailureCause& c : m.causes) c.rate_per_unit_hour *= m.failure_rate_scale;
  // Where the step slows a host and the preset draws stragglers at all (preset "none" draws
  // none). The job's hosts as its packed or spread placement fills them.
  const std::int64_t hosts = step::job_hosts(s.plan.gpus(), gpus_per_node);
  if (step::slowed_hosts(s.stragglers.host_fraction, s.stragglers.slowdown, hosts) > 0 &&
      m.straggler_node_fraction > 0.0) {
    m.stragglers_in_step = true;
    m.straggler_node_fraction = 0.0;
  }
  return m;
}

namespace {

// The scenario's own power settings over a preset's.
run::PowerInputs with_settings(run::PowerInputs p, const Scenario& s) {
  p.pue = s.power.pue;
  p.usd_per_gpu_hour = s.power.usd_per_gpu_hour;
  p.usd_per_kwh = s.power.usd_per_kwh;
  if (s.power.grid_kg_co2_per_kwh) p.grid_kg_co2_per_kwh = *s.power.grid_kg_co2_per_kwh;
  return p;
}

}  // namespace

run::PowerInputs scenario_power_preset(const Scenario& s, FilesRead* read) {
  try {
    return load_power_preset(*s.power.preset, read, s.file.parent_path());
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: power.preset: {}", s.file.string(), e.what()));
  }
}

run::PowerInputs power_for(const Scenario& s, const hw::DeviceProfile& device, FilesRead* read) {
  // The GPU's power by activity is the profile's: a measured profile's NVML figures.
  const auto gpu_of = [&](run::PowerInputs p) {
    for (std::size_t i = 0; i < run::kActivityCount; ++i) {
      p.gpu[i] = device.power.at(static_cast<run::Activity>(i));
    }
    p.gpu_source = fmt::format("device profile {} ({})", device.name, hw::to_string(device.kind));
    return p;
  };
  // A measured or imported profile takes its power preset from the shipped one it came from.
  const std::string device_name = device.base.empty() ? device.name : device.base;
  if (s.power.preset) return gpu_of(with_settings(scenario_power_preset(s, read), s));
  // Unset, the preset is the device profile's own name: a calibration file measured on an
  // A100 names "a100-sxm4-80gb" whatever the file is called.
  try {
    return gpu_of(with_settings(load_power_preset(device_name, read), s));
  } catch (const InputError& e) {
    throw InputError(
        fmt::format("{}: power.preset: unset, so the device profile's name '{}' is taken "
                    "(a measured or imported profile's base_profile), and {}",
                    s.file.string(), device_name, e.what()));
  }
}

run::RunSpec run_spec_for(const Scenario& s, std::optional<int> trials) {
  if (!s.run.tokens) {
    throw InputError(s.file.string() +
                     ": run.tokens: not set; the run-level prediction needs the "
                     "number of tokens to train");
  }
  if (trials && *trials < 1) {
    throw InputError(fmt::format("--trials {}: expected at least 1", *trials));
  }
  run::RunSpec spec;
  spec.tokens = *s.run.tokens;
  spec.seed = s.run.seed;
  spec.trials = trials.value_or(s.run.trials);
  return spec;
}

}  // namespace megasim::io
