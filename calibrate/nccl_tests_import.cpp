#include "calibrate/nccl_tests_import.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "engine/error.h"

namespace megasim::calibrate {
namespace {

// busbw and algbw are printed with two decimals, so their ratio is only checked on rows fast
// enough for the rounding to stay below this relative tolerance.
constexpr double kRatioTolerance = 0.02;
constexpr double kRatioCheckMinGbps = 1.0;

std::vector<std::string> tokens(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string t; in >> t;) out.push_back(t);
  return out;
}

std::optional<double> to_number(const std::string& s) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

bool is_integer(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Where each value sits in a data row, from the column header line.
struct Columns {
  std::size_t count = 0;  // tokens per data row
  std::size_t size = 0;
  std::vector<std::size_t> time, algbw, busbw, wrong;  // [0] out-of-place, [1] in-place
};

std::optional<Columns> parse_column_header(const std::vector<std::string>& t) {
  // t[0] is "#"; the names follow.
  Columns c;
  bool has_size = false;
  for (std::size_t i = 1; i < t.size(); ++i) {
    const std::string& name = t[i];
    const std::size_t pos = i - 1;
    if (name == "size") { c.size = pos; has_size = true; }
    else if (name == "time") c.time.push_back(pos);
    else if (name == "algbw") c.algbw.push_back(pos);
    else if (name == "busbw") c.busbw.push_back(pos);
    // "#wrong" counts wrong elements; the older "error" column is the largest numerical
    // error of a float reduction, non-zero in healthy runs, so it does not reject rows.
    else if (name == "#wrong") c.wrong.push_back(pos);
  }
  c.count = t.size() - 1;
  if (!has_size || c.time.empty() || c.time.size() != c.algbw.size() ||
      c.time.size() != c.busbw.size()) {
    return std::nullopt;
  }
  return c;
}

struct RunBuilder {
  NcclTestsRun run;
  std::optional<Columns> columns;
  std::set<std::string> rank_keys;  // host/pid/rank, counted once each
  std::set<std::string> hosts;
  int n_thread = 0, n_gpus = 0;
  bool started = false;
};

int ranks_from_ratio(hw::CollectiveOp op, double ratio) {
  // Invert nccl-tests' bus factor: all-reduce 2(n-1)/n, all-gather and friends (n-1)/n.
  switch (op) {
    case hw::CollectiveOp::kAllReduce:
      return ratio < 2.0 ? static_cast<int>(std::lround(2.0 / (2.0 - ratio))) : 0;
    case hw::CollectiveOp::kAllGather:
    case hw::CollectiveOp::kReduceScatter:
    case hw::CollectiveOp::kAllToAll:
      return ratio < 1.0 ? static_cast<int>(std::lround(1.0 / (1.0 - ratio))) : 0;
    default: return 0;
  }
}

}  // namespace

std::optional<hw::CollectiveOp> op_from_test_name(const std::string& test) {
  std::string t = test;
  for (const std::string suffix : {"_mpi", "_perf"}) {
    if (t.size() > suffix.size() && t.compare(t.size() - suffix.size(), suffix.size(), suffix) == 0) {
      t.resize(t.size() - suffix.size());
    }
  }
  return hw::collective_op_from_string(t);
}

std::vector<NcclTestsRun> parse_nccl_tests_log(const std::string& text,
                                               const std::string& origin,
                                               const ImportOptions& options) {
  static const std::regex kVersion(R"(nccl-tests version\s+(\S+))");
  static const std::regex kStarting(R"(Collective test starting:\s+(\S+))");
  static const std::regex kThread(R"(#\s*nThread\s+(\d+)\s+nGpus\s+(\d+))");
  static const std::regex kRankRange(R"(Rank\s+(\d+)\s+\.\.\s+Rank\s+(\d+)\s+on\s+(\S+)\s+(.*\S))");
  static const std::regex kRankLine(
      R"(Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+\d+\s+\[[^\]]*\]\s+(.*\S))");
  static const std::regex kAvg(R"(Avg bus bandwidth\s*:\s*([0-9.eE+-]+))");
  // Launchers tag each line with the rank that printed it: `mpirun --tag-output` writes
  // "[1,0]<stdout>:" (Open MPI) or "[0]" (also inside the line), `srun -l` writes "0: ".
  static const std::regex kMpiTag(R"(\[\d+(?:,\d+)*\](?:<std(?:out|err)>:)?)");
  static const std::regex kSrunTag(R"(^\s*\d+:\s)");

  std::vector<NcclTestsRun> runs;
  RunBuilder b;
  int line_no = 0;
  auto where = [&](int line) { return origin + ":" + std::to_string(line); };

  auto finish_run = [&] {
    if (!b.started) return;
    NcclTestsRun& r = b.run;
    if (r.rows.empty()) {
      b = RunBuilder{};
      return;  // a header with no rows (an aborted run) carries nothing to import
    }
    // The op: the log's test name, else the caller's.
    if (!r.test.empty()) {
      const auto op = op_from_test_name(r.test);
      if (!op) {
        throw InputError(where(r.first_line) + ": test '" + r.test +
                         "' is not a collective megasim models (all_reduce, all_gather, "
                         "reduce_scatter, alltoall, sendrecv, broadcast, reduce)");
      }
      r.op = *op;
    } else if (options.op) {
      r.op = *options.op;
    } else {
      throw InputError(where(r.first_line) +
                       ": the log does not say which test ran (no 'Collective test starting' "
                       "line); pass --op");
    }
    // Ranks from the device lines, cross-checked against busbw/algbw.
    int from_lines = static_cast<int>(b.rank_keys.size());
    int from_ratio = 0;
    for (const auto& m : r.rows) {
      if (m.algbw.value() / 1e9 < kRatioCheckMinGbps) continue;
      const double ratio = m.busbw / m.algbw;
      from_ratio = ranks_from_ratio(r.op, ratio);
      if (from_lines > 0 &&
          std::fabs(ratio - hw::bus_factor(r.op, from_lines)) >
              kRatioTolerance * hw::bus_factor(r.op, from_lines) &&
          hw::bus_factor(r.op, from_lines) != 1.0) {
        throw InputError(where(r.first_line) + ": the device lines list " +
                         std::to_string(from_lines) + " ranks, but busbw/algbw = " +
                         std::to_string(ratio) + " at " + std::to_string(m.size.value()) +
                         " B implies " + std::to_string(from_ratio) + " for " +
                         hw::to_string(r.op));
      }
      break;
    }
    r.ranks = from_lines > 0 ? from_lines : from_ratio > 0 ? from_ratio : b.n_thread * b.n_gpus;
    if (r.ranks <= 0) {
      throw InputError(where(r.first_line) +
                       ": cannot tell the rank count (no device lines, no usable busbw/algbw)");
    }
    r.nodes = options.nodes.value_or(b.hosts.empty() ? 1 : static_cast<int>(b.hosts.size()));
    for (auto& m : r.rows) {
      m.run = where(r.first_line);
      m.op = r.op;
      m.ranks = r.ranks;
      m.nodes = r.nodes;
    }
    runs.push_back(std::move(r));
    b = RunBuilder{};
  };

  auto start = [&] {
    if (!b.started) {
      b.started = true;
      b.run.first_line = line_no;
    }
  };

  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find('[') != std::string::npos) line = std::regex_replace(line, kMpiTag, " ");
    line = std::regex_replace(line, kSrunTag, "");
    std::smatch m;
    if (std::regex_search(line, m, kVersion)) {
      finish_run();
      start();
      b.run.version = m[1];
      continue;
    }
    if (std::regex_search(line, m, kStarting)) {
      if (!b.run.rows.empty() || !b.run.test.empty()) finish_run();
      start();
      b.run.test = m[1];
      continue;
    }
    if (std::regex_search(line, m, kThread)) {
      // Each MPI process of an old log repeats this line: a new run only after rows.
      if (!b.run.rows.empty()) finish_run();
      start();
      b.n_thread = std::stoi(m[1]);
      b.n_gpus = std::stoi(m[2]);
      continue;
    }
    if (std::regex_search(line, m, kRankRange)) {
      start();
      const int lo = std::stoi(m[1]), hi = std::stoi(m[2]);
      for (int i = lo; i <= hi; ++i) b.rank_keys.insert(m[3].str() + "/" + std::to_string(i));
      b.hosts.insert(m[3]);
      const std::string dev = m[4];
      if (std::find(b.run.devices.begin(), b.run.devices.end(), dev) == b.run.devices.end()) {
        b.run.devices.push_back(dev);
      }
      continue;
    }
    if (std::regex_search(line, m, kRankLine)) {
      start();
      b.rank_keys.insert(m[3].str() + "/" + m[2].str() + "/" + m[1].str());
      b.hosts.insert(m[3]);
      const std::string dev = m[4];
      if (std::find(b.run.devices.begin(), b.run.devices.end(), dev) == b.run.devices.end()) {
        b.run.devices.push_back(dev);
      }
      continue;
    }
    if (std::regex_search(line, m, kAvg)) {
      b.run.avg_busbw_gbps = to_number(m[1]);
      continue;
    }
    const auto t = tokens(line);
    if (t.empty()) continue;
    if (t[0] == "#") {
      if (std::find(t.begin(), t.end(), "size") != t.end() &&
          std::find(t.begin(), t.end(), "algbw") != t.end()) {
        start();
        b.columns = parse_column_header(t);
      }
      continue;
    }
    // A data row: integer size first, as many tokens as the header names.
    if (!b.columns || !is_integer(t[0]) || t.size() != b.columns->count) continue;
    const Columns& c = *b.columns;
    const auto size = to_number(t[c.size]);
    if (!size || *size <= 0.0) continue;  // the size-0 rows of old logs carry no bandwidth
    for (std::size_t side = 0; side < c.time.size(); ++side) {
      const auto time = to_number(t[c.time[side]]);
      const auto algbw = to_number(t[c.algbw[side]]);
      const auto busbw = to_number(t[c.busbw[side]]);
      if (!time || !algbw || !busbw) continue;
      if (side < c.wrong.size()) {
        const auto wrong = to_number(t[c.wrong[side]]);
        if (wrong && *wrong != 0.0) {
          ++b.run.skipped_rows;
          continue;
        }
      }
      hw::CollectiveMeasurement row;
      row.size = Bytes(*size);
      row.in_place = side == 1;
      row.time = Time::from_us(*time);
      row.algbw = gbyte_per_s(*algbw);
      row.busbw = gbyte_per_s(*busbw);
      row.algorithm = options.algorithm;
      row.protocol = options.protocol;
      row.origin = where(line_no);
      b.run.rows.push_back(row);
    }
  }
  finish_run();
  if (runs.empty()) {
    throw InputError(origin + ": no nccl-tests result rows found (expected a '#  size  count  "
                              "type ... time  algbw  busbw' header followed by rows)");
  }
  return runs;
}

std::vector<NcclTestsRun> import_nccl_tests_file(const std::filesystem::path& file,
                                                 const ImportOptions& options) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) {
    throw InputError(file.string() + ": not a readable file");
  }
  std::ifstream in(file, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  ImportOptions o = options;
  const std::string text = s.str();
  // Logs without a "Collective test starting" line may still be named after their test.
  if (!o.op) {
    const std::string stem = file.stem().string();
    for (const std::string name : {"all_reduce", "all_gather", "reduce_scatter", "alltoall",
                                   "sendrecv", "broadcast"}) {
      if (stem.find(name) != std::string::npos) o.op = hw::collective_op_from_string(name);
    }
  }
  return parse_nccl_tests_log(text, file.string(), o);
}

}  // namespace megasim::calibrate
