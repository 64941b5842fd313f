// The board-power fit (fit_power, calibrate/fit.h): each activity's watts from sustained
// phases, pure and duty-cycled.
#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>
#include <Eigen/Dense>

#include "calibrate/fit.h"
#include "engine/error.h"

namespace megasim::calibrate {

namespace {
// A power model's unknown: an activity, its figure, and each reading's share of time in it.
struct Column {
  hw::Activity activity;
  Watts* watts;
  double (*share)(const hw::PowerMeasurement&);
};

// A working activity a little below idle is the readings' noise (a board running a kernel
// draws at least what it draws idle), and no profile may hold it: it is raised to idle and
// named. Far below (more than a fifth) the readings contradict each other: the fit fails
// (idle 600 W and GEMMs 130 W were raised to 600 W everywhere until 2026-12-05).
void raise_to_idle(const std::vector<const Column*>& fitted, const std::vector<const Column*>& kept,
                   Eigen::VectorXd& x, PowerFit& out) {
  const double idle = out.params.idle.value();
  constexpr double kNoise = 0.8;
  for (std::size_t j = 0; j < fitted.size(); ++j) {
    const auto k = static_cast<Eigen::Index>(j);
    if (fitted[j]->activity == hw::Activity::kIdle || x(k) >= idle) continue;
    if (x(k) < kNoise * idle) {
      throw InputError(fmt::format(
          "power fit: {} fits at {:.0f} W, more than a fifth under the idle {:.0f} W: the "
          "readings contradict each other (a board running a kernel draws at least its idle "
          "power)",
          hw::to_string(fitted[j]->activity), x(k), idle));
    }
    x(k) = idle;
    *fitted[j]->watts = Watts(idle);
    out.raised.push_back(fitted[j]->activity);
  }
  for (const Column* c : kept) {
    if (c->activity == hw::Activity::kIdle || c->watts->value() >= idle) continue;
    *c->watts = Watts(idle);
    out.raised.push_back(c->activity);
  }
}
}  // namespace

PowerFit fit_power(const hw::DeviceProfile& profile,
                   const std::vector<hw::PowerMeasurement>& rows) {
  if (rows.empty()) throw InputError("power fit: no board-power readings");
  PowerFit out;
  out.params = profile.power;
  // The unknowns, in column order, and each reading's share of time in them.
  const Column columns[] = {
      {hw::Activity::kGemm, &out.params.gemm, [](const auto& r) { return r.gemm_share; }},
      {hw::Activity::kMemory, &out.params.memory, [](const auto& r) { return r.memory_share; }},
      {hw::Activity::kCommunication, &out.params.communication,
       [](const auto& r) { return r.communication_share; }},
      {hw::Activity::kIdle, &out.params.idle,
       [](const auto& r) { return std::max(0.0, r.idle_share()); }},
  };
  // An activity no reading spends time in cannot be fitted: it keeps its figure and moves to
  // the right-hand side.
  std::vector<const Column*> fitted, kept;
  for (const Column& c : columns) {
    const auto covering =
        std::count_if(rows.begin(), rows.end(), [&](const auto& r) { return c.share(r) > 1e-6; });
    (covering > 0 ? fitted : kept).push_back(&c);
    if (covering == 0) out.kept.push_back(c.activity);
    if (covering == 1) out.single.push_back(c.activity);
  }
  // Each row divided by its watts, so the residuals are relative errors.
  const auto n = static_cast<Eigen::Index>(rows.size());
  Eigen::MatrixXd a(n, static_cast<Eigen::Index>(fitted.size()));
  Eigen::VectorXd b(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    const auto& r = rows[static_cast<std::size_t>(i)];
    const double w = r.watts.value();
    double known = 0.0;
    for (const Column* c : kept) known += c->share(r) * c->watts->value();
    for (std::size_t j = 0; j < fitted.size(); ++j) {
      a(i, static_cast<Eigen::Index>(j)) = fitted[j]->share(r) / w;
    }
    b(i) = 1.0 - known / w;
  }
  out.solved = static_cast<int>(fitted.size());
  Eigen::VectorXd x = a.colPivHouseholderQr().solve(b);
  for (std::size_t j = 0; j < fitted.size(); ++j) {
    const auto k = static_cast<Eigen::Index>(j);
    const double value = x(k);
    if (!(value > 0.0)) {
      throw InputError(
          fmt::format("power fit: the readings give {} a power of {:.0f} W; they do "
                      "not separate the activities (measure each phase alone too)",
                      hw::to_string(fitted[j]->activity), value));
    }
    if (value > profile.power.tdp.value()) {
      x(k) = profile.power.tdp.value();
      out.capped.push_back(fitted[j]->activity);
    }
    *fitted[j]->watts = Watts(x(k));
  }
  raise_to_idle(fitted, kept, x, out);
  // The residual of the figures the profile keeps, capped and raised ones included.
  const Eigen::VectorXd residual = a * x - b;
  out.quality = {static_cast<int>(rows.size()),
                 std::sqrt(residual.squaredNorm() / static_cast<double>(n))};
  return out;
}

}  // namespace megasim::calibrate
