// The lines of an nccl-tests log, one at a time: the column header (where each figure sits in a
// row) and the rank lines in their long, old and compressed forms. Counts past kMaxRanks are an
// InputError naming the line.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "hw/device_profile.h"

namespace megasim::calibrate {

// busbw/algbw is checked on rows of at least this algbw (GB/s), where the printed digits
// still tell the bus factor within a few percent.
constexpr double kRatioCheckMinGbps = 1.0;
// nccl-tests prints bandwidths to two decimals: a log printing more (rescaled by a script) is
// held to those, since its digits past them carry the first rounding.
constexpr double kLeastHalfPlaceGbps = 0.005;

// Ranks one log may list: far beyond any published nccl-tests run (tens of thousands of GPUs),
// and small enough that the set of rank keys a range expands to stays a few MiB.
constexpr std::int64_t kMaxRanks = std::int64_t{1} << 17;

// A count the log states (ranks, threads, GPUs): digits within [least, kMaxRanks], else an error
// naming `at`.
int count_in_log(const std::string& s, const std::string& what, const std::string& at,
                 int least = 0);

// Where each value sits in a data row, from the column header line.
struct Columns {
  std::size_t count = 0;  // tokens per data row
  std::size_t size = 0;
  std::vector<std::size_t> time, algbw, busbw, wrong;  // [0] out-of-place, [1] in-place
  std::optional<std::size_t> type, redop;  // one table holds every type and op of -d/-o all
  std::optional<std::size_t> elements;     // "count": elements, the buffer's or a rank's share
};

// The header's tokens, "#" first; nothing when they name no size, time and bandwidths.
std::optional<Columns> parse_column_header(const std::vector<std::string>& t);

// A rank line, in any of its forms; the tokens exclude the leading "#".
struct RankLine {
  std::vector<std::string> keys;  // one per rank it names
  std::vector<int> indices;       // the rank numbers it names
  std::string host, device;
  std::string gpu;  // "D [DOMAIN:BUS:DEV]": the long form's device and full bus id, or ""
};

// Whether `type` is a data type nccl-tests prints (int8 ... bfloat16, f8e4m3, f8e5m2).
bool is_nccl_type(const std::string& type);
// Bytes of one element of a type nccl-tests prints (is_nccl_type), 0 for any other.
double nccl_type_bytes(const std::string& type);

// `at` names the line in errors; nothing when the tokens are no rank line.
std::optional<RankLine> parse_rank_line(const std::vector<std::string>& t, const std::string& at);

// nccl-tests' check of the results ("Out of bounds values : 3 FAILED", the tokens after "#"):
// an InputError naming `at` when it found any, for a run whose results were wrong measured
// nothing to import. True for that line (the table ended there), false for any other.
bool check_results_line(const std::vector<std::string>& body, const std::string& at);

// A row's data type and reduction must be names nccl-tests prints (src/common.cu,
// test_typenames and test_opnames); else an InputError naming `at`.
void check_type_and_op(const std::string& type, const std::string& op, const std::string& at);

// The ranks a run's rank lines name, line by line. A line naming again a rank another host or
// process named is an InputError at that line (the same line repeated, as each MPI process of
// an old log prints it, counts once).
class RankLines {
 public:
  void add(const RankLine& line, const std::string& at);
  int count() const { return static_cast<int>(named_.size()); }
  int hosts() const { return static_cast<int>(per_host_.size()); }
  // Two ranks on one GPU of one host name: NCCL refuses a GPU twice in a communicator, so the
  // name stands for several hosts (containers' "localhost"), which only --nodes can count.
  // The first such pair, said ("ranks 0 and 8 both on device 0 [0x07] of localhost"); "" if
  // none.
  const std::string& shared_host_name() const { return shared_; }
  // Whether the names may stand for more hosts than they are, so that `nodes` (--nodes, 0 if
  // not given) may count more: a shared name seen, or a count above the names where some rank
  // line does not name its GPU's full bus id (compressed lines, old or bus-less ones).
  bool names_may_be_shared(int nodes) const {
    return !shared_.empty() || (nodes > hosts() && !identified_);
  }
  // The rank numbers are 0 to n - 1 (a gap: a device line lost, the count one short, which
  // busbw/algbw cannot tell from n at 16 ranks), and every host holds as many of them (a
  // measured collective is keyed by its ranks and nodes, the ranks split evenly): else an
  // InputError naming `at`. The even split is not checked where names_may_be_shared(nodes).
  void check(const std::string& at, int nodes) const;

 private:
  struct Named {
    std::string key, at;  // host/pid/rank and the line that named it
  };
  std::map<int, Named> named_;
  std::map<std::string, int> per_host_;
  std::map<std::pair<std::string, std::string>, int> on_gpu_;  // (host, gpu) → its first rank
  std::string shared_;
  bool identified_ = true;  // every rank line named its GPU's full bus id
};

// The busbw/algbw ratios a row's printed figures allow: nccl-tests computes busbw as algbw
// times the bus factor and prints each within half its last place, `half_gbps` (the larger of
// the two's).
struct RatioRange {
  double lo = 0.0, hi = 0.0;
  bool holds(double factor) const { return factor >= lo && factor <= hi; }
};
RatioRange ratio_range(const hw::CollectiveMeasurement& m, double half_gbps);

// nccl-tests' bus factor inverted: the rank counts first..last whose factor for `op` (all-reduce
// 2(n-1)/n, all-gather and friends (n-1)/n) a ratio range holds, up to kMaxRanks; none
// (first > last) where no count's does, or where the op's factor is 1 at every count.
struct RankRange {
  int first = 1, last = 0;
  bool empty() const { return first > last; }
};
RankRange ranks_from_ratio(hw::CollectiveOp op, const RatioRange& r);

// Every row's busbw is its algbw times the op's bus factor at `ranks` (nccl-tests prints it
// so), within the printed digits (`half_gbps`, one per row) of rows past kRatioCheckMinGbps; a
// row off it was edited or mis-pasted: an InputError naming the row.
void check_bus_factor(const std::vector<hw::CollectiveMeasurement>& rows,
                      const std::vector<double>& half_gbps, hw::CollectiveOp op, int ranks);

// The rank count the busbw/algbw of the run's fastest row says (its digits tell the most),
// checked against `claimed` (> 0: --ranks or the device lines, which `said` names); 0 where no
// row is fast enough or the op's factor is the same at every count. An InputError, at `at`,
// where the ratio contradicts the claim, fits no rank count, or fits several and nothing
// claims one (the digits of a 256-rank all-reduce fit 253 to 259 ranks: --ranks then).
int ranks_by_ratio(const std::vector<hw::CollectiveMeasurement>& rows,
                   const std::vector<double>& half_gbps, hw::CollectiveOp op, int claimed,
                   const std::string& said, const std::string& at);

// nccl-tests prints size = count × the type's bytes, count being the buffer's elements for the
// reductions and send/recv and a rank's share for all-gather, reduce-scatter and all-to-all. A
// row's check, kept until the run's op and ranks are known (count_check: none where the table
// has no count or type column, or the count is no integer).
struct CountCheck {
  double size, elements, type_bytes;
  int line;
};
std::optional<CountCheck> count_check(const std::vector<std::string>& t, const Columns& c,
                                      double size, int line);
// An InputError naming `origin`:line at the first row whose figures say otherwise (a count or
// a type edited by hand).
void check_counts(const std::vector<CountCheck>& checks, hw::CollectiveOp op, int ranks,
                  const std::string& origin);

// nccl-tests' line on an error that stopped the run ("Test NCCL failure common.cu:1005 '...'",
// CUDA's and the harness's alike), trimmed; nothing for any other line.
std::optional<std::string> failure_line(const std::string& line);

// The header's maxBytes ("# nThread 1 nGpus 8 minBytes 8 maxBytes 17179869184 step: ..."; `body`
// lacks the "#"), or nothing where the line does not give it as a number.
std::optional<double> header_max_bytes(const std::vector<std::string>& body);

// A run cut off: an InputError at `at` when it has no closing line (nccl-tests' results check or
// average, or a failure noted) and its largest row is under half the maxBytes its header asked for
// (the last size can fall a little short of maxBytes, rounded to whole elements of every rank).
void check_not_cut(const std::vector<hw::CollectiveMeasurement>& rows,
                   std::optional<double> max_bytes, bool closed, const std::string& at);

}  // namespace megasim::calibrate
