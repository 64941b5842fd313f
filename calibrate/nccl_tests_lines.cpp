#include "calibrate/nccl_tests_lines.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <set>
#include <system_error>

#include <fmt/format.h>

#include "calibrate/nccl_tests_import.h"

#include "calibrate/log_file.h"
#include "engine/error.h"

namespace megasim::calibrate {

int count_in_log(const std::string& s, const std::string& what, const std::string& at, int least) {
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < least || v > kMaxRanks) {
    throw InputError(
        fmt::format("{}: {} {} is out of range [{}, {}]", at, what, s, least, kMaxRanks));
  }
  return static_cast<int>(v);
}

std::optional<Columns> parse_column_header(const std::vector<std::string>& t) {
  // t[0] is "#"; the names follow.
  Columns c;
  bool has_size = false;
  for (std::size_t i = 1; i < t.size(); ++i) {
    const std::string& name = t[i];
    const std::size_t pos = i - 1;
    if (name == "size") {
      c.size = pos;
      has_size = true;
    } else if (name == "type")
      c.type = pos;
    else if (name == "redop")
      c.redop = pos;
    else if (name == "count")
      c.elements = pos;
    else if (name == "time")
      c.time.push_back(pos);
    else if (name == "algbw")
      c.algbw.push_back(pos);
    else if (name == "busbw")
      c.busbw.push_back(pos);
    // "#wrong" counts wrong elements; the older "error" column is the largest numerical
    // error of a float reduction, non-zero in healthy runs, so it does not reject rows.
    else if (name == "#wrong")
      c.wrong.push_back(pos);
  }
  // -S 1 (nccl-tests 2.19): the header's last word "timestamp" is two words in each row, a
  // date and a time.
  c.count = t.size() - 1 + (t.back() == "timestamp" ? 1 : 0);
  if (!has_size || c.time.empty() || c.time.size() != c.algbw.size() ||
      c.time.size() != c.busbw.size()) {
    return std::nullopt;
  }
  return c;
}

namespace {

std::string join_from(const std::vector<std::string>& t, std::size_t from) {
  std::string s;
  for (std::size_t i = from; i < t.size(); ++i) s += (s.empty() ? "" : " ") + t[i];
  return s;
}

}  // namespace

std::optional<RankLine> parse_rank_line(const std::vector<std::string>& t, const std::string& at) {
  if (t.size() < 6 || t[0] != "Rank" || !is_integer(t[1])) return std::nullopt;
  RankLine r;
  // Compressed: "Rank 0 .. Rank 7 on HOST NAME".
  if (t[2] == ".." && t.size() >= 7 && t[3] == "Rank" && is_integer(t[4]) && t[5] == "on") {
    r.host = t[6];
    r.device = join_from(t, 7);
    const int first = count_in_log(t[1], "rank", at), last = count_in_log(t[4], "rank", at);
    if (last < first) {  // named no rank and was passed over until 2026-12-05
      throw InputError(
          fmt::format("{}: the range Rank {} .. Rank {} runs backwards", at, first, last));
    }
    for (int i = first; i <= last; ++i) {
      r.keys.push_back(r.host + "/" + std::to_string(i));
      r.indices.push_back(i);
    }
    return r;
  }
  // "Rank N [Group G] Pid P on HOST device D [BUS] NAME".
  std::size_t i = 2;
  if (t[i] == "Group" && i + 1 < t.size()) i += 2;
  if (i + 6 > t.size() || t[i] != "Pid" || t[i + 2] != "on" || t[i + 4] != "device") {
    return std::nullopt;
  }
  r.host = t[i + 3];
  const bool bus = i + 6 < t.size() && t[i + 6].front() == '[';
  // Without a bus id, ranks each bound to its own GPU (CUDA_VISIBLE_DEVICES) all say device 0;
  // the old form's "[0x01]" is the bus number alone, which GPUs of two PCI domains can share.
  if (bus && t[i + 6].find(':') != std::string::npos) r.gpu = t[i + 5] + " " + t[i + 6];
  const std::size_t name_at = bus ? i + 7 : i + 6;
  r.device = join_from(t, name_at);
  r.keys.push_back(r.host + "/" + t[i + 1] + "/" + t[1]);
  r.indices.push_back(count_in_log(t[1], "rank", at));
  return r;
}

bool check_results_line(const std::vector<std::string>& body, const std::string& at) {
  // "Out of bounds values : 3 FAILED"
  if (body.size() < 6 || body[0] != "Out" || body[1] != "of" || body[2] != "bounds") return false;
  const std::string& n = body[5];
  if (!n.empty() &&
      std::all_of(n.begin(), n.end(), [](unsigned char ch) { return std::isdigit(ch) != 0; }) &&
      n.find_first_not_of('0') != std::string::npos) {
    throw InputError(
        fmt::format("{}: nccl-tests found {} out-of-bounds values: the run's "
                    "results were wrong, so its times are not measurements",
                    at, n));
  }
  return true;
}

namespace {
// The types nccl-tests prints (src/common.cu, test_typenames) and an element's bytes.
const std::map<std::string, double>& nccl_types() {
  static const std::map<std::string, double> kTypes{
      {"int8", 1}, {"uint8", 1}, {"int32", 4},  {"uint32", 4},   {"int64", 8},  {"uint64", 8},
      {"half", 2}, {"float", 4}, {"double", 8}, {"bfloat16", 2}, {"f8e4m3", 1}, {"f8e5m2", 1}};
  return kTypes;
}
}  // namespace

bool is_nccl_type(const std::string& type) {
  return nccl_types().count(type) != 0;
}

double nccl_type_bytes(const std::string& type) {
  const auto it = nccl_types().find(type);
  return it == nccl_types().end() ? 0.0 : it->second;
}

void check_type_and_op(const std::string& type, const std::string& op, const std::string& at) {
  static const std::set<std::string> kOps{"sum", "prod", "max", "min", "avg", "mulsum", "none"};
  if (!is_nccl_type(type)) {
    throw InputError(fmt::format("{}: data type '{}' is not one nccl-tests prints", at, type));
  }
  if (kOps.count(op) == 0) {
    throw InputError(fmt::format("{}: reduction '{}' is not one nccl-tests prints", at, op));
  }
}

void RankLines::add(const RankLine& line, const std::string& at) {
  if (line.gpu.empty()) identified_ = false;
  for (std::size_t k = 0; k < line.indices.size(); ++k) {
    const auto [it, added] = named_.try_emplace(line.indices[k], Named{line.keys[k], at});
    if (added) {
      ++per_host_[line.host];
      const auto [gpu, fresh] = on_gpu_.try_emplace({line.host, line.gpu}, line.indices[k]);
      if (!fresh && !line.gpu.empty() && shared_.empty()) {
        shared_ = fmt::format("ranks {} and {} both on device {} of {}", gpu->second,
                              line.indices[k], line.gpu, line.host);
      }
    } else if (it->second.key != line.keys[k]) {
      throw InputError(
          fmt::format("{}: rank {} is named twice, here as {} and at {} as {}: two "
                      "device lines claim one rank",
                      at, line.indices[k], line.keys[k], it->second.at, it->second.key));
    }
  }
}

void RankLines::check(const std::string& at, int nodes) const {
  int expected = 0;
  for (const auto& [i, named] : named_) {
    if (i != expected) {
      throw InputError(
          fmt::format("{}: the rank lines name rank {} but not rank {}: a device line is missing",
                      at, i, expected));
    }
    ++expected;
  }
  if (per_host_.empty() || names_may_be_shared(nodes)) return;
  const auto [fewest, most] =
      std::minmax_element(per_host_.begin(), per_host_.end(),
                          [](const auto& a, const auto& b) { return a.second < b.second; });
  if (fewest->second != most->second) {
    throw InputError(fmt::format(
        "{}: the rank lines put {} ranks on {} but {} on {}; megasim keys a measured collective "
        "by its ranks and nodes, taken as an even split: import a run with as many ranks on "
        "each host",
        at, most->second, most->first, fewest->second, fewest->first));
  }
}

RatioRange ratio_range(const hw::CollectiveMeasurement& m, double half_gbps) {
  // A relative slack of 1e-9 keeps a ratio printed exactly on a factor (16 ranks' 1.875) from
  // reading as the next count's through the floating point of the inversion.
  constexpr double kSlack = 1e-9;
  const double a = m.algbw.value() / 1e9, b = m.busbw.value() / 1e9;
  const double lo = std::max(0.0, b - half_gbps) / (a + half_gbps);
  const double hi =
      a > half_gbps ? (b + half_gbps) / (a - half_gbps) : std::numeric_limits<double>::infinity();
  return {lo * (1.0 - kSlack), hi * (1.0 + kSlack)};
}

RankRange ranks_from_ratio(hw::CollectiveOp op, const RatioRange& r) {
  // factor = top (1 - 1/n): n = top / (top - factor), increasing in the factor.
  double top = 0.0;
  switch (op) {
    case hw::CollectiveOp::kAllReduce:
      top = 2.0;
      break;
    case hw::CollectiveOp::kAllGather:
    case hw::CollectiveOp::kReduceScatter:
    case hw::CollectiveOp::kAllToAll:
      top = 1.0;
      break;
    default:
      return {};
  }
  const double most = static_cast<double>(kMaxRanks);
  const auto count = [&](double factor) { return factor >= top ? most : top / (top - factor); };
  RankRange n;
  if (r.lo >= top) return n;
  n.first = static_cast<int>(std::max(1.0, std::ceil(count(r.lo))));
  n.last = static_cast<int>(std::min(most, std::floor(count(r.hi))));
  return n;
}

void check_bus_factor(const std::vector<hw::CollectiveMeasurement>& rows,
                      const std::vector<double>& half_gbps, hw::CollectiveOp op, int ranks) {
  const double factor = hw::bus_factor(op, ranks);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const hw::CollectiveMeasurement& m = rows[i];
    if (m.algbw.value() / 1e9 < kRatioCheckMinGbps || ratio_range(m, half_gbps[i]).holds(factor))
      continue;
    // An op whose factor is one rank count's as every other's (send/recv, broadcast, reduce)
    // is said so, not "at 2 ranks" of a log of 16 (until 2026-12-05).
    const bool any_count = hw::bus_factor(op, 2) == hw::bus_factor(op, 3);
    throw InputError(fmt::format(
        "{}: busbw {:.2f} GB/s is not algbw {:.2f} GB/s times {}'s bus factor {} ({:.4f}); the "
        "row contradicts the run",
        m.origin, m.busbw.value() / 1e9, m.algbw.value() / 1e9, hw::to_string(op),
        any_count ? std::string("at any rank count") : fmt::format("at {} ranks", ranks), factor));
  }
}

int ranks_by_ratio(const std::vector<hw::CollectiveMeasurement>& rows,
                   const std::vector<double>& half_gbps, hw::CollectiveOp op, int claimed,
                   const std::string& said, const std::string& at) {
  std::size_t best = rows.size();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].algbw.value() / 1e9 >= kRatioCheckMinGbps &&
        (best == rows.size() || rows[i].algbw > rows[best].algbw))
      best = i;
  }
  // The rooted ops and send/recv have a factor of 1 at every rank count: nothing to tell.
  if (best == rows.size() || hw::bus_factor(op, 2) == hw::bus_factor(op, 3)) return 0;
  const hw::CollectiveMeasurement& m = rows[best];
  const RatioRange range = ratio_range(m, half_gbps[best]);
  const RankRange n = ranks_from_ratio(op, range);
  if (claimed > 0 && range.holds(hw::bus_factor(op, claimed))) return claimed;
  if (claimed <= 0 && n.first == n.last) return n.first;
  const std::string ratio =
      fmt::format("busbw/algbw = {:f} at {} B", m.busbw / m.algbw, m.size.value());
  const std::string op_name = hw::to_string(op);
  const std::string implied =  // "implies 0" for a ratio of no rank count until 2026-12-05
      n.empty() ? fmt::format("is {}'s bus factor at no rank count", op_name)
      : n.first == n.last
          ? fmt::format("implies {} ranks for {}", n.first, op_name)
          : fmt::format("fits any of {} to {} ranks for {} within its printed digits", n.first,
                        n.last, op_name);
  if (claimed > 0) {
    throw InputError(fmt::format("{}: {}{} ranks, but {} {}", at, said, claimed, ratio, implied));
  }
  if (n.empty()) throw InputError(fmt::format("{}: {} {}", at, ratio, implied));
  throw InputError(fmt::format("{}: {} {}; pass --ranks", at, ratio, implied));
}

std::optional<hw::CollectiveOp> op_from_test_name(const std::string& test) {
  std::string t = test;
  for (const std::string suffix : {"_mpi", "_perf"}) {
    if (t.size() > suffix.size() &&
        t.compare(t.size() - suffix.size(), suffix.size(), suffix) == 0) {
      t.resize(t.size() - suffix.size());
    }
  }
  // `megasim collective --op`'s spellings too (all_to_all refused until 2026-12-05).
  if (t == "all_to_all") t = "alltoall";
  if (t == "send_recv") t = "sendrecv";
  return hw::collective_op_from_string(t);
}

std::optional<CountCheck> count_check(const std::vector<std::string>& t, const Columns& c,
                                      double size, int line) {
  if (!c.elements || !c.type || *c.elements >= t.size() || *c.type >= t.size()) return std::nullopt;
  const std::string& count = t[*c.elements];
  if (count.empty() || count.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  return CountCheck{size, std::strtod(count.c_str(), nullptr), nccl_type_bytes(t[*c.type]), line};
}

void check_counts(const std::vector<CountCheck>& checks, hw::CollectiveOp op, int ranks,
                  const std::string& origin) {
  const bool shared = hw::splits_buffer(op);
  for (const auto& c : checks) {
    const double bytes = c.elements * c.type_bytes;
    if (bytes == c.size || (shared && bytes * ranks == c.size)) continue;
    throw InputError(fmt::format(
        "{}:{}: size {:.0f} B is not count {:.0f} × {:.0f} B{}; the row contradicts itself", origin,
        c.line, c.size, c.elements, c.type_bytes,
        shared ? fmt::format(" (× {} ranks)", ranks) : std::string()));
  }
}

std::optional<std::string> failure_line(const std::string& line) {
  for (const char* what : {"Test NCCL failure", "Test CUDA failure", "Test failure"}) {
    if (line.find(what) == std::string::npos) continue;
    const auto first = line.find_first_not_of(" \t"), last = line.find_last_not_of(" \t\r");
    return line.substr(first, last - first + 1);
  }
  return std::nullopt;
}

std::optional<double> header_max_bytes(const std::vector<std::string>& body) {
  const auto it = std::find(body.begin(), body.end(), "maxBytes");
  if (it == body.end() || std::next(it) == body.end() || !is_integer(*std::next(it)))
    return std::nullopt;
  return std::stod(*std::next(it));
}

void check_not_cut(const std::vector<hw::CollectiveMeasurement>& rows,
                   std::optional<double> max_bytes, bool closed, const std::string& at) {
  if (closed || !max_bytes || rows.empty()) return;
  double largest = 0.0;
  for (const auto& m : rows) largest = std::max(largest, m.size.value());
  if (largest >= 0.5 * *max_bytes) return;
  throw InputError(fmt::format(
      "{}: the run's rows stop at {:.0f} B, its header asks for sizes up to {:.0f} B (maxBytes), "
      "and it has no 'Avg bus bandwidth' line: the log is cut off; import the whole log",
      at, largest, *max_bytes));
}

}  // namespace megasim::calibrate
