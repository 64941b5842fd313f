// Strong types for sizes, rates and work, so that no bare double carries its unit in a
// comment. All are thin wrappers over double (sizes of collectives such as 2(n-1)/n * S are
// fractional); conversions to Time go through transfer_time(), which rounds once.
#pragma once

#include <compare>

#include "engine/time.h"

namespace megasim {

template <typename Tag>
class Quantity {
 public:
  constexpr Quantity() = default;
  constexpr explicit Quantity(double v) : v_(v) {}
  constexpr double value() const { return v_; }
  constexpr Quantity operator+(Quantity o) const { return Quantity(v_ + o.v_); }
  constexpr Quantity operator-(Quantity o) const { return Quantity(v_ - o.v_); }
  constexpr Quantity operator*(double k) const { return Quantity(v_ * k); }
  constexpr Quantity operator/(double k) const { return Quantity(v_ / k); }
  constexpr double operator/(Quantity o) const { return v_ / o.v_; }
  constexpr Quantity& operator+=(Quantity o) { v_ += o.v_; return *this; }
  constexpr Quantity& operator-=(Quantity o) { v_ -= o.v_; return *this; }
  constexpr auto operator<=>(const Quantity&) const = default;

 private:
  double v_ = 0.0;
};

using Bytes = Quantity<struct BytesTag>;
using BytesPerSec = Quantity<struct BytesPerSecTag>;
using Flops = Quantity<struct FlopsTag>;
using FlopsPerSec = Quantity<struct FlopsPerSecTag>;
using Watts = Quantity<struct WattsTag>;

constexpr Bytes kKiB{1024.0};
constexpr Bytes kMiB{1024.0 * 1024.0};
constexpr Bytes kGiB{1024.0 * 1024.0 * 1024.0};

// Gigabits per second as network vendors quote them (10^9 bit/s) to bytes per second.
constexpr BytesPerSec gbit_per_s(double gbps) { return BytesPerSec(gbps * 1e9 / 8.0); }
// Gigabytes per second (10^9 B/s), as NVLink and HBM figures are quoted.
constexpr BytesPerSec gbyte_per_s(double gBps) { return BytesPerSec(gBps * 1e9); }
constexpr FlopsPerSec tflop_per_s(double t) { return FlopsPerSec(t * 1e12); }

inline Time transfer_time(Bytes b, BytesPerSec r) { return Time::from_seconds(b.value() / r.value()); }
inline Time compute_time(Flops f, FlopsPerSec r) { return Time::from_seconds(f.value() / r.value()); }

}  // namespace megasim
