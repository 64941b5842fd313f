#include "reports/power_report.h"

#include <fmt/format.h>

#include "reports/number_text.h"

namespace megasim::reports {
namespace {

using run::PowerInputs;
using run::RunResult;
using run::StepProfile;

using Json = nlohmann::json;

double mw(Watts w) {
  return w.value() * 1e-6;
}

// The job's IT and facility power with every GPU in each activity, and the time a GPU spends
// in it per step (the activities' order within the step is not modelled).
Json by_activity(const StepProfile& step, const PowerInputs& power) {
  Json out = Json::array();
  for (std::size_t i = 0; i < run::kActivityCount; ++i) {
    const auto a = static_cast<run::Activity>(i);
    const double it = mw(run::cluster_power(a, step, power));
    out.push_back({{"activity", hw::to_string(a)},
                   {"step_s", step.time_in(a).to_seconds()},
                   {"it_mw", it},
                   {"facility_mw", it * power.pue}});
  }
  return out;
}

// The drop from the step's average to idle, where something stops the job: a failure, or
// only a planned stop (the line said nothing of a run stopped by planned stops alone until
// 2026-12-07); the none preset has neither.
std::string drop_text(const RunResult& r) {
  const bool failures = r.failures_per_day > 0.0, planned = r.planned_per_day > 0.0;
  if (!failures && !planned) return "";
  return fmt::format(", drop {} on a {}", power_text(mw(r.power.it_average - r.power.it_idle)),
                     failures ? "failure" : "planned stop");
}

}  // namespace

void append_power(std::string& o, const RunResult& r, const PowerInputs& power) {
  o += fmt::format("power (preset {}, GPU watts of the {}, PUE {:.2f})\n", power.name,
                   power.gpu_source, power.pue);
  // Each average says what it is over (the IT one was the steps' alone, unsaid).
  const char* spares = r.energy.spares.powered > 0.0 ? " (idle spares included)" : "";
  // Each peak: the job's (--json's) and with every reserved spare idling (or a small job's
  // share). Until 2026-12-06 the IT line gave the job's alone, under its average with the
  // spares (12.26 MW, peak 9.03 with 1,536 spares), and the facility's the spares' mean.
  const auto with_spares = [&](double scale) {
    return r.energy.spare_it_peak.value() > 0.0
               ? fmt::format(" ({} with {} idle)",
                             power_text((mw(r.power.it_peak) + mw(r.energy.spare_it_peak)) * scale),
                             r.energy.spares.billed ? "its share of the spares" : "every spare")
               : std::string();
  };
  // The drop on a failure only where failures happen (the none preset has none).
  o += fmt::format(
      "  IT             average {} in steps, {} over the run{}, peak {}{}, swing {} in a step{}\n",
      power_text(mw(r.power.it_average)), power_text(mw(r.energy.facility_average) / power.pue),
      spares, power_text(mw(r.power.it_peak)), with_spares(1.0), power_text(mw(r.power.swing())),
      drop_text(r));
  o += fmt::format("  facility       average {} in steps, {} over the run{}, peak {}{}\n",
                   power_text(mw(r.power.it_average) * power.pue),
                   power_text(mw(r.energy.facility_average)), spares,
                   power_text(mw(r.power.it_peak) * power.pue), with_spares(power.pue));
  if (r.energy.spares.reserved > 0) {
    // A job billed a share of the pool pays that share of the idling nodes' power, not all.
    const auto& billed = r.energy.spares.billed;
    o += fmt::format(
        "  spares         {} node{} reserved{}, {:.1f} idling beside the job on average, {} IT{} "
        "(in the run's energy{})\n",
        r.energy.spares.reserved, r.energy.spares.reserved == 1 ? "" : "s",
        billed ? fmt::format(" (the job's share, {:.2g} of a node, billed)", *billed)
               : std::string(),
        r.energy.spares.powered, power_text(mw(r.energy.spare_it)),
        billed ? " of it the job's share" : "", r.energy.usd_gpu_hours ? " and GPU-hour cost" : "");
  }
  // Three decimals, or three digits for a grid cleaner than 0.01 kg/kWh (not "0.000").
  const double grid = power.grid_kg_co2_per_kwh;
  o += fmt::format(
      "  energy         {} facility ({} IT), {} CO2 at {} kg/kWh\n",
      thousandths_text(r.energy.facility_mwh, "MWh", "kWh", "Wh"),
      thousandths_text(r.energy.it_mwh, "MWh", "kWh", "Wh"),
      thousandths_text(r.energy.tonnes_co2, "t", "kg", "g"),
      grid >= 0.01 || grid == 0.0 ? fmt::format("{:.3f}", grid) : fmt::format("{:.3g}", grid));
  if (r.energy.usd_gpu_hours)
    o += fmt::format("  cost           ${:.3g} in GPU-hours\n", *r.energy.usd_gpu_hours);
  if (r.energy.usd_energy)
    o += fmt::format("  cost           ${:.3g} in energy\n", *r.energy.usd_energy);
}

Json power_json(const RunResult& r, const StepProfile& step, const PowerInputs& power) {
  Json pw = {
      {"preset", power.name},
      {"gpu_source", power.gpu_source},
      {"it_average_mw", mw(r.power.it_average)},
      {"it_peak_mw", mw(r.power.it_peak)},
      {"it_trough_mw", mw(r.power.it_trough)},
      {"it_idle_mw", mw(r.power.it_idle)},
      {"by_activity", by_activity(step, power)},
      {"facility_average_step_mw", mw(r.power.it_average) * power.pue},
      {"facility_peak_mw", mw(r.power.it_peak) * power.pue},
      // With every reserved spare idle (all of their power, or the job's share), as at launch.
      {"facility_peak_with_spares_mw",
       (mw(r.power.it_peak) + mw(r.energy.spare_it_peak)) * power.pue},
      {"facility_average_run_mw", mw(r.energy.facility_average)},
      {"swing_mw", mw(r.power.swing())},
      // A failure drops the whole job from its step average to idle at once.
      {"failure_drop_mw", mw(r.power.it_average - r.power.it_idle)},
      {"pue", power.pue},
      {"it_mwh", r.energy.it_mwh},
      {"facility_mwh", r.energy.facility_mwh},
      {"tonnes_co2", r.energy.tonnes_co2},
      {"grid_kg_co2_per_kwh", power.grid_kg_co2_per_kwh}};
  pw["spare_nodes_reserved"] = r.energy.spares.reserved;
  pw["spare_nodes_billed"] = r.energy.spares.billed_nodes();
  pw["spare_nodes_powered"] = r.energy.spares.powered;
  pw["spare_it_mw"] = mw(r.energy.spare_it);
  if (r.energy.usd_gpu_hours) pw["usd_gpu_hours"] = *r.energy.usd_gpu_hours;
  if (r.energy.usd_energy) pw["usd_energy"] = *r.energy.usd_energy;
  return pw;
}

}  // namespace megasim::reports
