#include "run/reliability.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "engine/error.h"
#include "engine/rng.h"

namespace megasim::run {

const char* to_string(FailureScope s) {
  return s == FailureScope::kGpu ? "gpu" : "node";
}

Time CommInitModel::at(std::int64_t ranks) const {
  const double scale = std::pow(static_cast<double>(ranks) / reference_ranks, exponent);
  return at_reference * scale;
}

CommInitModel fit_comm_init(double n1, Time t1, double n2, Time t2) {
  if (!(n1 > 0.0) || !(n2 > 0.0) || n1 == n2 || t1 <= Time::zero() || t2 <= Time::zero()) {
    throw InputError(
        fmt::format("communicator init: cannot fit a power law through ({} ranks, "
                    "{}) and ({} ranks, {})",
                    n1, t1.to_string(), n2, t2.to_string()));
  }
  CommInitModel m;
  m.at_reference = t1;
  m.reference_ranks = n1;
  m.exponent = std::log(t2.to_seconds() / t1.to_seconds()) / std::log(n2 / n1);
  return m;
}

std::int64_t ReliabilityModel::spares_for(const StepProfile& step) const {
  if (spare_nodes) return *spare_nodes;
  // To the nearest server, and at least one when there is a pool at all: rounded to none, a
  // job of under 25 servers at 2 % waited a 24 h repair on every hardware failure (a 128-GPU
  // job's restart 1,228 min instead of 13). A one-server job still pays for a second.
  if (!(spare_fraction > 0.0)) return 0;
  return std::max<std::int64_t>(1, std::llround(spare_fraction * static_cast<double>(step.nodes)));
}

std::optional<double> ReliabilityModel::billed_spare_share(const StepProfile& step) const {
  if (spare_nodes || !(spare_fraction > 0.0) ||
      std::llround(spare_fraction * static_cast<double>(step.nodes)) >= 1) {
    return std::nullopt;
  }
  // Its share in nodes' worth of GPUs, as the node overhead is charged (power.cpp): a one-GPU
  // job pays an eighth of a node's share on 8-GPU nodes. (Its node count rounded up until
  // 2026-12-05: 0.02 of a node for one GPU, a GPU-hour bill 16 % over the job's, not 2 %.)
  return spare_fraction * static_cast<double>(step.gpus) / step.gpus_per_node;
}

double ReliabilityModel::cause_rate_per_hour(const FailureCause& c, const StepProfile& step) const {
  const double units = c.scope == FailureScope::kGpu ? static_cast<double>(step.gpus)
                                                     : static_cast<double>(step.nodes);
  return c.rate_per_unit_hour * units;
}

double ReliabilityModel::failures_per_hour(const StepProfile& step) const {
  double sum = 0.0;
  for (const auto& c : causes) sum += cause_rate_per_hour(c, step);
  return sum;
}

Time ReliabilityModel::blocking_checkpoint_time(Bytes checkpoint) const {
  if (async_checkpoint || checkpoint.value() <= 0.0) return checkpoint_stall;
  return checkpoint_stall + transfer_time(checkpoint, checkpoint_write_bw);
}

Time ReliabilityModel::async_write_time(Bytes checkpoint) const {
  if (!async_checkpoint || checkpoint.value() <= 0.0) return Time::zero();
  return transfer_time(checkpoint, checkpoint_write_bw);
}

Time ReliabilityModel::planned_save_time(Bytes checkpoint) const {
  if (checkpoint.value() <= 0.0) return checkpoint_stall;
  return checkpoint_stall + transfer_time(checkpoint, checkpoint_write_bw);
}

Time ReliabilityModel::checkpoint_load_time(Bytes checkpoint) const {
  if (checkpoint.value() <= 0.0) return Time::zero();
  return transfer_time(checkpoint, checkpoint_read_bw);
}

Time ReliabilityModel::launch_time(const StepProfile& step) const {
  return restart_overhead + comm_init.at(step.gpus);
}

Time ReliabilityModel::restart_time(const StepProfile& step) const {
  return launch_time(step) + checkpoint_load_time(step.checkpoint_size);
}

double ReliabilityModel::replacements_per_hour(const StepProfile& step) const {
  double sum = 0.0;
  for (const auto& c : causes) {
    if (c.needs_replacement) sum += cause_rate_per_hour(c, step);
  }
  return sum;
}

Time ReliabilityModel::eviction_wait(const StepProfile& step, std::int64_t evicted,
                                     Time horizon) const {
  const std::int64_t spares = spares_for(step);
  const double lambda = replacements_per_hour(step);
  const double r = repair_time.to_hours();
  // Failures come only while the job runs: a run shorter than the repair has fewer of them
  // (until 2026-12-06 the whole repair counted, a 10 h run charged for 24 h of failures).
  const double h = std::min(r, std::max(horizon.to_hours(), 0.0));
  if (evicted <= 0 || spares <= 0 || !(lambda > 0.0) || !(h > 0.0)) return Time::zero();
  // The replacements are a Poisson stream; the j-th, at T_j <= H = min(R, horizon), waits
  // R - T_j for the first evicted node back where the pool had a spare for it but the eviction
  // took it (spares - evicted < j <= spares), N counting arrivals up to H:
  //   E[(R - T_j) 1{T_j <= H}] = R P(N >= j) - (j / lambda) P(N >= j + 1).
  // Past 1e15 expected failures nothing is countable (and the counts below stay in range).
  const double mu = std::min(lambda * h, 1e15);
  const std::int64_t first = std::max<std::int64_t>(spares - evicted, 0) + 1;
  // Beyond mu + 40 sd + 40 no arrival count is worth a term.
  const double stop = std::ceil(mu + 40.0 * std::sqrt(mu) + 40.0);
  const std::int64_t last =
      std::min<std::int64_t>(spares, static_cast<std::int64_t>(std::min(stop, 1e15)));
  if (first > last) return Time::zero();
  // tail[n - first] = P(N >= n) for first <= n <= last + 1: below the mean as 1 - P(N < n),
  // summed up from 0; above it as the sum of the pmf from `stop` down, which keeps the small
  // tails of a small mu exact (1 - P(N < n) lost them to cancellation). The pmf by its
  // recurrence in logarithms (e^-mu underflows for a large mu).
  const std::int64_t top = last + 1;
  std::vector<double> tail(static_cast<std::size_t>(top - first + 1), 0.0);
  const double log_mu = std::log(mu);
  const auto split = static_cast<std::int64_t>(std::floor(mu)) + 1;  // first n above the mean
  double log_pmf = -mu, below = 0.0;                                 // log P(N = n), P(N < n)
  for (std::int64_t n = 0; n <= std::min(top, split - 1); ++n) {
    if (n > 0) log_pmf += log_mu - std::log(static_cast<double>(n));
    if (n >= first) tail[static_cast<std::size_t>(n - first)] = std::clamp(1.0 - below, 0.0, 1.0);
    below += std::exp(log_pmf);
  }
  // From past the last tail wanted, so that each is summed (top can pass `stop` by one).
  const auto high = std::max(static_cast<std::int64_t>(std::min(stop, 2e15)), top);
  if (top >= split && high >= std::max(first, split)) {
    double log_down =
        -mu + static_cast<double>(high) * log_mu - std::lgamma(static_cast<double>(high) + 1.0);
    double above = 0.0;  // P(n <= N <= high)
    for (std::int64_t n = high; n >= std::max(first, split); --n) {
      above += std::exp(log_down);
      if (n <= top) tail[static_cast<std::size_t>(n - first)] = std::min(above, 1.0);
      log_down += std::log(static_cast<double>(n)) - log_mu;
    }
  }
  double hours = 0.0;
  for (std::int64_t j = first; j <= last; ++j) {
    const double at_least = tail[static_cast<std::size_t>(j - first)];
    const double next = tail[static_cast<std::size_t>(j + 1 - first)];
    hours += std::max(0.0, r * at_least - static_cast<double>(j) / lambda * next);
  }
  return Time::from_hours(hours);
}

Time ReliabilityModel::mean_recovery_time(const StepProfile& step) const {
  const double rate = failures_per_hour(step);
  const double replace_share = rate > 0.0 ? replacements_per_hour(step) / rate : 0.0;
  // As a trial takes it: a free spare joins after detection and its replacement time; with no
  // spares the job waits for its own node, whose repair starts at the failure, beside detection.
  const Time replace =
      spares_for(step) > 0 ? replacement_time : std::max(Time::zero(), repair_time - detection);
  return detection + replace * replace_share + restart_time(step);
}

StragglerEffect draw_stragglers(const StepProfile& step, const ReliabilityModel& m,
                                std::uint64_t seed, Time training) {
  const double f = m.straggler_node_fraction;
  if (f <= 0.0) return {};
  // Node by node on a stream of its own, evicting or keeping alike: the same seed finds the
  // same stragglers either way (until 2026-12-06 a kept draw took one uniform number against
  // 1 - (1 - f)^nodes, so the two policies' trials found different stragglers).
  constexpr std::uint64_t kStragglerStream = 0x5354524147474c52ull;  // "STRAGGLR"
  Rng pick(seed ^ kStragglerStream);
  std::int64_t found = 0;
  for (std::int64_t n = 0; n < step.nodes; ++n) found += pick.bernoulli(f) ? 1 : 0;
  if (found == 0) return {};  // nothing to evict, nothing slow (whatever the pool)
  // Evicted where the pool replaces them all and the waiting for spares that is expected to
  // add while their nodes are in repair costs less than the slowdown of every step.
  if (m.evict_stragglers && found <= m.spares_for(step) &&
      m.eviction_wait(step, found, training) < training * m.straggler_slowdown) {
    return {found, false};
  }
  return {0, true};
}

ReliabilityModel no_failures_model() {
  ReliabilityModel m;
  m.name = "none";
  m.source = "no failures, no checkpoints, no stragglers: the failure-free bound";
  m.comm_init.at_reference = Time::zero();
  // Free checkpoints: with "none" a checkpoint interval set by the user costs nothing.
  m.checkpoint_read_bw = BytesPerSec(std::numeric_limits<double>::infinity());
  m.checkpoint_write_bw = BytesPerSec(std::numeric_limits<double>::infinity());
  m.checkpoint_interval = Time::max();
  return m;
}

Time young_interval(Time checkpoint_cost, double mtbf_hours) {
  const double s = std::sqrt(2.0 * checkpoint_cost.to_seconds() * mtbf_hours * 3600.0);
  return Time::from_seconds(std::min(s, kMaxRunSeconds));
}

Time daly_interval(Time checkpoint_cost, double mtbf_hours) {
  const double d = checkpoint_cost.to_seconds();
  const double m = mtbf_hours * 3600.0;
  // Beyond the model's range (δ ≥ 2M) Daly checkpoints every MTBF.
  if (d >= 2.0 * m) return Time::from_seconds(std::min(m, kMaxRunSeconds));
  // Daly's higher-order estimate (FGCS 22(3), 2006, eq. 37): the perturbation series of the
  // optimum to its third term, with ξ = δ / 2M.
  const double xi = d / (2.0 * m);
  const double s = std::sqrt(2.0 * d * m) * (1.0 + std::sqrt(xi) / 3.0 + xi / 9.0) - d;
  return Time::from_seconds(std::min(s, kMaxRunSeconds));
}

}  // namespace megasim::run
