// Seeded pseudo-random numbers whose every distribution is our own code (not <random>'s,
// whose algorithms differ between standard libraries), so a scenario and a seed give the same
// integers and uniforms everywhere; the exponential, normal and Poisson draws go through the C
// library's log1p, log and exp, which are not correctly rounded, so across C libraries their
// last bits (and a figure printed from them) may differ. Generator: xoshiro256** (Blackman and
// Vigna, 2018), seeded through splitmix64. Value type: copy it to fork a stream, or use
// split() to derive an independent one (the run level's trials are seeded apart instead, by
// run::trial_seed). Not thread-safe.
#pragma once

#include <cstdint>

namespace megasim {

class Rng {
 public:
  explicit Rng(std::uint64_t seed);

  std::uint64_t next_u64();
  // Uniform in [0, 1) with 53 random bits.
  double uniform();
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  // Uniform integer in [0, n); n > 0. Lemire's multiply-shift with rejection (unbiased).
  std::uint64_t below(std::uint64_t n);
  // Exponential with the given mean (inverse transform).
  double exponential(double mean);
  // Standard normal (Marsaglia polar method; the spare value is kept).
  double normal();
  double normal(double mean, double stddev) { return mean + stddev * normal(); }
  // Poisson count with the given mean (Knuth's product method below 30, else a normal
  // approximation with continuity correction, rounded and clamped at zero).
  std::uint64_t poisson(double mean);
  bool bernoulli(double p) { return uniform() < p; }

  // A new generator whose stream is independent of this one for practical purposes.
  Rng split();

 private:
  std::uint64_t s_[4];
  double spare_normal_ = 0.0;
  bool has_spare_ = false;
};

}  // namespace megasim
