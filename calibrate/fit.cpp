#include "calibrate/fit.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <tuple>

#include <Eigen/Dense>
#include <fmt/format.h>

#include "calibrate/least_squares.h"
#include "engine/error.h"
#include "hw/kernel_cost_model.h"

namespace megasim::calibrate {

std::vector<hw::CollectiveFit> fit_collectives(
    const std::vector<hw::CollectiveMeasurement>& rows) {
  using Key = std::tuple<hw::CollectiveOp, int, int, std::string, std::string, std::string>;
  std::map<Key, std::vector<const hw::CollectiveMeasurement*>> groups;
  for (const auto& r : rows) {
    if (r.time <= Time::zero() || r.size.value() <= 0.0) continue;
    groups[{r.op, r.ranks, r.nodes, r.algorithm, r.protocol, r.run}].push_back(&r);
  }
  std::vector<hw::CollectiveFit> fits;
  for (auto& [key, g] : groups) {
    // The rows the measured table answers from (an in-place column 0.7x as long pulled the
    // summary's bus rate above every out-of-place row's until 2026-12-05).
    g = hw::run_side(std::move(g));
    std::set<double> sizes;
    for (const auto* r : g) sizes.insert(r->size.value());
    if (sizes.size() < 2) continue;  // alpha and beta need two sizes at least
    const auto& [op, ranks, nodes, algo, proto, run] = key;
    const double factor = hw::bus_factor(op, ranks);
    Eigen::MatrixXd a(static_cast<Eigen::Index>(g.size()), 2);
    for (std::size_t i = 0; i < g.size(); ++i) {
      const double t = g[i]->time.to_seconds();
      a(static_cast<Eigen::Index>(i), 0) = 1.0 / t;
      a(static_cast<Eigen::Index>(i), 1) = factor * g[i]->size.value() / t;
    }
    // t = alpha + size·factor / busbw over the rows divided by t, alpha and 1 / busbw ≥ 0.
    const auto [x, rms, converged] = bounded_least_squares(a, Eigen::Vector2d::Zero());
    if (!converged || x(1) <= 0.0) continue;  // time does not grow with size: no rate to fit
    // Flat times (a latency-bound log, 8 B to 64 B) leave a slope of rounding noise: a
    // bandwidth term under 1 % of the largest size's time is no rate either (it came out at
    // 3e13 GB/s, which no profile may hold).
    double largest = 0.0, its_time = 0.0;
    for (const auto* r : g) {
      if (r->size.value() > largest) {
        largest = r->size.value();
        its_time = r->time.to_seconds();
      }
    }
    if (factor * largest * x(1) < 0.01 * its_time) continue;
    hw::CollectiveFit f;
    f.op = op;
    f.ranks = ranks;
    f.nodes = nodes;
    f.algorithm = algo;
    f.protocol = proto;
    f.run = run;
    f.alpha = Time::from_seconds(x(0));
    f.bus_bandwidth = BytesPerSec(1.0 / x(1));
    f.rms_relative_residual = rms;
    f.points = static_cast<int>(g.size());
    fits.push_back(f);
  }
  return fits;
}

MemoryFit fit_memory(const hw::DeviceProfile& profile,
                     const std::vector<hw::MemoryMeasurement>& rows) {
  std::vector<const hw::MemoryMeasurement*> used;
  for (const auto& r : rows) {
    if (r.time > Time::zero() && r.bytes.value() > 0.0) used.push_back(&r);
  }
  std::set<double> sizes;
  for (const auto* r : used) sizes.insert(r->bytes.value());
  if (sizes.size() < 2) {
    throw InputError(fmt::format("memory fit needs rows of at least two sizes; the table has {}",
                                 sizes.size()));
  }
  Eigen::MatrixXd a(static_cast<Eigen::Index>(used.size()), 2);
  for (std::size_t i = 0; i < used.size(); ++i) {
    const double t = used[i]->time.to_seconds();
    a(static_cast<Eigen::Index>(i), 0) = 1.0 / t;
    a(static_cast<Eigen::Index>(i), 1) = used[i]->bytes.value() / t;
  }
  // t = launch overhead + bytes / bandwidth over the rows divided by t, both terms ≥ 0.
  const auto [x, rms, converged] = bounded_least_squares(a, Eigen::Vector2d::Zero());
  if (!converged || !(x(1) > 0.0)) {
    throw InputError(fmt::format("memory fit: {} ({} rows); no bandwidth to fit",
                                 converged ? "the kernels' time does not grow with the bytes moved"
                                           : "the bounded solver stopped at its step cap",
                                 used.size()));
  }
  MemoryFit out;
  out.params = profile.memory_model;
  out.params.launch_overhead = Time::from_seconds(x(0));
  const double efficiency = 1.0 / (x(1) * profile.hbm_bandwidth.value());
  // Below the loader's 1 % floor the fit's profile could not be read back.
  if (!(efficiency >= 0.01) || efficiency > 1.0) {
    throw InputError(fmt::format("memory fit: kernels reach {:.1f} % of the profile's HBM "
                                 "bandwidth; check hbm_gbps of '{}'",
                                 100.0 * efficiency, profile.name));
  }
  out.params.bandwidth_efficiency = efficiency;
  out.params.fitted = true;
  out.quality = {static_cast<int>(used.size()), rms};
  return out;
}

namespace {

// Below this relative RMS a fit of no more rows than unknowns met them exactly (else a figure
// was held at a bound, capped or raised).
constexpr double kExactRms = 1e-9;

// How a fitted GEMM model's source begins.
constexpr const char* kGemmFitSource = "fitted by megasim calibrate fit";

// The size-class efficiencies are shared by every dtype, so they are fitted to the dtype
// training runs in (bf16) when the table has it; the table itself still prices other dtypes'
// measured shapes exactly.
void refit_gemm(hw::DeviceProfile& p, std::vector<std::string>& report) {
  std::vector<hw::GemmMeasurement> gemm_rows;
  for (const auto& r : p.gemm_table) {
    if (r.shape.dtype == hw::DType::kBf16) gemm_rows.push_back(r);
  }
  const bool bf16_only = !gemm_rows.empty();
  if (!bf16_only) gemm_rows = p.gemm_table;
  if (gemm_rows.empty()) return;
  GemmFit g = fit_gemm(p, gemm_rows);
  // Classes without rows keep the base profile's stated figure: say which.
  std::string kept;
  for (std::size_t c = 0; c < g.points_per_class.size(); ++c) {
    if (g.points_per_class[c] == 0) kept += fmt::format("{}{}", kept.empty() ? "" : ", ", c);
  }
  const std::string k_half = g.k_half_fitted
                                 ? fmt::format("k_half {:.0f} fitted", g.params.k_half)
                                 : fmt::format(
                                       "k_half {:.0f} held from the profile fitted (the rows "
                                       "need two reduction lengths in one size class)",
                                       g.params.k_half);
  // Refitting a fitted profile keeps what an earlier fit set: its source is not nested in the
  // new one (it grew with every refit).
  const bool refit = p.gemm.source.rfind(kGemmFitSource, 0) == 0;
  const std::string kept_note =
      kept.empty() ? ""
      : refit      ? fmt::format(
                         "; size class {} has no compute-bound row and keeps the "
                              "efficiency it held before this fit",
                         kept)
              : fmt::format(
                    "; size class {} has no compute-bound row and keeps the base "
                    "profile's efficiency ({})",
                    kept, p.gemm.source);
  const std::string notes = gemm_fit_notes(g);
  g.params.source = fmt::format("{} to {} measured {}GEMMs, RMS relative residual {:.2f} %, {}{}{}",
                                kGemmFitSource, g.quality.points, bf16_only ? "bf16 " : "",
                                100.0 * g.quality.rms_relative_residual, k_half, kept_note, notes);
  p.gemm = g.params;
  std::string classes;
  for (const auto& c : p.gemm.classes) {
    classes += fmt::format(" {:.3f}", c.efficiency);
  }
  report.push_back(
      fmt::format("gemm: {} points, overhead {:.2f} us, efficiencies{}{}, {}, rms {:.2f} %{}",
                  g.quality.points, p.gemm.launch_overhead.to_us(), classes,
                  kept.empty() ? "" : fmt::format(" (class {} kept: no rows)", kept), k_half,
                  100.0 * g.quality.rms_relative_residual, notes));
}

void refit_attention(hw::DeviceProfile& p, std::vector<std::string>& report) {
  AttentionFit a = fit_attention(p, p.attention_table);
  // How a pass's ramp was come by: fitted, kept from the input (rows of one size), or none.
  const auto ramp = [](double half, bool kept, const char* prefix) {
    if (half <= 0.0) return std::string("one efficiency at every size");
    return fmt::format("{} {:.3g} GFLOP{}", prefix, half,
                       kept ? " (kept from the input profile: the rows' sizes are under 1.5x "
                              "apart)"
                            : "");
  };
  const auto pass = [&](const char* name, const FitQuality& q, double half, bool kept) {
    if (q.points == 0) {
      return fmt::format("no {} rows ({} efficiency kept from the input profile)", name, name);
    }
    return fmt::format("{} {} rows (RMS relative residual {:.2f} %, {})", name, q.points,
                       100.0 * q.rms_relative_residual, ramp(half, kept, "half the efficiency at"));
  };
  a.params.source = fmt::format(
      "measured: fused attention efficiencies fitted by megasim calibrate fit to cuDNN SDPA "
      "timings, {}, {}{}",
      pass("forward", a.forward, a.params.forward_half_gflop, a.forward_half_kept),
      pass("backward", a.backward, a.params.backward_half_gflop, a.backward_half_kept),
      p.attention.flash_v1_forward_efficiency || p.attention.flash_v1_backward_efficiency
          ? "; FlashAttention-1 efficiencies kept from the input profile"
          : "");
  p.attention = a.params;
  // A pass without rows keeps the input's figures: said so, not printed as a fit of 0 points.
  const auto line = [&](const char* name, const FitQuality& q, double efficiency, double half,
                        bool kept) {
    if (q.points == 0)
      return fmt::format("{} no rows ({:.1f} % of peak kept from the input profile)", name,
                         100.0 * efficiency);
    return fmt::format("{} {} point{}, {:.1f} % of peak, {}, rms {:.2f} %", name, q.points,
                       q.points == 1 ? "" : "s", 100.0 * efficiency,
                       half > 0.0 ? ramp(half, kept, "half at")
                                  : std::string("one efficiency at every size (no ramp)"),
                       100.0 * q.rms_relative_residual);
  };
  report.push_back(fmt::format("attention: {}; {}",
                               line("forward", a.forward, p.attention.fused_forward_efficiency,
                                    p.attention.forward_half_gflop, a.forward_half_kept),
                               line("backward", a.backward, p.attention.fused_backward_efficiency,
                                    p.attention.backward_half_gflop, a.backward_half_kept)));
}

void refit_memory(hw::DeviceProfile& p, std::vector<std::string>& report) {
  MemoryFit m = fit_memory(p, p.memory_table);
  m.params.source = fmt::format("fitted by megasim calibrate fit to {} measured memory-bound "
                                "kernels, RMS relative residual {:.2f} %",
                                m.quality.points, 100.0 * m.quality.rms_relative_residual);
  p.memory_model = m.params;
  // One bandwidth and overhead for every kind of kernel: where the kinds differ the line misses
  // them (the H200's 27 kernels by 38.6 %, unsaid until 2026-12-08). A fifth is where the line
  // reads as poor here, a choice of wording, not a fitted figure.
  constexpr double kPoor = 0.2;
  const double rms = m.quality.rms_relative_residual;
  std::set<hw::MemoryKernel> kinds;
  for (const auto& r : p.memory_table) kinds.insert(r.kind);
  std::string judged;
  if (m.quality.points <= 2) {
    // Two rows meet the line exactly, unless a figure was held at its bound (no overhead).
    judged = rms < kExactRms
                 ? " (no more rows than its two figures, so met exactly: the rms judges "
                   "nothing)"
                 : " (no more rows than its two figures: the rms is only what holding a "
                   "figure at its bound left, and judges nothing else)";
  } else if (rms > kPoor) {
    judged = std::string(" (poor: ") +
             (kinds.size() > 1 ? "one line for every kind of kernel misses them"
                               : "the line misses its rows") +
             "; a kind's rows still answer the sizes between them, the fit only the rest)";
  }
  report.push_back(
      fmt::format("memory: {} point{}, {:.1f} % of HBM bandwidth, overhead {:.2f} "
                  "us, rms {:.2f} %{}",
                  m.quality.points, m.quality.points == 1 ? "" : "s",
                  100.0 * p.memory_model.bandwidth_efficiency,
                  p.memory_model.launch_overhead.to_us(), 100.0 * rms, judged));
}

void refit_power(hw::DeviceProfile& p, std::vector<std::string>& report) {
  const PowerFit f = fit_power(p, p.power_table);
  const auto names = [](const std::vector<hw::Activity>& activities) {
    std::string out;
    for (const hw::Activity a : activities)
      out += std::string(out.empty() ? "" : ", ") + hw::to_string(a);
    return out;
  };
  const std::string kept = names(f.kept), capped = names(f.capped), raised = names(f.raised);
  // The measurement's own description (what the tool wrote, or what an earlier refit kept)
  // stays after the fit's.
  constexpr std::string_view kReadings = " Readings: ";
  const std::string& old = p.power.source;
  const std::size_t at = old.find(kReadings);
  const std::string readings = at != std::string::npos ? old.substr(at + kReadings.size())
                               : old.rfind("measured", 0) == 0 ? old
                                                               : std::string();
  p.power = f.params;
  p.power.source = fmt::format(
      "fitted by megasim calibrate fit to {} board-power reading{} (pure and duty-cycled "
      "phases), RMS relative residual {:.2f} %{}{}{}; power limit {:.0f} W.{}{}",
      f.quality.points, f.quality.points == 1 ? "" : "s", 100.0 * f.quality.rms_relative_residual,
      kept.empty() ? "" : "; kept from the input profile: " + kept,
      capped.empty() ? "" : "; capped at the power limit: " + capped,
      raised.empty() ? "" : "; raised to idle: " + raised, p.power.tdp.value(),
      readings.empty() ? "" : kReadings, readings);
  // As many readings as activities solved for are met exactly, unless a figure was capped or
  // raised: their rms judges nothing; nor does it judge an activity one reading alone covers
  // (each reported as any other fit's until 2026-12-08).
  std::string judged;
  if (f.quality.points <= f.solved) {
    judged = fmt::format(
        " (no more readings than the {} activit{} solved for{}; measure each "
        "phase more than once)",
        f.solved, f.solved == 1 ? "y" : "ies",
        f.quality.rms_relative_residual < kExactRms
            ? ", so met exactly: the rms judges nothing"
            : ": the rms is only what capping or raising left, and judges "
              "nothing else");
  } else if (!f.single.empty()) {
    judged = fmt::format(
        " ({} from one reading alone, which the rms does not judge: measure it "
        "more than once)",
        names(f.single));
  }
  report.push_back(fmt::format(
      "power: {} reading{}, idle {:.0f} W, GEMM {:.0f} W, memory-bound {:.0f} W, communication "
      "{:.0f} W, rms {:.2f} %{}{}{}{}",
      f.quality.points, f.quality.points == 1 ? "" : "s", p.power.idle.value(),
      p.power.gemm.value(), p.power.memory.value(), p.power.communication.value(),
      100.0 * f.quality.rms_relative_residual, judged,
      // An activity no reading covers keeps the input's figure: said, so a line of an idle
      // reading alone does not read as four fitted figures (2026-12-05).
      kept.empty() ? "" : " (" + kept + " kept from the input: no reading covers it)",
      capped.empty() ? "" : " (" + capped + " capped at the power limit)",
      raised.empty() ? "" : " (" + raised + " raised to idle)"));
}

void refit_collectives(hw::DeviceProfile& p, std::vector<std::string>& report) {
  p.collective_fits = fit_collectives(p.collective_table);
  for (const auto& f : p.collective_fits) {
    report.push_back(fmt::format(
        "{} {} ranks / {} nodes{}{}{}: alpha {:.2f} us, bus {:.2f} GB/s, {} points, rms {:.2f} %",
        hw::to_string(f.op), f.ranks, f.nodes, f.algorithm.empty() ? "" : " " + f.algorithm,
        f.protocol.empty() ? "" : " " + f.protocol, f.run.empty() ? "" : " (" + f.run + ")",
        f.alpha.to_us(), f.bus_bandwidth.value() / 1e9, f.points,
        100.0 * f.rms_relative_residual));
  }
  // A shape without a fit is said to be one (its rows still answer for the sizes they hold).
  using Key = std::tuple<hw::CollectiveOp, int, int, std::string, std::string, std::string>;
  std::map<Key, std::set<double>> sizes;
  for (const auto& r : p.collective_table)
    sizes[{r.op, r.ranks, r.nodes, r.algorithm, r.protocol, r.run}].insert(r.size.value());
  for (const auto& [key, s] : sizes) {
    // Compared as a whole: clang before 16 cannot capture structured bindings in a lambda.
    const Key shape = key;
    const bool fitted =
        std::any_of(p.collective_fits.begin(), p.collective_fits.end(), [&shape](const auto& f) {
          return Key{f.op, f.ranks, f.nodes, f.algorithm, f.protocol, f.run} == shape;
        });
    if (fitted) continue;
    const auto& [op, ranks, nodes, algo, proto, run] = key;
    report.push_back(fmt::format(
        "{} {} ranks / {} nodes{}{}{}: no alpha-beta fit ({}); its rows answer only the sizes "
        "they hold",
        hw::to_string(op), ranks, nodes, algo.empty() ? "" : " " + algo,
        proto.empty() ? "" : " " + proto, run.empty() ? "" : " (" + run + ")",
        no_fit_reason(ranks, s.size())));
  }
}

}  // namespace

std::string no_fit_reason(int ranks, std::size_t sizes) {
  if (ranks < 2) return kOneRankNoFit;
  if (sizes < 2) return fmt::format("{} message size, and alpha and beta need two", sizes);
  return "the time does not grow measurably with the message size (a bandwidth term under 1 % "
         "of the largest size's time)";
}

std::vector<std::string> refit_profile(hw::DeviceProfile& p, std::vector<std::string>* failures,
                                       int* fitted) {
  std::vector<std::string> report;
  int count = 0;
  // Fitted at the figures the tables were measured at (an edited profile keeps its what-if).
  struct Figures {
    hw::DeviceProfile& p;
    hw::HardwareFigures own;
    ~Figures() { p.set_figures(own); }
  } restore{p, p.figures()};
  if (p.measured_with) p.set_figures(*p.measured_with);
  // Each model's fit on its own: with `failures`, one that cannot be fitted is left as it was
  // and named, and the others are still fitted (a GPU run keeps everything it measured).
  const auto fit = [&](bool has_rows,
                       void (*refit)(hw::DeviceProfile&, std::vector<std::string>&)) {
    if (!has_rows) return false;
    if (failures == nullptr) {
      refit(p, report);
      return true;
    }
    try {
      refit(p, report);
      return true;
    } catch (const InputError& e) {
      failures->push_back(e.what());
      return false;
    }
  };
  // Memory first: the GEMM and attention fits leave out the rows the memory model says are
  // bound by bandwidth, so they read its fitted figures, not the base profile's (a refit of the
  // GPU tool's table moved k_half 233 → 279 until 2026-12-05); attention takes the GEMMs' launch.
  count += fit(!p.memory_table.empty(), refit_memory);
  count += fit(!p.gemm_table.empty(), refit_gemm);
  count += fit(!p.attention_table.empty(), refit_attention);
  count += fit(!p.power_table.empty(), refit_power);
  // The collectives count only with a fit: a table of shapes none of which fits reports them.
  count += fit(!p.collective_table.empty(), refit_collectives) && !p.collective_fits.empty();
  if (fitted != nullptr) *fitted = count;
  return report;
}

}  // namespace megasim::calibrate
