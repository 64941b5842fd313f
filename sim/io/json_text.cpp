// Reading a JSON input: the file within bounds, the text's shape checked before parsing, the
// parse with duplicate keys found, and the kind of input a document is.
#include "io/json_reader.h"

#include <algorithm>
#include <fstream>
#include <system_error>

#include <fmt/format.h>

#include "engine/error.h"
#include "io/json_duplicates.h"

namespace megasim::io {
namespace {

// What a text would cost once parsed, counted outside and inside strings without parsing it.
// Values are counted as separators and openers (a comma or a colon ends one, a bracket opens
// one): an upper bound near the true count, found in one pass with no allocation.
struct TextShape {
  int depth = 0;
  std::size_t values = 0;
  std::size_t longest_string = 0;
};

TextShape text_shape(const std::string& text) {
  TextShape shape;
  int depth = 0;
  bool in_string = false, escaped = false;
  std::size_t string_start = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"') {
        in_string = false;
        shape.longest_string = std::max(shape.longest_string, i - string_start);
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
      string_start = i + 1;
    } else if (c == '[' || c == '{') {
      shape.depth = std::max(shape.depth, ++depth);
      ++shape.values;
    } else if (c == ']' || c == '}') {
      --depth;
    } else if (c == ',' || c == ':') {
      ++shape.values;
    }
  }
  if (in_string) shape.longest_string = std::max(shape.longest_string, text.size() - string_start);
  return shape;
}

// Byte offset of the first NUL or other control byte a JSON text cannot hold, or npos.
std::size_t first_binary_byte(const std::string& text) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 && c != '\n' && c != '\r' && c != '\t') return i;
  }
  return std::string::npos;
}

std::string strip_nlohmann_prefix(const std::string& what) {
  // "[json.exception.parse_error.101] parse error at line 1, column 2: ..." -> "line 1, ..."
  std::string msg = what;
  if (auto p = msg.find("] "); p != std::string::npos && msg.rfind("[json.exception", 0) == 0) {
    msg = msg.substr(p + 2);
  }
  if (msg.rfind("parse error at ", 0) == 0) msg = msg.substr(15);
  // The parser quotes the bytes it last read, which may be invalid UTF-8 or control bytes.
  std::string printable;
  for (const char c : msg) {
    const auto u = static_cast<unsigned char>(c);
    printable += u < 0x20 || u >= 0x80 ? fmt::format("\\x{:02x}", u) : std::string(1, c);
  }
  return printable;
}

}  // namespace

namespace {

// nlohmann names a number too large for a double without its place: " at line L, column C"
// of its first appearance, or "" for any other error.
std::string overflow_location(const std::string& text, const std::string& what) {
  const std::string marker = "number overflow parsing '";
  const auto at = what.find(marker);
  if (at == std::string::npos) return "";
  const auto start = at + marker.size();
  const auto end = what.find('\'', start);
  if (end == std::string::npos) return "";
  // Its first appearance as a value: after ':', '[' or ',' (spaces aside), not inside a string.
  const std::string literal = what.substr(start, end - start);
  std::size_t pos = text.find(literal);
  while (pos != std::string::npos) {
    const auto before = pos == 0 ? std::string::npos : text.find_last_not_of(" \t\r\n", pos - 1);
    if (before != std::string::npos && std::string(":[,").find(text[before]) != std::string::npos)
      break;
    pos = text.find(literal, pos + 1);
  }
  if (pos == std::string::npos) return "";
  const auto line_start = text.rfind('\n', pos);
  const auto line =
      1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(pos), '\n');
  const auto column = pos - (line_start == std::string::npos ? 0 : line_start + 1) + 1;
  return fmt::format(" at line {}, column {} (a number past a double's range)", line, column);
}

}  // namespace

void check_input_kind(const Json& doc, InputKind expected, const std::string& origin) {
  if (!doc.is_object()) return;
  struct Kind {
    InputKind kind;
    const char* name;
    const char* only_key;  // a key no other kind has
  };
  // The presets and the runs file since 2026-12-05 (a device profile given as a power preset
  // was said to lack node_overhead).
  constexpr Kind kKinds[] = {
      {InputKind::kScenario, "a scenario", "plan"},
      {InputKind::kModel, "a model", "layers"},
      {InputKind::kCluster, "a cluster topology", "node"},
      {InputKind::kDeviceProfile, "a device profile", "peak_tflops"},
      {InputKind::kSystem, "a system preset", "switches"},
      {InputKind::kPowerPreset, "a power preset", "node_overhead"},
      {InputKind::kReliabilityPreset, "a reliability preset", "failure_rates"},
      {InputKind::kFailureRates, "a failure-rate table", "components"},
      {InputKind::kPublishedRuns, "a published-runs file", "runs"}};
  const char* wanted = "";
  for (const auto& k : kKinds) {
    if (k.kind == expected) wanted = k.name;
  }
  for (const auto& k : kKinds) {
    if (k.kind == expected || !doc.contains(k.only_key)) continue;
    const auto self = std::find_if(std::begin(kKinds), std::end(kKinds),
                                   [&](const Kind& e) { return e.kind == expected; });
    if (doc.contains(self->only_key)) return;  // has both: let the reader name what is wrong
    throw InputError(
        fmt::format("{}: is {} (it has '{}'), not {}", origin, k.name, k.only_key, wanted));
  }
}

void check_json_text_shape(const std::string& text, const std::string& origin) {
  const TextShape shape = text_shape(text);
  if (shape.depth > kMaxJsonDepth) {
    throw InputError(fmt::format("{}: JSON nested deeper than {} levels", origin, kMaxJsonDepth));
  }
  if (shape.values > kMaxJsonValues) {
    throw InputError(
        fmt::format("{}: about {} JSON values, more than the {} an input file may "
                    "hold",
                    origin, shape.values, kMaxJsonValues));
  }
  if (shape.longest_string > kMaxJsonStringBytes) {
    throw InputError(
        fmt::format("{}: a JSON string of {} bytes, longer than the {} an input "
                    "file may hold",
                    origin, shape.longest_string, kMaxJsonStringBytes));
  }
}

Json parse_json_text(const std::string& text, const std::string& origin) {
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
    throw InputError(origin + ": empty input; expected a JSON document");
  }
  if (const auto at = first_binary_byte(text); at != std::string::npos) {
    throw InputError(fmt::format("{}: not a JSON text file (binary byte 0x{:02x} at offset {})",
                                 origin, static_cast<unsigned char>(text[at]), at));
  }
  check_json_text_shape(text, origin);
  std::optional<std::string> duplicate;  // json_duplicates.h
  Json doc;
  try {
    doc = Json::parse(text, duplicate_key_finder(duplicate));
  } catch (const Json::exception& e) {
    throw InputError(origin + ": invalid JSON: " + strip_nlohmann_prefix(e.what()) +
                     overflow_location(text, e.what()));
  }
  if (duplicate) throw InputError(origin + ": '" + *duplicate + "': appears twice");
  return doc;
}

Json parse_json_file(const std::filesystem::path& file, FilesRead* read) {
  return parse_json_text(read_input_file(file, kMaxJsonFileBytes, "JSON", read), file.string());
}

std::string read_input_file(const std::filesystem::path& file, std::uintmax_t max_bytes,
                            const std::string& kind, FilesRead* read) {
  std::error_code ec;
  const std::string name = file.string();
  const auto status = std::filesystem::status(file, ec);
  // A folder of the path the process may not search, a loop of links: said, not "no such
  // file" (a trial, 2026-12-07).
  if (status.type() == std::filesystem::file_type::not_found)
    throw InputError(name + ": no such file");
  if (ec) throw InputError(name + ": cannot be read (" + ec.message() + ")");
  if (std::filesystem::is_directory(status)) {
    throw InputError(name + ": is a directory, not a " + kind + " file");
  }
  // A device, FIFO or socket has no size to check and may never end (/dev/zero).
  if (!std::filesystem::is_regular_file(status)) {
    throw InputError(name +
                     ": is not a regular file (a device, FIFO or socket); megasim reads "
                     "input only from regular files");
  }
  const auto size = std::filesystem::file_size(file, ec);
  if (ec) throw InputError(name + ": cannot read its size (" + ec.message() + ")");
  const std::string too_large = fmt::format("exceeds the {} byte limit for input files", max_bytes);
  if (size > max_bytes)
    throw InputError(fmt::format("{}: file of {} bytes {}", name, size, too_large));
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError(name + ": cannot be opened for reading");
  // Recorded once open, before its content is judged: a file that fails to parse is still
  // one no output may replace.
  if (read != nullptr) read->record(file);
  // Only the size seen above is read: a file that grows meanwhile is refused, not followed.
  std::string text(static_cast<std::size_t>(size), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  // A file still being written (or one of /proc's, whose size reads 0): refused, and said
  // so; until 2026-12-07 it was said to exceed the size limit, whatever its size.
  if (in && in.peek() != std::char_traits<char>::eof()) {
    throw InputError(fmt::format(
        "{}: file grew past the {} bytes its size gave while being read; megasim reads a file "
        "no one is writing",
        name, size));
  }
  return text;
}

}  // namespace megasim::io
