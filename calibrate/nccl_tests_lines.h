// The lines of an nccl-tests log, one at a time: the column header (where each figure sits in a
// row) and the rank lines in their long, old and compressed forms. Counts past kMaxRanks are an
// InputError naming the line.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace megasim::calibrate {

// Ranks one log may list: far beyond any published nccl-tests run (tens of thousands of GPUs),
// and small enough that the set of rank keys a range expands to stays a few MiB.
constexpr std::int64_t kMaxRanks = std::int64_t{1} << 17;

// A count the log states (ranks, threads, GPUs): digits within [0, kMaxRanks], else an error
// naming `at`.
int count_in_log(const std::string& s, const std::string& what, const std::string& at);

// Where each value sits in a data row, from the column header line.
struct Columns {
  std::size_t count = 0;  // tokens per data row
  std::size_t size = 0;
  std::vector<std::size_t> time, algbw, busbw, wrong;  // [0] out-of-place, [1] in-place
  std::optional<std::size_t> type, redop;  // one table holds every type and op of -d/-o all
};

// The header's tokens, "#" first; nothing when they name no size, time and bandwidths.
std::optional<Columns> parse_column_header(const std::vector<std::string>& t);

// A rank line, in any of its forms; the tokens exclude the leading "#".
struct RankLine {
  std::vector<std::string> keys;  // one per rank it names
  std::string host, device;
};

// `at` names the line in errors; nothing when the tokens are no rank line.
std::optional<RankLine> parse_rank_line(const std::vector<std::string>& t, const std::string& at);

// nccl-tests' check of the results ("Out of bounds values : 3 FAILED", the tokens after "#"):
// an InputError naming `at` when it found any, for a run whose results were wrong measured
// nothing to import.
void check_results_line(const std::vector<std::string>& body, const std::string& at);

// A row's data type and reduction must be names nccl-tests prints (src/common.cu,
// test_typenames and test_opnames); else an InputError naming `at`.
void check_type_and_op(const std::string& type, const std::string& op, const std::string& at);

}  // namespace megasim::calibrate
