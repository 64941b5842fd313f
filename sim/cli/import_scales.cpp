#include "cli/import_scales.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "calibrate/collective_scale_fit.h"
#include "calibrate/fit.h"
#include "engine/error.h"
#include "io/cluster_loader.h"
#include "io/collective_constants_reader.h"
#include "io/device_profile_loader.h"
#include "io/link_bound.h"
#include "net/topology.h"
#include "plan/collective_calibration.h"

namespace megasim::cli {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

namespace {

// A run's rows as the fit takes them: out-of-place, one per size (in-place where the run has
// no out-of-place row), as hw::measured_collective_time reads the table.
std::vector<calibrate::ScaleFitRow> run_rows(const std::vector<hw::CollectiveMeasurement>& rows) {
  std::map<double, double> out_of_place, in_place;
  for (const auto& m : rows)
    (m.in_place ? in_place : out_of_place).emplace(m.size.value(), m.time.to_seconds());
  std::vector<calibrate::ScaleFitRow> out;
  for (const auto& [size, seconds] : out_of_place.empty() ? in_place : out_of_place)
    out.push_back({size, seconds});
  return out;
}

// Runs in table order, one per shape: a run id that holds several collectives or rank counts
// (a calibration's rows may share one) is fitted shape by shape, not as its first.
using RunShape = std::tuple<std::string, hw::CollectiveOp, int, int, std::string, std::string>;
struct RunShapes {
  std::vector<RunShape> order;
  std::map<RunShape, std::vector<hw::CollectiveMeasurement>> rows;
  std::map<std::string, int> shapes_of_run;
};

RunShapes run_shapes(const std::vector<hw::CollectiveMeasurement>& table) {
  RunShapes out;
  for (const auto& m : table) {
    const RunShape shape{m.run, m.op, m.ranks, m.nodes, m.algorithm, m.protocol};
    if (out.rows.find(shape) == out.rows.end()) {
      out.order.push_back(shape);
      ++out.shapes_of_run[m.run];
    }
    out.rows[shape].push_back(m);
  }
  return out;
}

// The imported rows (from `first_new` on), and the base profile's runs it holds no scale fit
// for (a measured profile's).
std::vector<hw::CollectiveMeasurement> rows_to_fit(const hw::DeviceProfile& profile,
                                                   std::size_t first_new) {
  std::set<std::string> fitted;
  for (const auto& f : profile.collective_scales) fitted.insert(f.run);
  std::vector<hw::CollectiveMeasurement> out;
  for (std::size_t k = 0; k < profile.collective_table.size(); ++k) {
    const auto& m = profile.collective_table[k];
    if (k >= first_new || fitted.count(m.run) == 0) out.push_back(m);
  }
  return out;
}

// A run's NCCL_ALGO / NCCL_PROTO label (`import-nccl-tests --algorithm/--protocol`), as NCCL
// spells them in any case (Ring, Tree, NVLS, NVLSTree, PAT; LL, LL128, Simple): kAuto when the
// run forced nothing, nullopt for a label megasim does not model (CollNet).
std::optional<hw::CollAlgorithm> forced_algorithm(const std::string& label) {
  if (label.empty()) return hw::CollAlgorithm::kAuto;
  const std::string l = lower(label);
  for (hw::CollAlgorithm a : {hw::CollAlgorithm::kRing, hw::CollAlgorithm::kTree,
                              hw::CollAlgorithm::kNvls, hw::CollAlgorithm::kNvlsTree,
                              hw::CollAlgorithm::kPat})
    if (l == hw::to_string(a) || (a == hw::CollAlgorithm::kNvlsTree && l == "nvlstree")) return a;
  return std::nullopt;
}

std::optional<hw::CollProtocol> forced_protocol(const std::string& label) {
  if (label.empty()) return hw::CollProtocol::kAuto;
  const std::string l = lower(label);
  for (hw::CollProtocol p :
       {hw::CollProtocol::kLL, hw::CollProtocol::kLL128, hw::CollProtocol::kSimple})
    if (l == hw::to_string(p)) return p;
  return std::nullopt;
}

// A row faster than the cluster's links allow ran elsewhere, or its log is wrong.
void check_against_links(const hw::DeviceProfile& profile, std::size_t first_new,
                         const net::ClusterSpec& spec) {
  io::check_rows_against_links(profile.collective_table, first_new, spec, [&](std::size_t k) {
    return fmt::format("{} (--cluster)", profile.collective_table[k].origin);
  });
}

bool priced_by_tuning_model(hw::CollectiveOp op) {
  return op != hw::CollectiveOp::kAllToAll && op != hw::CollectiveOp::kSendRecv;
}

// Why a run's shape fits no scales, or "" when it does.
std::string unfitted(const hw::CollectiveMeasurement& first) {
  if (!priced_by_tuning_model(first.op)) {
    return fmt::format("{} is point-to-point, outside NCCL's tuning model",
                       hw::to_string(first.op));
  }
  if (!forced_algorithm(first.algorithm) || !forced_protocol(first.protocol)) {
    return fmt::format(
        "forced {} / {} is not an algorithm and protocol megasim models (ring, "
        "tree, nvls, nvls_tree; ll, ll128, simple)",
        first.algorithm.empty() ? "-" : first.algorithm,
        first.protocol.empty() ? "-" : first.protocol);
  }
  return first.ranks < 2 ? std::string(calibrate::kOneRankNoFit) : std::string();
}

// A NIC scale fitted on part of each node (ranks under nodes × the node's GPUs) holds for every
// shape on those NICs: on the whole nodes, at the run's largest size, it must not answer faster
// than their links allow. The rows passed the bound of their own shape, which lets a few GPUs
// drive all of a node's NICs; a reviewer's log of one node's times imported as 8 ranks on 2
// nodes fitted 2.5 (NICs at 1 Tb/s) and priced 16 ranks 31 % under the bound until 2026-12-05.
void check_scale_on_whole_nodes(const hw::CollectiveScaleFit& f,
                                const std::shared_ptr<const net::Topology>& topology,
                                const hw::CollectiveConstants& constants,
                                const net::ClusterSpec& spec,
                                const std::vector<calibrate::ScaleFitRow>& rows,
                                const std::string& id) {
  const int whole = f.nodes * spec.node.gpus;
  if (f.nodes < 2 || f.bandwidth_rows == 0 || whole <= f.ranks || rows.empty()) return;
  const auto model = plan::scaled_nccl_model(topology, constants, f.op, whole, f.nodes,
                                             fmt::format("{} on whole nodes", id));
  const double size = std::max_element(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
                        return a.bytes < b.bytes;
                      })->bytes;
  const double t = model(size, hw::collective_scale({f})).time_s;
  const io::LinkBound b = io::least_collective_time(spec.node, f.op, whole, f.nodes, Bytes(size));
  if (t >= b.least.to_seconds() * io::kLinkBoundTolerance) return;
  throw InputError(fmt::format(
      "{}: the fitted NIC bandwidth scale {:.3g} would time {} of {:.0f} bytes on {} ranks / {} "
      "nodes (every GPU of those nodes) at {:.6g} us, but cluster '{}' takes at least {:.6g} "
      "us: {:.0f} bytes over {} at {:.1f} GB/s raw. The rows are faster than {} ranks on {} "
      "nodes run there: check --ranks, --nodes and --cluster",
      id, f.bandwidth_scale, hw::to_string(f.op), size, whole, f.nodes, t * 1e6, spec.name,
      b.least.to_us(), b.bytes.value(), b.link, b.rate.value() / 1e9, f.ranks, f.nodes));
}

}  // namespace

std::vector<hw::CollectiveScaleFit> fit_import_scales(const hw::DeviceProfile& profile,
                                                      std::size_t first_new,
                                                      const std::filesystem::path& device_file,
                                                      const std::string& cluster_ref,
                                                      std::string& text, io::Json& json) {
  const net::ClusterSpec spec = io::load_cluster_ref(cluster_ref);
  check_cluster_part(spec, cluster_ref, profile);
  check_against_links(profile, first_new, spec);
  const std::vector<hw::CollectiveMeasurement> imported = rows_to_fit(profile, first_new);
  std::int64_t ranks = 1;
  for (const auto& m : imported) ranks = std::max<std::int64_t>(ranks, m.ranks);
  io::check_cluster_size(spec, ranks, "--cluster");
  const auto topology = std::make_shared<const net::Topology>(spec);
  const hw::CollectiveConstants constants = io::read_collective_constants(device_file);
  const auto [order, runs, shapes_of_run] = run_shapes(imported);
  // The --device profile's runs keep the fits it holds, made on the cluster they ran on.
  std::vector<hw::CollectiveScaleFit> fits = profile.collective_scales;
  if (!fits.empty()) {
    text += fmt::format(
        "kept the --device profile's {} scale fit(s) of its own runs, each on "
        "the cluster it names\n",
        fits.size());
  }
  for (const auto& shape : order) {
    const hw::CollectiveMeasurement& first = runs.at(shape).front();
    const std::string& run = std::get<0>(shape);
    const std::string id =
        shapes_of_run.at(run) == 1
            ? run
            : fmt::format("{} ({} on {} ranks)", run, hw::to_string(first.op), first.ranks);
    if (const std::string why = unfitted(first); !why.empty()) {
      text += fmt::format("{}: {}: no scales fitted\n", id, why);
      continue;
    }
    // A run with NCCL_ALGO or NCCL_PROTO forced pins that algorithm (and protocol).
    const auto algorithm = forced_algorithm(first.algorithm);
    const auto protocol = forced_protocol(first.protocol);
    const std::string what = fmt::format("{} on cluster '{}'", id, spec.name);
    const auto model = plan::scaled_nccl_model(topology, constants, first.op, first.ranks,
                                               first.nodes, what, *algorithm, *protocol);
    const auto rows = run_rows(runs.at(shape));
    hw::CollectiveScaleFit f;
    try {
      f = calibrate::fit_collective_scale(rows, model, first.op, first.ranks, first.nodes);
    } catch (const InputError& e) {
      if (algorithm == hw::CollAlgorithm::kAuto && protocol == hw::CollProtocol::kAuto) throw;
      // A forced algorithm this shape cannot run on the cluster (NVLS across nodes, say).
      text += fmt::format("{}: {}: no scales fitted\n", id, e.what());
      continue;
    }
    f.run = run;
    f.cluster = spec.name;
    check_scale_on_whole_nodes(f, topology, constants, spec, rows, id);
    const auto regimes = calibrate::describe_regimes(f, calibrate::regime_span(rows, model));
    // A run that pins neither regime leaves both to the profile: it compares, fits nothing
    // (it read "fitted over 1 rows" above two "not pinned" lines until 2026-12-06).
    const bool pinned =
        f.bandwidth_rows >= hw::kRowsToPinRegime || f.latency_rows >= hw::kRowsToPinRegime;
    text += fmt::format("{}: NCCL's model on {} {} {} row{}, rms {:.1f} % in log time\n", id,
                        spec.name, pinned ? "fitted over" : "not fitted (no regime pinned) against",
                        f.rows, f.rows == 1 ? "" : "s", 100.0 * f.rms_log_residual);
    for (const auto& line : regimes) text += "  " + line + "\n";
    json.push_back({{"run", run},
                    {"op", hw::to_string(first.op)},
                    {"ranks", first.ranks},
                    {"cluster", spec.name},
                    {"bandwidth_scale", f.bandwidth_scale},
                    {"latency_offset_us", f.latency_offset_us},
                    {"rows", f.rows},
                    {"rms_log_residual", f.rms_log_residual},
                    {"regimes", regimes}});
    fits.push_back(f);
  }
  return fits;
}

// The names NCCL_ALGO and NCCL_PROTO take (any case): a misspelt label would mark every row as
// forced to an algorithm no model matches, and they would answer nothing.
void check_nccl_labels(const std::string& algorithm, const std::string& protocol) {
  const auto check = [](const std::string& option, const std::string& value,
                        const std::vector<std::string>& names) {
    if (value.empty() || std::count(names.begin(), names.end(), lower(value)) > 0) return;
    throw InputError(fmt::format("{}: '{}' is not a name NCCL takes; expected one of {} (any case)",
                                 option, value, fmt::join(names, ", ")));
  };
  check("--algorithm", algorithm,
        {"ring", "tree", "nvls", "nvlstree", "pat", "collnet", "collnetdirect", "collnetchain"});
  check("--protocol", protocol, {"ll", "ll128", "simple"});
}

void report_run(const std::string& log, const calibrate::NcclTestsRun& run, io::Json& runs,
                std::string& text) {
  runs.push_back({{"log", log},
                  {"line", run.first_line},
                  {"op", hw::to_string(run.op)},
                  {"ranks", run.ranks},
                  {"nodes", run.nodes},
                  {"nodes_assumed", run.nodes_assumed},
                  {"rows", run.rows.size()},
                  {"skipped_rows", run.skipped_rows},
                  {"dropped_rows", run.dropped_rows},
                  {"other_type_rows", run.other_kind_rows},
                  {"nccl_tests_version", run.version}});
  if (run.op_option_ignored) runs.back()["op_option_ignored"] = true;
  if (!run.failure.empty()) runs.back()["failure"] = run.failure;
  text += fmt::format(
      "{}:{}: {} on {} ranks / {} nodes{}, {} rows{}{}{}{}{}\n", log, run.first_line,
      hw::to_string(run.op), run.ranks, run.nodes,
      run.nodes_assumed ? " (no rank line names a host: taken as one node; give --nodes)" : "",
      run.rows.size(),
      run.other_kind_rows
          ? fmt::format(" of {} ({} of other data types or reductions dropped: a profile's "
                        "table has no type key)",
                        run.kind, run.other_kind_rows)
          : "",
      run.skipped_rows ? fmt::format(" ({} failed validation, skipped)", run.skipped_rows) : "",
      run.dropped_rows
          ? fmt::format(" ({} of size 0 or without numbers, dropped)", run.dropped_rows)
          : "",
      run.op_option_ignored ? fmt::format(" (--op ignored: the log names its test, {})", run.test)
                            : "",
      run.failure.empty()
          ? ""
          : fmt::format(" (the run ended on an error, its rows before it kept: {})", run.failure));
}

// A run the --device profile already holds (the same log imported into it before): its rows
// would stand twice in the table and its fit count them twice.
void check_not_in_base(const calibrate::NcclTestsRun& run, const hw::DeviceProfile& base,
                       const std::string& device) {
  if (run.rows.empty()) return;
  // A row's measurement, whatever the run it was imported under.
  using Row =
      std::tuple<hw::CollectiveOp, int, int, double, bool, std::int64_t, std::string, std::string>;
  const auto row = [](const hw::CollectiveMeasurement& m) {
    return Row{m.op,       m.ranks,     m.nodes,     m.size.value(),
               m.in_place, m.time.ns(), m.algorithm, m.protocol};
  };
  std::map<Row, std::string> held;  // each base row, and the run it came with
  for (const auto& m : base.collective_table) held.emplace(row(m), m.run);
  const std::string& id = run.rows.front().run;
  const bool all_held = std::all_of(run.rows.begin(), run.rows.end(),
                                    [&](const auto& m) { return held.count(row(m)) > 0; });
  if (all_held) {
    throw InputError(fmt::format(
        "{}: the --device profile '{}' already holds these measurements (imported as '{}'); "
        "import into a profile without them, or leave the log out",
        id, device, held.at(row(run.rows.front()))));
  }
  const bool same_id = std::any_of(base.collective_table.begin(), base.collective_table.end(),
                                   [&](const hw::CollectiveMeasurement& m) { return m.run == id; });
  if (same_id) {
    throw InputError(fmt::format(
        "{}: the --device profile '{}' holds another run imported from this file and line (a log "
        "measured again under the same name?); give the new log a name of its own",
        id, device));
  }
}

// The import's record: the date and tool of the import, the logs' devices; onto a profile
// with a record of its own (a measured one), that record's versions and date are kept, the
// tool line saying both (they were dropped).
hw::MeasurementInfo import_measurement(const std::optional<hw::MeasurementInfo>& base,
                                       const std::vector<std::string>& devices) {
  const std::string now = io::measurement_date_now(/*reproducible=*/true);
  const std::string tool = "megasim calibrate import-nccl-tests";
  hw::MeasurementInfo info = base.value_or(hw::MeasurementInfo{});
  // The measuring run and the latest import: an earlier import's part is replaced, not nested.
  const std::string then = "; then " + tool;
  const auto earlier = base ? base->tool.find(then) : std::string::npos;
  if (base && earlier != std::string::npos) {
    info.tool = fmt::format("{}{} ({})", base->tool.substr(0, earlier), then, now);
  } else if (base && base->tool != tool) {
    info.tool = fmt::format("{} ({}){} ({})", base->tool, base->date, then, now);
  } else {
    info.date = now;
    info.tool = tool;
  }
  for (const auto& d : devices) {
    if (info.device_name.find(d) == std::string::npos)
      info.device_name += (info.device_name.empty() ? "" : "; ") + d;
  }
  return info;
}

void report_overlaps(const std::vector<hw::CollectiveMeasurement>& table, std::size_t first_new,
                     io::Json& runs, std::string& text) {
  struct Run {
    std::string id;
    std::tuple<hw::CollectiveOp, int, int, std::string, std::string> shape;
    std::set<double> sizes;
  };
  std::vector<Run> order;
  std::size_t base_runs = 0;  // the base profile's own runs come first in the table
  for (std::size_t k = 0; k < table.size(); ++k) {
    const auto& m = table[k];
    if (order.empty() || order.back().id != m.run) {
      if (k < first_new) ++base_runs;
      order.push_back({m.run, {m.op, m.ranks, m.nodes, m.algorithm, m.protocol}, {}});
    }
    order.back().sizes.insert(m.size.value());
  }
  for (std::size_t i = base_runs; i < order.size() && i - base_runs < runs.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (order[j].shape != order[i].shape) continue;
      const auto shared = std::count_if(order[i].sizes.begin(), order[i].sizes.end(),
                                        [&](double s) { return order[j].sizes.count(s) > 0; });
      if (shared == 0) continue;
      runs[i - base_runs]["answered_by"] = order[j].id;
      text += fmt::format(
          "{}: {} of its sizes were measured first by {}{}, whose rows the table "
          "answers them with (each run keeps its own fit)\n",
          order[i].id, shared, order[j].id, j < base_runs ? " (in the --device profile)" : "");
      break;
    }
  }
}

}  // namespace megasim::cli
