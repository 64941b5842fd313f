// Strict reading of JSON input files.
//
// parse_json_file() turns a path into a document or an InputError that says what is wrong
// with the file (missing, a directory, not a regular file, too large, empty, binary, nested too
// deeply, too many values or too long a string, or the parser's line and column). The limits
// bound the time and memory any input can cost before the parser allocates anything: a
// device or a FIFO could stream forever, and a document under the size cap could still hold
// a hundred million values (gigabytes once parsed). JsonReader then reads one JSON object the strict way: every accessor names the
// key's full JSON path in its error, states what was expected and what was found, checks
// ranges, and records the key as known; finish() rejects any key that no accessor asked for,
// suggesting the closest known key ("plan.tpp: unknown key; did you mean 'tp'?").
//
// A KeyLog, when given, receives the path of every key the loader asks about (array elements
// as "[]"), so a test can hold the loader's key set against scenarios/schema.json.
#pragma once

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/files_read.h"
#include "io/key_log.h"

namespace megasim::io {

using Json = nlohmann::json;

// `j` as the text of a file megasim writes, newline-ended: a string that is not UTF-8 (a device
// name or path read from elsewhere) has its bad bytes replaced by U+FFFD, never a throw.
inline std::string json_file_text(const Json& j, int indent) {
  return j.dump(indent, ' ', false, Json::error_handler_t::replace) + "\n";
}

// Deepest nesting of arrays/objects accepted in an input file.
constexpr int kMaxJsonDepth = 64;
// Largest input file accepted (a scenario is a few KiB; a calibration a few MiB).
constexpr std::uintmax_t kMaxJsonFileBytes = 256ull << 20;
// Most values (objects, arrays, keys' values, array elements) in one document: a measured
// calibration holds some 10^5, and 2^21 parsed values stay in the low hundreds of MiB.
constexpr std::size_t kMaxJsonValues = std::size_t{1} << 21;
// Longest string: the longest text in a shipped file (a source note) is a few KiB.
constexpr std::size_t kMaxJsonStringBytes = std::size_t{1} << 20;

// `read`, when given, records the file (io/files_read.h).
Json parse_json_file(const std::filesystem::path& file, FilesRead* read = nullptr);
// The whole of a regular file of at most `max_bytes`, else an InputError naming it; `kind`
// names what was expected in the message for a directory ("JSON", "nccl-tests log").
std::string read_input_file(const std::filesystem::path& file, std::uintmax_t max_bytes,
                            const std::string& kind, FilesRead* read = nullptr);
// InputError, naming `origin`, when a JSON text is nested deeper, holds more values or a
// longer string than an input may (checked without parsing it; parse_json_text does it first).
void check_json_text_shape(const std::string& text, const std::string& origin);
// `origin` names the text in errors (a file name, or "--set plan.tp").
Json parse_json_text(const std::string& text, const std::string& origin);

// Levenshtein distance, for "did you mean" suggestions.
std::size_t edit_distance(const std::string& a, const std::string& b);
// The closest candidate if it is close enough to be a plausible typo, else "".
std::string closest_match(const std::string& word, const std::vector<std::string>& candidates);

class JsonReader {
 public:
  // `path` is the JSON path of `value` ("" for the document root); `file` prefixes errors.
  JsonReader(const Json& value, std::string path, std::string file, KeyLog* log = nullptr);

  bool has(const std::string& key) const;
  std::string path_of(const std::string& key) const;

  std::int64_t integer(const std::string& key, std::int64_t lo, std::int64_t hi);
  std::int64_t integer_or(const std::string& key, std::int64_t fallback, std::int64_t lo,
                          std::int64_t hi);
  std::optional<std::int64_t> optional_integer(const std::string& key, std::int64_t lo,
                                               std::int64_t hi);
  double number(const std::string& key, double lo, double hi);
  double number_or(const std::string& key, double fallback, double lo, double hi);
  std::optional<double> optional_number(const std::string& key, double lo, double hi);
  bool boolean_or(const std::string& key, bool fallback);
  std::optional<bool> optional_boolean(const std::string& key);
  std::string string(const std::string& key);
  std::string string_or(const std::string& key, const std::string& fallback);
  std::string choice(const std::string& key, const std::vector<std::string>& allowed);
  std::string choice_or(const std::string& key, const std::string& fallback,
                        const std::vector<std::string>& allowed);
  // A string, or an array of strings joined by newlines (free-text notes).
  std::string text_or(const std::string& key, const std::string& fallback);
  std::vector<std::int64_t> integer_array(const std::string& key, std::int64_t lo,
                                          std::int64_t hi);
  // An array of min_size to max_size numbers, each in [lo, hi] (json_reader_arrays.cpp).
  std::vector<double> number_array(const std::string& key, double lo, double hi,
                                   std::size_t min_size, std::size_t max_size);
  JsonReader object(const std::string& key);
  std::optional<JsonReader> optional_object(const std::string& key);
  // Each element of an array of objects; more than `max_elements` is an error.
  std::vector<JsonReader> object_array(const std::string& key,
                                       std::size_t max_elements = kMaxJsonValues);
  // Marks a key as known without reading it (e.g. "$schema").
  void ignore(const std::string& key);

  // Throws InputError for the first key no accessor asked about.
  void finish() const;

  // An InputError for `key` of this object: "<file>: <path>: <message>".
  [[noreturn]] void fail(const std::string& key, const std::string& message) const;
  // A value the key does not take, whatever the other keys say (ValueError).
  [[noreturn]] void fail_value(const std::string& key, const std::string& message) const;

 private:
  const Json& at(const std::string& key);
  const Json* find(const std::string& key);

  const Json& value_;
  std::string path_;
  std::string file_;
  KeyLog* log_;
  std::string log_path_;  // path_ with array indices written as []
  std::vector<std::string> known_;
};

// Human name of a JSON value's type, for "expected X, found Y" messages.
std::string json_type_name(const Json& v);

// The kinds of input file megasim reads, told apart by a key only that kind has.
enum class InputKind {
  kScenario,
  kModel,
  kCluster,
  kDeviceProfile,
  kSystem,
  kPowerPreset,
  kReliabilityPreset,
  kFailureRates,
  kPublishedRuns
};
// InputError when `doc` is an object of another kind than `expected` ("…: is a scenario, not
// a cluster topology"): a file given in the wrong place, said so instead of a missing key.
void check_input_kind(const Json& doc, InputKind expected, const std::string& origin);

}  // namespace megasim::io
