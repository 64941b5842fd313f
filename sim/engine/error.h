// The one typed error for bad user input (scenario, model, cluster or calibration files,
// command-line values). Every module below the CLI reports a problem with what the user gave
// by throwing InputError with a message that names the JSON path or option and the numbers
// that clash; `megasim` catches it in main and exits with status 2. Internal invariants use
// assert, never this type.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

namespace megasim {

// `text` with its control bytes (NUL, ESC and the rest below 0x20 but newline and tab, and
// DEL) written as \xNN: a message quotes what the user gave, which may hold them (a NUL cut a
// nccl-tests log's message short, an ESC reached the terminal raw, until 2026-12-05).
inline std::string printable(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto b = static_cast<unsigned char>(c);
    if ((b < 0x20 && c != '\n' && c != '\t') || b == 0x7f) {
      constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[b >> 4];
      out += kHex[b & 0xf];
    } else {
      out += c;
    }
  }
  return out;
}

class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& message) : std::runtime_error(printable(message)) {}
};

// A plan whose memory does not fit the device (workload::check_fits). Bad input like any other,
// and typed apart so that `validate` can report a published plan megasim refuses as such.
class OutOfMemoryError : public InputError {
 public:
  using InputError::InputError;
};

// A key the schema does not have. Typed apart so that `compare` refuses a misspelt --vary
// path (the same in every variant) instead of listing each variant as infeasible.
class UnknownKeyError : public InputError {
 public:
  using InputError::InputError;
};

// A value a key does not take (a string for an integer, out of its range, not one of its
// choices), whatever the other keys say. Typed apart so that `compare` refuses such a --vary
// value as bad input instead of listing its variants as infeasible; `detail` is the message
// without the file's name ("plan.tp: expected an integer, found ...").
class ValueError : public InputError {
 public:
  ValueError(const std::string& message, std::string detail)
      : InputError(message), detail_(std::move(detail)) {}
  const std::string& detail() const { return detail_; }

 private:
  std::string detail_;
};

}  // namespace megasim
