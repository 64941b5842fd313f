#include "io/json_reader.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "engine/error.h"

namespace megasim::io {
namespace {

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) {
    if (!out.empty()) out += ", ";
    out += "'" + s + "'";
  }
  return out;
}

// `v` to six significant digits, or to as many more as it takes for the printed number to
// keep what the message says of it (`keeps`: outside the range, not an integer): 3.0000001
// against [1, 3] printed as 3, and 6144.0001 as "expected an integer, found 6144".
template <typename Keeps>
std::string format_number(double v, Keeps keeps) {
  for (int digits = 6; digits <= 17; ++digits) {
    const std::string text = fmt::format("{:.{}g}", v, digits);
    const double back = std::strtod(text.c_str(), nullptr);
    if (back == v || keeps(back)) return text;
  }
  return fmt::format("{}", v);
}

std::string format_number(double v) { return fmt::format("{:g}", v); }

std::string format_outside(double v, double lo, double hi) {
  return format_number(v, [&](double b) { return !(b >= lo && b <= hi); });
}

std::string format_fraction(double v) {
  return format_number(v, [](double b) { return b != std::floor(b); });
}

// `word` is `key` with another case or a suffix ("TP", "tp_size", "tp-degree"): a guess safe
// enough to name a missing required key after, unlike an edit distance ("pp" is near "tp").
bool decorates(const std::string& word, const std::string& key) {
  if (word.size() < key.size()) return false;
  for (std::size_t i = 0; i < key.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(word[i])) !=
        std::tolower(static_cast<unsigned char>(key[i]))) {
      return false;
    }
  }
  return word.size() == key.size() || word[key.size()] == '_' || word[key.size()] == '-';
}

// `word` is `key` with one character put in ("tpp" or "ttp" for "tp"): a misspelling even of a
// short key, where a changed character may make another key ("pp" beside "tp").
bool one_inserted(const std::string& word, const std::string& key) {
  if (word.size() != key.size() + 1) return false;
  for (std::size_t i = 0; i < word.size(); ++i) {
    if (word.compare(0, i, key, 0, i) == 0 && word.compare(i + 1, std::string::npos, key, i) == 0)
      return true;
  }
  return false;
}

}  // namespace

std::string json_type_name(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::object: return "an object";
    case Json::value_t::array: return "an array";
    case Json::value_t::string: return "a string";
    case Json::value_t::boolean: return "a boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned: return "an integer";
    case Json::value_t::number_float: return "a number";
    default: return "an unsupported value";
  }
}

// What a key holds, for "expected X, found ...": its type and its text, or null alone (it
// read "found null (null)" until 2026-12-06).
std::string found_value(const Json& v) {
  if (v.is_null()) return "null";
  // A long value (an array of 500 numbers set whole) is cut, so the error stays readable.
  constexpr std::size_t kShown = 200;
  std::string text = v.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (text.size() > kShown) {
    std::size_t cut = kShown;  // not inside a UTF-8 character
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
    text = text.substr(0, cut) + "...";
  }
  return fmt::format("{} ({})", json_type_name(v), text);
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string closest_match(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_d = std::string::npos;
  for (const auto& c : candidates) {
    const std::size_t d = edit_distance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  const std::size_t tolerance = std::max<std::size_t>(2, word.size() / 3);
  if (best_d <= tolerance) return best;
  for (const auto& c : candidates) {
    if (decorates(word, c)) return c;
  }
  return std::string();
}

JsonReader::JsonReader(const Json& value, std::string path, std::string file, KeyLog* log)
    : value_(value), path_(std::move(path)), file_(std::move(file)), log_(log), log_path_(path_) {
  if (!value_.is_object()) {
    const std::string where = path_.empty() ? "document" : path_;
    const std::string detail =
        fmt::format("{}: expected an object, found {}", where, json_type_name(value_));
    throw ValueError(fmt::format("{}: {}", file_, detail), detail);
  }
}

std::string JsonReader::path_of(const std::string& key) const {
  // A key's control characters as JSON escapes: a NUL ended the message there, and an ESC
  // reached the terminal raw, until 2026-12-05.
  std::string shown;
  for (const char c : key) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      shown += fmt::format("\\u{:04x}", u);
    } else {
      shown += c;
    }
  }
  return path_.empty() ? shown : path_ + "." + shown;
}

void JsonReader::fail(const std::string& key, const std::string& message) const {
  throw InputError(fmt::format("{}: {}: {}", file_, path_of(key), message));
}

void JsonReader::fail_value(const std::string& key, const std::string& message) const {
  const std::string detail = fmt::format("{}: {}", path_of(key), message);
  throw ValueError(fmt::format("{}: {}", file_, detail), detail);
}

const Json* JsonReader::find(const std::string& key) {
  if (std::find(known_.begin(), known_.end(), key) == known_.end()) known_.push_back(key);
  if (log_) log_->insert(log_path_.empty() ? key : log_path_ + "." + key);
  const auto it = value_.find(key);
  return it == value_.end() ? nullptr : &*it;
}

const Json& JsonReader::at(const std::string& key) {
  const Json* v = find(key);
  if (!v) {
    // "tp_size" given for "tp" is a misspelling: say so, not only that "tp" is missing.
    for (const auto& [given, unused] : value_.items()) {
      if (std::find(known_.begin(), known_.end(), given) == known_.end() && decorates(given, key)) {
        throw UnknownKeyError(
            fmt::format("{}: {}: unknown key; did you mean '{}'?", file_, path_of(given), key));
      }
    }
    // A given key near it ("global_bacth") is named as a likely misspelling: only named, as a
    // short key's neighbour may be another key read later ("pp" beside a missing "tp").
    std::vector<std::string> unread;
    for (const auto& [given, unused] : value_.items()) {
      if (std::find(known_.begin(), known_.end(), given) == known_.end()) unread.push_back(given);
    }
    // A short key's is named only where it is the key with a character put in ("tpp" in a file
    // read "plan.tp: missing required key" alone until 2026-12-06, where `--set` named it).
    std::string near = key.size() >= 4 ? closest_match(key, unread) : std::string();
    for (const std::string& given : unread) {
      if (near.empty() && one_inserted(given, key)) near = given;
    }
    fail(key, near.empty() ? "missing required key"
                           : fmt::format("missing required key (is '{}' it, misspelt?)", near));
  }
  return *v;
}

bool JsonReader::has(const std::string& key) const { return value_.contains(key); }

void JsonReader::ignore(const std::string& key) { find(key); }

std::optional<std::int64_t> JsonReader::optional_integer(const std::string& key, std::int64_t lo,
                                                         std::int64_t hi) {
  const Json* v = find(key);
  if (!v) return std::nullopt;
  double d;
  if (v->is_number_integer() || v->is_number_unsigned()) {
    if (v->is_number_unsigned() && v->get<std::uint64_t>() > static_cast<std::uint64_t>(hi)) {
      fail_value(key, fmt::format("{} is out of range; expected an integer in [{}, {}]",
                                  v->get<std::uint64_t>(), lo, hi));
    }
    const auto i = v->get<std::int64_t>();
    if (i < lo || i > hi) {
      fail_value(key,
                 fmt::format("{} is out of range; expected an integer in [{}, {}]", i, lo, hi));
    }
    return i;
  }
  if (!v->is_number_float()) {
    fail_value(key, "expected an integer, found " + found_value(*v));
  }
  d = v->get<double>();
  if (d != std::floor(d))
    fail_value(key, fmt::format("expected an integer, found {}", format_fraction(d)));
  // 2^63 is past every int64 though not past INT64_MAX as a double (the cast would be
  // undefined).
  if (d < static_cast<double>(lo) || d > static_cast<double>(hi) || d >= 0x1p63) {
    fail_value(key, fmt::format("{} is out of range; expected an integer in [{}, {}]",
                                format_outside(d, static_cast<double>(lo), static_cast<double>(hi)),
                                lo, hi));
  }
  return static_cast<std::int64_t>(d);
}

std::int64_t JsonReader::integer(const std::string& key, std::int64_t lo, std::int64_t hi) {
  at(key);
  return *optional_integer(key, lo, hi);
}

std::int64_t JsonReader::integer_or(const std::string& key, std::int64_t fallback,
                                    std::int64_t lo, std::int64_t hi) {
  return optional_integer(key, lo, hi).value_or(fallback);
}

std::optional<double> JsonReader::optional_number(const std::string& key, double lo, double hi) {
  const Json* v = find(key);
  if (!v) return std::nullopt;
  if (!v->is_number()) {
    fail_value(key, "expected a number, found " + found_value(*v));
  }
  const double d = v->get<double>();
  if (!std::isfinite(d) || d < lo || d > hi) {
    fail_value(key, fmt::format("{} is out of range; expected a number in [{}, {}]",
                                format_outside(d, lo, hi), format_number(lo), format_number(hi)));
  }
  // -0 reads as 0, as --set's route gives it ("-0 t CO2" and "$-0" printed, until 2026-12-06).
  return d == 0.0 ? 0.0 : d;
}

double JsonReader::number(const std::string& key, double lo, double hi) {
  at(key);
  return *optional_number(key, lo, hi);
}

double JsonReader::number_or(const std::string& key, double fallback, double lo, double hi) {
  return optional_number(key, lo, hi).value_or(fallback);
}

std::optional<bool> JsonReader::optional_boolean(const std::string& key) {
  const Json* v = find(key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) {
    fail_value(key, "expected true or false, found " + found_value(*v));
  }
  return v->get<bool>();
}

bool JsonReader::boolean_or(const std::string& key, bool fallback) {
  return optional_boolean(key).value_or(fallback);
}

std::string JsonReader::string(const std::string& key) {
  const Json& v = at(key);
  if (!v.is_string()) {
    fail_value(key, "expected a string, found " + found_value(v));
  }
  auto s = v.get<std::string>();
  if (s.empty()) fail_value(key, "expected a non-empty string");
  return s;
}

std::string JsonReader::string_or(const std::string& key, const std::string& fallback) {
  const Json* v = find(key);
  return v ? string(key) : fallback;
}

std::string JsonReader::choice(const std::string& key, const std::vector<std::string>& allowed) {
  const std::string s = string(key);
  if (std::find(allowed.begin(), allowed.end(), s) == allowed.end()) {
    const std::string near = closest_match(s, allowed);
    fail_value(key, fmt::format("'{}' is not one of {}{}", s, join(allowed),
                                near.empty() ? "" : "; did you mean '" + near + "'?"));
  }
  return s;
}

std::string JsonReader::choice_or(const std::string& key, const std::string& fallback,
                                  const std::vector<std::string>& allowed) {
  return find(key) ? choice(key, allowed) : fallback;
}

std::string JsonReader::text_or(const std::string& key, const std::string& fallback) {
  const Json* v = find(key);
  if (!v) return fallback;
  if (v->is_string()) return v->get<std::string>();
  if (v->is_array()) {
    std::string out;
    for (const auto& line : *v) {
      if (!line.is_string()) fail_value(key, "expected a string or an array of strings");
      if (!out.empty()) out += "\n";
      out += line.get<std::string>();
    }
    return out;
  }
  fail_value(key, "expected a string or an array of strings, found " + found_value(*v));
}

std::vector<std::int64_t> JsonReader::integer_array(const std::string& key, std::int64_t lo,
                                                    std::int64_t hi) {
  const Json& v = at(key);
  if (!v.is_array()) fail_value(key, "expected an array, found " + found_value(v));
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const Json& e = v[i];
    const bool integral = e.is_number_integer() || e.is_number_unsigned() ||
                          (e.is_number_float() && e.get<double>() == std::floor(e.get<double>()));
    if (!integral) {
      fail_value(key,
                 fmt::format("element {}: expected an integer, found {}", i, json_type_name(e)));
    }
    const double d = e.get<double>();
    if (d < static_cast<double>(lo) || d > static_cast<double>(hi)) {
      fail_value(
          key,
          fmt::format("element {}: {} is out of range [{}, {}]", i,
                      format_outside(d, static_cast<double>(lo), static_cast<double>(hi)), lo, hi));
    }
    out.push_back(static_cast<std::int64_t>(d));
  }
  return out;
}

JsonReader JsonReader::object(const std::string& key) {
  JsonReader r(at(key), path_of(key), file_, log_);
  r.log_path_ = log_path_.empty() ? key : log_path_ + "." + key;
  return r;
}

std::optional<JsonReader> JsonReader::optional_object(const std::string& key) {
  const Json* v = find(key);
  if (!v) return std::nullopt;
  return object(key);
}

std::vector<JsonReader> JsonReader::object_array(const std::string& key,
                                                 std::size_t max_elements) {
  const Json& v = at(key);
  if (!v.is_array()) fail_value(key, "expected an array, found " + found_value(v));
  if (v.size() > max_elements) {
    fail_value(key,
               fmt::format("{} elements; at most {} are accepted here", v.size(), max_elements));
  }
  std::vector<JsonReader> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    JsonReader& r = out.emplace_back(v[i], fmt::format("{}[{}]", path_of(key), i), file_, log_);
    r.log_path_ = (log_path_.empty() ? key : log_path_ + "." + key) + "[]";
  }
  return out;
}

void JsonReader::finish() const {
  for (const auto& [key, unused] : value_.items()) {
    if (std::find(known_.begin(), known_.end(), key) != known_.end()) continue;
    const std::string near = closest_match(key, known_);
    std::string msg = near.empty() ? fmt::format("unknown key; valid keys here are {}", join(known_))
                                   : fmt::format("unknown key; did you mean '{}'?", near);
    throw UnknownKeyError(fmt::format("{}: {}: {}", file_, path_of(key), msg));
  }
}

}  // namespace megasim::io
