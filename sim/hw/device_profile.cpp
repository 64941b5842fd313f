#include "hw/device_profile.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "engine/error.h"

namespace megasim::hw {

const char* to_string(ProfileKind k) {
  switch (k) {
    case ProfileKind::kDatasheet: return "datasheet";
    case ProfileKind::kMeasured: return "measured";
    case ProfileKind::kImported: return "imported";
  }
  return "?";
}

const char* to_string(Activity a) {
  switch (a) {
    case Activity::kGemm: return "gemm";
    case Activity::kMemory: return "memory";
    case Activity::kCommunication: return "communication";
    case Activity::kIdle: return "idle";
  }
  return "?";
}

Watts PowerProfile::at(Activity a) const {
  switch (a) {
    case Activity::kGemm: return gemm;
    case Activity::kMemory: return memory;
    case Activity::kCommunication: return communication;
    case Activity::kIdle: return idle;
  }
  return idle;
}

double GemmModelParams::efficiency_for(Flops f) const {
  for (const auto& c : classes) {
    if (f <= c.max_flops) return c.efficiency;
  }
  return classes.empty() ? 1.0 : classes.back().efficiency;
}

const char* to_string(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kAllReduce: return "all_reduce";
    case CollectiveOp::kAllGather: return "all_gather";
    case CollectiveOp::kReduceScatter: return "reduce_scatter";
    case CollectiveOp::kAllToAll: return "alltoall";
    case CollectiveOp::kSendRecv: return "sendrecv";
    case CollectiveOp::kBroadcast: return "broadcast";
    case CollectiveOp::kReduce: return "reduce";
  }
  return "?";
}

std::optional<CollectiveOp> collective_op_from_string(const std::string& s) {
  for (CollectiveOp op : {CollectiveOp::kAllReduce, CollectiveOp::kAllGather,
                          CollectiveOp::kReduceScatter, CollectiveOp::kAllToAll,
                          CollectiveOp::kSendRecv, CollectiveOp::kBroadcast,
                          CollectiveOp::kReduce}) {
    if (s == to_string(op)) return op;
  }
  return std::nullopt;
}

std::vector<const CollectiveMeasurement*> run_side(std::vector<const CollectiveMeasurement*> rows) {
  const auto in_place = [](const CollectiveMeasurement* m) { return m->in_place; };
  if (!std::all_of(rows.begin(), rows.end(), in_place)) {
    rows.erase(std::remove_if(rows.begin(), rows.end(), in_place), rows.end());
  }
  return rows;
}

std::optional<Time> measured_collective_time(const std::vector<CollectiveMeasurement>& table,
                                             CollectiveOp op, int ranks, int nodes, Bytes size) {
  // Every run of the shape, pooled: size -> seconds, a size that several runs measured taken
  // from the first of them in table order. Until 2026-12-05 the first run whose sizes spanned
  // the call answered alone, so a sparse log (1 MiB and 1 GiB) bridged a dense one's measured
  // 64 MiB by +101 %.
  const auto of_shape = [&](const CollectiveMeasurement& m) {
    return m.op == op && m.ranks == ranks && m.nodes == nodes && m.algorithm.empty() &&
           m.protocol.empty() && m.time > Time::zero();
  };
  // Each run's side first, then the rows pooled in table order (the first row of a size wins).
  std::map<std::string, std::vector<const CollectiveMeasurement*>> runs;
  for (const auto& m : table) {
    if (of_shape(m)) runs[m.run].push_back(&m);
  }
  std::set<const CollectiveMeasurement*> taken;
  for (const auto& [run, its] : runs) {
    for (const auto* m : run_side(its)) taken.insert(m);
  }
  std::map<double, double> rows;
  for (const auto& m : table) {
    if (taken.count(&m) != 0) rows.emplace(m.size.value(), m.time.to_seconds());
  }
  const double s = size.value();
  if (rows.empty() || s < rows.begin()->first || s > rows.rbegin()->first) return std::nullopt;
  // Log-log between the nearest measured sizes on either side.
  const auto hi = rows.lower_bound(s);
  if (hi->first == s) return Time::from_seconds(hi->second);
  const auto lo = std::prev(hi);
  const double w = std::log(s / lo->first) / std::log(hi->first / lo->first);
  return Time::from_seconds(std::exp((1.0 - w) * std::log(lo->second) + w * std::log(hi->second)));
}

namespace {

// Row-weighted means of the pinned values of one scope (a link, an algorithm, a protocol).
struct Pooled {
  double log_bw = 0.0, lat = 0.0;
  int bw_rows = 0, lat_rows = 0;
  CollectiveScale::Scoped bandwidth() const {
    return {bw_rows > 0, bw_rows > 0 ? std::exp(log_bw / bw_rows) : 1.0};
  }
  CollectiveScale::Scoped latency() const {
    return {lat_rows > 0, lat_rows > 0 ? lat / lat_rows : 0.0};
  }
};

int algorithm_index(const std::string& name) {
  for (CollAlgorithm a :
       {CollAlgorithm::kTree, CollAlgorithm::kRing, CollAlgorithm::kNvls, CollAlgorithm::kNvlsTree,
        CollAlgorithm::kPat})
    if (name == to_string(a)) return scaled_algorithm_index(a);
  return -1;
}

int protocol_index(const std::string& name) {
  for (CollProtocol p : {CollProtocol::kLL, CollProtocol::kLL128, CollProtocol::kSimple})
    if (name == to_string(p)) return static_cast<int>(p);
  return -1;
}

}  // namespace

CollectiveScale collective_scale(const std::vector<CollectiveScaleFit>& fits) {
  CollectiveScale out;
  for (const bool multi : {false, true}) {
    Pooled any;
    std::array<Pooled, kScaledAlgorithms> by_algorithm{};
    std::array<std::array<Pooled, kCollProtocols>, kScaledAlgorithms> by_protocol{};
    for (const auto& f : fits) {
      if ((f.nodes > 1) != multi) continue;
      if (f.bandwidth_rows >= kRowsToPinRegime) {
        const int a = algorithm_index(f.bandwidth_algorithm);
        Pooled& p = a < 0 ? any : by_algorithm[static_cast<std::size_t>(a)];
        p.log_bw += f.bandwidth_rows * std::log(f.bandwidth_scale);
        p.bw_rows += f.bandwidth_rows;
      }
      if (f.latency_rows >= kRowsToPinRegime) {
        // A fit naming an algorithm but no protocol holds for each of its protocols.
        const int a = algorithm_index(f.latency_algorithm), q = protocol_index(f.latency_protocol);
        for (int p = 0; p < kCollProtocols; ++p) {
          if (a >= 0 && q >= 0 && p != q) continue;
          Pooled& pool =
              a < 0 ? any : by_protocol[static_cast<std::size_t>(a)][static_cast<std::size_t>(p)];
          pool.lat += f.latency_rows * f.latency_offset_us;
          pool.lat_rows += f.latency_rows;
          if (a < 0) break;
        }
      }
    }
    (multi ? out.net_bandwidth : out.nvlink_bandwidth) = any.bandwidth().value;
    (multi ? out.net_latency_offset_us : out.nvlink_latency_offset_us) = any.latency().value;
    for (std::size_t a = 0; a < by_algorithm.size(); ++a) {
      out.bandwidth_by_algorithm[multi][a] = by_algorithm[a].bandwidth();
      for (std::size_t q = 0; q < by_protocol[a].size(); ++q)
        out.latency_by_algorithm[multi][a][q] = by_protocol[a][q].latency();
    }
  }
  return out;
}

bool splits_buffer(CollectiveOp op) {
  return op == CollectiveOp::kAllGather || op == CollectiveOp::kReduceScatter ||
         op == CollectiveOp::kAllToAll;
}

double bus_factor(CollectiveOp op, int ranks) {
  // nccl-tests doc/PERFORMANCE.md: all-reduce moves 2(n-1)/n of the buffer over each rank's
  // bus; all-gather, reduce-scatter and all-to-all (n-1)/n; the rooted ops and send/recv 1.
  const double n = ranks > 0 ? static_cast<double>(ranks) : 1.0;
  switch (op) {
    case CollectiveOp::kAllReduce: return 2.0 * (n - 1.0) / n;
    case CollectiveOp::kAllGather:
    case CollectiveOp::kReduceScatter:
    case CollectiveOp::kAllToAll: return (n - 1.0) / n;
    case CollectiveOp::kSendRecv:
    case CollectiveOp::kBroadcast:
    case CollectiveOp::kReduce: return 1.0;
  }
  return 1.0;
}

bool DeviceProfile::has_peak(DType t) const {
  const auto it = peak.find(t);
  return it != peak.end() && it->second.value() > 0.0;
}

FlopsPerSec DeviceProfile::peak_for(DType t) const {
  if (!has_peak(t)) {
    throw InputError("device profile '" + name + "' has no " + to_string(t) +
                     " peak (peak_tflops." + to_string(t) +
                     "): this GPU cannot run the kernel, or the profile must state it");
  }
  return peak.at(t);
}

}  // namespace megasim::hw

namespace megasim::hw {

double expected_max_of_normals(std::int64_t n) {
  if (n <= 1) return 0.0;
  // E[max] = ∫ x · n φ(x) Φ(x)^(n-1) dx by Simpson's rule on [-9, 11]: the density of the
  // largest of up to 10^9 draws lies well inside, and a step of 1/200 matches Harter's tables
  // to their last digit (tests/hw/fleet_variation_test.cpp).
  const double count = static_cast<double>(n);
  const double lo = -9.0, hi = 11.0;
  const int steps = 4'000;
  const double h = (hi - lo) / steps;
  const double inv_sqrt2 = 1.0 / std::sqrt(2.0);
  const double inv_sqrt2pi = 1.0 / std::sqrt(2.0 * std::acos(-1.0));
  auto f = [&](double x) {
    const double log_cdf = std::log1p(-0.5 * std::erfc(x * inv_sqrt2));
    return x * count * inv_sqrt2pi * std::exp(-0.5 * x * x + (count - 1.0) * log_cdf);
  };
  double sum = f(lo) + f(hi);
  for (int i = 1; i < steps; ++i) sum += (i % 2 == 1 ? 4.0 : 2.0) * f(lo + i * h);
  return sum * h / 3.0;
}

double SustainedGemm::rate(double gemm_share) const {
  Point below{0.0, 1.0};
  for (const Point& p : points) {
    if (gemm_share <= p.gemm_share) {
      const double w = (gemm_share - below.gemm_share) / (p.gemm_share - below.gemm_share);
      return below.rate + std::max(0.0, w) * (p.rate - below.rate);
    }
    below = p;
  }
  return below.rate;
}

double FleetVariation::slowest_of(std::int64_t gpus) const {
  return sigma > 0.0 ? sigma * expected_max_of_normals(gpus) : 0.0;
}

}  // namespace megasim::hw
