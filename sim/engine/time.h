// Simulated time: a signed 64-bit count of nanoseconds (292 years of range, enough for a
// run-level simulation of months). Every conversion from floating point (from_seconds and
// friends, from_ns_rounded, scaling by a double) rounds to the nearest nanosecond in one place
// (Time::rounded), and from_ns_up, a finish that must not come before its work is done, rounds
// up; both refuse values outside the range, so a double is never truncated into the clock
// silently (a flow's finish and five other conversions cast it unchecked until 2026-12-05).
// Value type; thread-compatible.
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
  // A real count of nanoseconds, to the nearest (half away from zero, as std::llround) or up
  // to the next whole one; both throw std::range_error as from_seconds does.
  static Time from_ns_rounded(double ns) { return rounded(ns, ns, " ns"); }
  static Time from_ns_up(double ns);

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
