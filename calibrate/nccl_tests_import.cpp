#include "calibrate/nccl_tests_import.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <system_error>
#include <tuple>

#include <fmt/format.h>

#include "calibrate/log_file.h"
#include "calibrate/nccl_tests_lines.h"
#include "engine/error.h"

namespace megasim::calibrate {
namespace {

// A row's time (µs) and bandwidths (GB/s) past these are no measurement (an hour per
// collective; a thousand times NVLink 5's per-GPU bandwidth): refused, not fitted.
constexpr double kMaxRowTimeUs = 3.6e9;
// Below a nanosecond is no measurement either (and a profile keeps times from 1e-3 µs up).
constexpr double kMinRowTimeUs = 1e-3;
// Beyond the rounding of the printed digits, what algbw and size over time may differ by.
constexpr double kAlgbwSlack = 0.01;
constexpr double kMaxRowGbps = 1e6;
struct RunBuilder {
  NcclTestsRun run;
  std::optional<Columns> columns;
  RankLines ranks;
  int n_thread = 0, n_gpus = 0;
  std::optional<double> max_bytes;  // the header's
  bool started = false, results_line = false;  // "Out of bounds values": the table ended
  // (size, side, type and op) → (µs, line): a size measured twice with other figures is refused.
  std::map<std::tuple<double, std::size_t, std::string>, std::pair<double, int>> seen;
  // Each row's algbw against size over time, checked once the run's op is known.
  struct AlgbwCheck {
    double algbw, implied, tolerance;
    int line;
  };
  std::vector<AlgbwCheck> algbw_checks;
  std::vector<CountCheck> count_checks;  // checked once the run's op and ranks are known
  std::vector<double> half_gbps;  // per row of run.rows: half the last printed place of its bws
};

// The op: the log's test name, else the caller's.
hw::CollectiveOp run_op(const NcclTestsRun& r, const std::string& at,
                        const ImportOptions& options) {
  if (!r.test.empty()) {
    const auto op = op_from_test_name(r.test);
    if (!op) {
      throw InputError(at + ": test '" + r.test +
                       "' is not a collective megasim models (all_reduce, all_gather, "
                       "reduce_scatter, alltoall, sendrecv, broadcast, reduce)");
    }
    return *op;
  }
  if (options.op) return *options.op;
  if (options.op_from_file_name) return *options.op_from_file_name;
  throw InputError(at +
                   ": the log does not say which test ran (no 'Collective test starting' "
                   "line); pass --op");
}

// Ranks from --ranks or the device lines, cross-checked against busbw/algbw on the fastest row
// (ranks_by_ratio); without either, from that ratio; with no usable ratio, or one that fits
// several counts, an InputError asking for --ranks (nThread x nGpus is one process's count).
int run_ranks(const RunBuilder& b, hw::CollectiveOp op, const std::string& at,
              const ImportOptions& options) {
  const int from_lines = b.ranks.count();
  b.ranks.check(at, options.nodes.value_or(0));
  if (options.ranks && from_lines > 0 && *options.ranks != from_lines) {
    throw InputError(fmt::format("{}: --ranks {} but the device lines list {} ranks", at,
                                 *options.ranks, from_lines));
  }
  const int claimed = options.ranks ? *options.ranks : from_lines;
  const std::string said = options.ranks ? "--ranks says " : "the device lines list ";
  const int from_ratio = ranks_by_ratio(b.run.rows, b.half_gbps, op, claimed, said, at);
  // Every row's busbw, not only the fastest's: against the factor at the run's ranks where it
  // tells rank counts apart, against its one value where it does not (send/recv, broadcast and
  // reduce: busbw is algbw, a log with 1.75 x was imported until 2026-12-05).
  const int ranks_now = claimed > 0 ? claimed : from_ratio;
  if (hw::bus_factor(op, 2) == hw::bus_factor(op, 3))
    check_bus_factor(b.run.rows, b.half_gbps, op, 2);
  else if (ranks_now > 0)
    check_bus_factor(b.run.rows, b.half_gbps, op, ranks_now);
  if (options.ranks) return *options.ranks;
  // nThread x nGpus counts one process's GPUs: under MPI the ranks are that times the
  // processes, which only the device lines (or a bandwidth ratio) tell.
  const int ranks = from_lines > 0 ? from_lines : from_ratio;
  if (ranks <= 0) {
    throw InputError(at + ": cannot tell the rank count (no device lines, no usable busbw/algbw); "
                          "pass --ranks");
  }
  return ranks;
}

// Nodes from --nodes or the rank lines' host names. Distinct names are distinct hosts, so
// --nodes counts at least the names, and more only where a name may stand for several
// (RankLines::names_may_be_shared); a name seen standing for several needs --nodes above them.
int run_nodes(const RankLines& ranks, const std::string& at, const ImportOptions& options) {
  const int hosts = ranks.hosts(), nodes = options.nodes.value_or(0);
  const std::string& shared = ranks.shared_host_name();
  if (!shared.empty() && nodes <= hosts) {
    throw InputError(fmt::format(
        "{}: {}: the hosts share a name, so the rank lines cannot count them; pass --nodes{}", at,
        shared, options.nodes ? fmt::format(" above the {} name(s)", hosts) : ""));
  }
  if (options.nodes && hosts > 0 && nodes != hosts &&
      !(ranks.names_may_be_shared(nodes) && nodes > hosts)) {
    throw InputError(
        fmt::format("{}: --nodes {} but the rank lines name {} host(s); drop --nodes (the "
                    "rank lines say how many hosts ran)",
                    at, nodes, hosts));
  }
  return options.nodes.value_or(hosts > 0 ? hosts : 1);
}

// Reads a log line by line. A run's lines collect in `b_`; the run is closed into `runs_` when
// the next run's first line arrives or the log ends.
class LogParser {
 public:
  LogParser(const std::string& origin, const ImportOptions& options)
      : origin_(origin), options_(options) {}

  void read_line(const std::string& raw) {
    ++line_no_;
    const std::string line =
        strip_tags(!raw.empty() && raw.back() == '\r' ? raw.substr(0, raw.size() - 1) : raw);
    if (read_marker_line(line)) return;
    const auto t = tokens(line);
    if (t.empty()) return;
    // Header lines start with "#" (some pasted logs lost it); look at what follows.
    const std::vector<std::string> body(t.begin() + (t[0] == "#" ? 1 : 0), t.end());
    if (read_setup_line(body)) return;
    if (t[0] == "#") {
      if (check_results_line(body, where(origin_, line_no_))) b_.results_line = true;
      if (std::find(t.begin(), t.end(), "size") != t.end() &&
          std::find(t.begin(), t.end(), "algbw") != t.end()) {
        start_run();
        b_.columns = parse_column_header(t);
        if (std::find(t.begin(), t.end(), "cputime") != t.end()) {
          throw InputError(fmt::format(
              "{}: the log was run with -C 1: its time columns are the host's (cputime) "
              "while its bandwidths come from the GPU's; rerun nccl-tests without -C",
              where(origin_, line_no_)));
        }
        // A header that names the columns otherwise (a hand edit, a fork of nccl-tests) would
        // leave its rows unread and the run dropped without a word.
        if (!b_.columns) {
          throw InputError(fmt::format(
              "{}: a column header megasim cannot read: it needs 'size' and, for each of the "
              "out-of-place and in-place halves, 'time', 'algbw' and 'busbw'",
              where(origin_, line_no_)));
        }
      }
      return;
    }
    read_data_row(t);
  }

  std::vector<NcclTestsRun> finish() {
    finish_run();
    return std::move(runs_);
  }

 private:
  void start_run() {
    if (!b_.started) {
      b_.started = true;
      b_.run.first_line = line_no_;
    }
  }

  void finish_run() {
    if (!b_.started) return;
    NcclTestsRun& r = b_.run;
    if (r.rows.empty()) {
      // A run whose table was begun and never ended was killed before its first size: the log
      // is cut, as one cut after some rows is (dropped without a word until 2026-12-06).
      if (b_.columns && !(r.avg_busbw_gbps || !r.failure.empty() || b_.results_line)) {
        throw InputError(fmt::format(
            "{}: the run's column header has no rows after it and no 'Avg bus bandwidth' line: "
            "the log is cut off before the run's first size; import the whole log, or leave "
            "that run out of it",
            where(origin_, r.first_line)));
      }
      // Rows all without numbers, or all failed nccl-tests' own check: the run measured
      // nothing, and was dropped without a word until 2026-12-07.
      if (r.dropped_rows + r.skipped_rows > 0) {
        throw InputError(fmt::format(
            "{}: none of the run's rows can be imported ({} without numbers: N/A, nan or size 0; "
            "{} failed nccl-tests' check, #wrong > 0); rerun it, or leave it out of the log",
            where(origin_, r.first_line), r.dropped_rows, r.skipped_rows));
      }
      b_ = RunBuilder{};
      return;  // a header with no rows (an aborted run) carries nothing to import
    }
    const std::string at = where(origin_, r.first_line);
    check_not_cut(r.rows, b_.max_bytes, r.avg_busbw_gbps || !r.failure.empty() || b_.results_line,
                  at);
    r.op = run_op(r, at, options_);
    r.op_option_ignored = options_.op && !r.test.empty() && *options_.op != r.op;
    check_algbw(r.op);
    r.ranks = run_ranks(b_, r.op, at, options_);
    check_counts(b_.count_checks, r.op, r.ranks, origin_);
    r.nodes = run_nodes(b_.ranks, at, options_);
    r.nodes_assumed = !options_.nodes && b_.ranks.hosts() == 0;
    if (r.ranks % r.nodes != 0) {  // --nodes 3 for 16 ranks was written (until 2026-12-05)
      throw InputError(fmt::format("{}: --nodes {}: {} ranks do not spread evenly over {} nodes",
                                   at, r.nodes, r.ranks, r.nodes));
    }
    for (auto& m : r.rows) {
      m.run = at;
      m.op = r.op;
      m.ranks = r.ranks;
      m.nodes = r.nodes;
    }
    runs_.push_back(std::move(r));
    b_ = RunBuilder{};
  }

  // The lines found by a phrase anywhere in them: version, test name, average bus bandwidth.
  bool read_marker_line(const std::string& line) {
    if (line.find("nccl-tests version") != std::string::npos) {
      finish_run();
      start_run();
      b_.run.version = word_after(line, "nccl-tests version");
      return true;
    }
    if (line.find("Collective test starting:") != std::string::npos) {
      if (!b_.run.rows.empty() || !b_.run.test.empty()) finish_run();
      start_run();
      b_.run.test = word_after(line, "Collective test starting:");
      return true;
    }
    // The run stopped on an error inside its table (after the column header, before its
    // average): its rows before it stand, and the import says so. One after the average is
    // another process's, or the next run's.
    if (auto failure = failure_line(line)) {
      if (b_.columns && !b_.run.avg_busbw_gbps && b_.run.failure.empty())
        b_.run.failure = std::move(*failure);
      return true;
    }
    if (line.find("Avg bus bandwidth") != std::string::npos) {
      b_.run.avg_busbw_gbps = to_number(word_after(line, ":"));
      return true;
    }
    return false;
  }

  // The header's "nThread N ... nGpus G" line and its rank lines; `body` lacks the "#".
  bool read_setup_line(const std::vector<std::string>& body) {
    if (body.size() >= 4 && body[0] == "nThread" && body[2] == "nGpus" && is_integer(body[1]) &&
        is_integer(body[3])) {
      // Each MPI process of an old log repeats this line: a new run only after rows.
      if (!b_.run.rows.empty()) finish_run();
      start_run();
      const std::string at = where(origin_, line_no_);
      b_.n_thread = count_in_log(body[1], "nThread", at, 1);  // a run has one of each at least
      b_.n_gpus = count_in_log(body[3], "nGpus", at, 1);
      b_.max_bytes = header_max_bytes(body);
      if (std::int64_t{b_.n_thread} * b_.n_gpus > kMaxRanks) {
        throw InputError(at + ": nThread × nGpus = " + body[1] + " × " + body[3] +
                         " ranks; a log may name at most " + std::to_string(kMaxRanks));
      }
      return true;
    }
    if (const auto rank = parse_rank_line(body, where(origin_, line_no_))) {
      start_run();
      b_.ranks.add(*rank, where(origin_, line_no_));
      if (b_.ranks.count() > kMaxRanks) {
        throw InputError(where(origin_, line_no_) + ": the rank lines name more than " +
                         std::to_string(kMaxRanks) + " ranks");
      }
      if (std::find(b_.run.devices.begin(), b_.run.devices.end(), rank->device) ==
          b_.run.devices.end()) {
        b_.run.devices.push_back(rank->device);
      }
      return true;
    }
    return false;
  }

  // A time in [kMinRowTimeUs, kMaxRowTimeUs] µs, bandwidths in [0, kMaxRowGbps] GB/s; and the
  // algbw check for the run's end (nccl-tests prints size over time, rounded as printed).
  void check_row_figures(double size, const std::string& time_text, double time_us,
                         const std::string& algbw_text, double algbw, double busbw) {
    for (const auto& [what, v, lo, hi] :
         {std::tuple{"time (us)", time_us, kMinRowTimeUs, kMaxRowTimeUs},
          std::tuple{"algbw", algbw, 0.0, kMaxRowGbps},
          std::tuple{"busbw", busbw, 0.0, kMaxRowGbps}}) {
      if (v >= lo && v <= hi) continue;
      throw InputError(fmt::format("{}: {} {} is out of range; expected [{}, {}]",
                                   where(origin_, line_no_), what, v, lo, hi));
    }
    const double implied = size / time_us / 1e3;  // B/µs → GB/s
    const double tolerance = half_last_place(algbw_text) +
                             implied * (half_last_place(time_text) / time_us + kAlgbwSlack);
    b_.algbw_checks.push_back({algbw, implied, tolerance, line_no_});
  }

  // nccl-tests 2.0's all-gather and reduce-scatter printed algbw as (n-1)/n of the size over
  // the time: for those ops any such fraction, from 1/2 up, is the log's own convention.
  void check_algbw(hw::CollectiveOp op) const {
    const bool fraction_ok =
        op == hw::CollectiveOp::kAllGather || op == hw::CollectiveOp::kReduceScatter;
    for (const auto& c : b_.algbw_checks) {
      if (std::fabs(c.algbw - c.implied) <= c.tolerance) continue;
      if (fraction_ok && c.algbw <= c.implied + c.tolerance &&
          c.algbw >= 0.5 * c.implied - c.tolerance)
        continue;
      throw InputError(
          fmt::format("{}: algbw {} GB/s is not the size over the time ({:.4g} "
                      "GB/s); the row contradicts itself",
                      where(origin_, c.line), c.algbw, c.implied));
    }
  }

  // A data row: integer size first, as many tokens as the header names; one measurement per
  // side (out-of-place, in-place) whose numbers parse and whose #wrong is zero. A row cut short
  // or with more fields is refused, not dropped.
  void read_data_row(const std::vector<std::string>& t) {
    if (!b_.columns) return;
    if (!is_integer(t[0])) {
      // A row of the table's shape and a data type nccl-tests prints is a data row: a size
      // that is no whole number of bytes (-1, nan, 1e308) is refused, not passed over.
      const Columns& c = *b_.columns;
      if (t.size() == c.count && c.type && *c.type < t.size() && is_nccl_type(t[*c.type])) {
        throw InputError(fmt::format("{}: size '{}' is not a whole number of bytes",
                                     where(origin_, line_no_), t[0]));
      }
      return;
    }
    if (t.size() != b_.columns->count) {
      throw InputError(
          fmt::format("{}: a data row of {} fields, where the column header "
                      "names {}: the row is cut short or has fields of more",
                      where(origin_, line_no_), t.size(), b_.columns->count));
    }
    const Columns& c = *b_.columns;
    check_type_and_op(c.type ? t[*c.type] : "float", c.redop ? t[*c.redop] : "sum",
                      where(origin_, line_no_));
    const auto size = to_number(t[c.size]);
    if (!size || *size <= 0.0) {  // the size-0 rows of old logs carry no bandwidth
      b_.run.dropped_rows += static_cast<int>(c.time.size());
      return;
    }
    if (auto check = count_check(t, c, *size, line_no_)) b_.count_checks.push_back(*check);
    for (std::size_t side = 0; side < c.time.size(); ++side) {
      const auto time = to_number(t[c.time[side]]);
      const auto algbw = to_number(t[c.algbw[side]]);
      const auto busbw = to_number(t[c.busbw[side]]);
      if (!time || !algbw || !busbw) {  // "N/A", "nan", "inf": nothing to import
        ++b_.run.dropped_rows;
        continue;
      }
      check_row_figures(*size, t[c.time[side]], *time, t[c.algbw[side]], *algbw, *busbw);
      const auto wrong =
          side < c.wrong.size() ? to_number(t[c.wrong[side]]) : std::optional<double>{};
      if (wrong && *wrong != 0.0) {
        ++b_.run.skipped_rows;
        continue;
      }
      hw::CollectiveMeasurement row;
      row.size = Bytes(*size);
      row.in_place = side == 1;
      row.time = Time::from_us(*time);
      row.algbw = gbyte_per_s(*algbw);
      row.busbw = gbyte_per_s(*busbw);
      row.algorithm = options_.algorithm;
      row.protocol = options_.protocol;
      row.origin = where(origin_, line_no_);
      // A size twice in one run: the same figures (a launcher echoing a line) are kept once;
      // other figures contradict each other, and the table would answer with the first.
      const std::string kind = (c.type ? t[*c.type] : "") + "/" + (c.redop ? t[*c.redop] : "");
      // -d all or -o all: a table has no data-type key, so a run keeps its first type and
      // reduction and counts the others' rows.
      if (b_.run.kind.empty()) b_.run.kind = kind;
      if (kind != b_.run.kind) {
        ++b_.run.other_kind_rows;
        continue;
      }
      const auto [it, fresh] = b_.seen.try_emplace({*size, side, kind}, *time, line_no_);
      if (!fresh) {
        if (it->second.first == *time) continue;
        throw InputError(fmt::format(
            "{}: size {} B again in this run, in {} us where line {} "
            "says {} us; one run measures each size once",
            where(origin_, line_no_), *size, *time, it->second.second, it->second.first));
      }
      if (++rows_read_ > kMaxImportedRows) {
        throw InputError(
            fmt::format("{}: more than {} measurements in one log; an import holds "
                        "at most that many",
                        where(origin_, line_no_), kMaxImportedRows));
      }
      b_.run.rows.push_back(row);
      b_.half_gbps.push_back(std::max({kLeastHalfPlaceGbps, half_last_place(t[c.algbw[side]]),
                                       half_last_place(t[c.busbw[side]])}));
    }
  }

  const std::string& origin_;
  const ImportOptions& options_;
  std::vector<NcclTestsRun> runs_;
  RunBuilder b_;
  int line_no_ = 0;
  std::size_t rows_read_ = 0;
};

}  // namespace

std::vector<NcclTestsRun> parse_nccl_tests_log(const std::string& text,
                                               const std::string& origin,
                                               const ImportOptions& options) {
  LogParser parser(origin, options);
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) parser.read_line(line);
  std::vector<NcclTestsRun> runs = parser.finish();
  if (runs.empty()) {
    throw InputError(origin + ": no nccl-tests result rows found (expected a '#  size  count  "
                              "type ... time  algbw  busbw' header followed by rows)");
  }
  return runs;
}

std::vector<NcclTestsRun> import_nccl_tests_file(const std::filesystem::path& file,
                                                 const ImportOptions& options) {
  const std::string text = read_log_file(file);
  ImportOptions o = options;
  // Logs without a "Collective test starting" line may still be named after their test.
  if (!o.op) {
    const std::string stem = file.stem().string();
    for (const std::string name : {"all_reduce", "all_gather", "reduce_scatter", "alltoall",
                                   "sendrecv", "broadcast"}) {
      if (stem.find(name) != std::string::npos)
        o.op_from_file_name = hw::collective_op_from_string(name);
    }
  }
  return parse_nccl_tests_log(text, file.string(), o);
}

}  // namespace megasim::calibrate
