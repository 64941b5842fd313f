// Simulated time: a signed 64-bit count of nanoseconds (292 years of range, enough for a
// run-level simulation of months). Every conversion from floating point (from_seconds and
// friends, scaling by a double) rounds to the nearest nanosecond in exactly one place
// (Time::rounded) and refuses values outside the range, so a double is never truncated into
// the clock silently. Value type; thread-compatible.
#pragma once

#include <concepts>
#include <cstdint>
#include <limits>
#include <string>

namespace megasim {

class Time {
 public:
  constexpr Time() = default;

  static constexpr Time from_ns(std::int64_t ns) { return Time(ns); }
  static constexpr Time zero() { return Time(0); }
  static constexpr Time max() { return Time(std::numeric_limits<std::int64_t>::max()); }

  // Rounds to the nearest nanosecond (half away from zero). Throws std::range_error for NaN
  // or a value that does not fit the clock.
  static Time from_seconds(double seconds);
  static Time from_ms(double ms) { return from_seconds(ms * 1e-3); }
  static Time from_us(double us) { return from_seconds(us * 1e-6); }
  static Time from_minutes(double minutes) { return from_seconds(minutes * 60.0); }
  static Time from_hours(double hours) { return from_seconds(hours * 3600.0); }

  constexpr std::int64_t ns() const { return ns_; }
  constexpr double to_seconds() const { return static_cast<double>(ns_) * 1e-9; }
  constexpr double to_ms() const { return static_cast<double>(ns_) * 1e-6; }
  constexpr double to_us() const { return static_cast<double>(ns_) * 1e-3; }
  constexpr double to_hours() const { return to_seconds() / 3600.0; }
  constexpr double to_days() const { return to_seconds() / 86400.0; }

  constexpr Time operator+(Time o) const { return Time(ns_ + o.ns_); }
  constexpr Time operator-(Time o) const { return Time(ns_ - o.ns_); }
  constexpr Time& operator+=(Time o) { ns_ += o.ns_; return *this; }
  constexpr Time& operator-=(Time o) { ns_ -= o.ns_; return *this; }
  // Exact for an integer count; a real factor (a slowdown, a share) rounds like from_seconds.
  template <std::integral I>
  constexpr Time operator*(I k) const { return Time(ns_ * static_cast<std::int64_t>(k)); }
  Time operator*(double k) const;
  Time operator/(double k) const;
  constexpr auto operator<=>(const Time&) const = default;

  // "1.234 s", "56.7 us": for logs and tables, never for parsing.
  std::string to_string() const;

 private:
  constexpr explicit Time(std::int64_t ns) : ns_(ns) {}
  // The one rounding of a double count of nanoseconds into the clock: to the nearest, half
  // away from zero; `what` and `unit` name the value in the range error.
  static Time rounded(double ns, double what, const char* unit);
  std::int64_t ns_ = 0;
};

}  // namespace megasim
