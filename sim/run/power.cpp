#include "run/power.h"

#include <algorithm>

namespace megasim::run {
double node_share(std::int64_t gpus, int gpus_per_node) {
  return static_cast<double>(gpus) / static_cast<double>(gpus_per_node);
}

Watts cluster_power(Activity a, const StepProfile& step, const PowerInputs& in) {
  return in.gpu_in(a) * static_cast<double>(step.gpus) +
         in.node_overhead * node_share(step.gpus, step.gpus_per_node) +
         in.per_switch * step.switches;
}

Watts node_power(Activity a, int gpus_per_node, const PowerInputs& in) {
  return in.gpu_in(a) * static_cast<double>(gpus_per_node) + in.node_overhead;
}

StepPower step_power(const StepProfile& step, const PowerInputs& in) {
  StepPower p;
  const double total = step.step_time.to_seconds();
  Watts energy_rate;  // Σ power × share of the step
  bool first = true;
  const auto visit = [&](Activity a, Time d) {
    if (d <= Time::zero()) return;
    const Watts w = cluster_power(a, step, in);
    energy_rate += w * (d.to_seconds() / total);
    if (first || w > p.it_peak) p.it_peak = w;
    if (first || w < p.it_trough) p.it_trough = w;
    first = false;
  };
  if (step.phases.empty()) {
    for (std::size_t i = 0; i < kActivityCount; ++i) {
      visit(static_cast<Activity>(i), step.activity_time[i]);
    }
  } else {
    for (const auto& ph : step.phases) visit(ph.activity, ph.duration);
  }
  // A mean of the activities' powers lies between the least and the most: rounding in the sum
  // put it 5e-16 MW above the peak where every activity draws the same (until 2026-12-06).
  p.it_average = first ? energy_rate : std::clamp(energy_rate, p.it_trough, p.it_peak);
  p.it_idle = cluster_power(Activity::kIdle, step, in);
  return p;
}

RunEnergy run_energy(const StepPower& p, Time training, Time not_training, std::int64_t gpus,
                     const SparePool& spares, const PowerInputs& in) {
  RunEnergy e;
  e.spares = spares;
  constexpr double kJoulePerMwh = 3.6e9;
  const double wall = (training + not_training).to_seconds();
  const double share =
      spares.reserved > 0
          ? std::clamp(spares.billed_nodes() / static_cast<double>(spares.reserved), 0.0, 1.0)
          : 0.0;
  const Watts idle_node = node_power(Activity::kIdle, spares.gpus_per_node, in);
  e.spare_it = idle_node * (std::max(spares.powered, 0.0) * share);
  e.spare_it_peak =
      idle_node * (static_cast<double>(std::max<std::int64_t>(spares.reserved, 0)) * share);
  const double it_joules = p.it_average.value() * training.to_seconds() +
                           p.it_idle.value() * not_training.to_seconds() + e.spare_it.value() * wall;
  e.it_mwh = it_joules / kJoulePerMwh;
  e.facility_mwh = e.it_mwh * in.pue;
  e.facility_average = Watts(wall > 0.0 ? it_joules * in.pue / wall : 0.0);
  const double wall_hours = (training + not_training).to_hours();
  const double billed = static_cast<double>(gpus) +
                        (spares.reserved > 0 ? spares.billed_nodes() : 0.0) * spares.gpus_per_node;
  if (in.usd_per_gpu_hour) e.usd_gpu_hours = *in.usd_per_gpu_hour * billed * wall_hours;
  if (in.usd_per_kwh) e.usd_energy = *in.usd_per_kwh * e.facility_mwh * 1000.0;
  e.tonnes_co2 = in.grid_kg_co2_per_kwh * e.facility_mwh * 1000.0 / 1000.0;
  return e;
}

}  // namespace megasim::run
