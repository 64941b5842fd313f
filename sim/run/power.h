// Power, energy, cost and CO2 of a training cluster. Per-GPU power by activity (the device
// profile's: datasheet figures, or a calibration's NVML samples), node overhead (CPUs, DRAM,
// fans, NICs, NVSwitches), switch power and the facility's PUE, combined over the step
// timeline (StepProfile) and then over the run (training vs. stalled/recovering time).
// Node, switch and grid figures come from power/*.json through io::load_power_preset(), the
// GPU's from the device profile (io::power_for); plain value types.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "engine/time.h"
#include "engine/units.h"
#include "run/step_profile.h"

namespace megasim::run {

struct PowerInputs {
  std::string name;
  std::string source;
  std::array<Watts, kActivityCount> gpu{};  // per GPU, indexed by Activity
  std::string gpu_source;                   // the device profile the GPU figures are from
  Watts node_overhead;                      // per node, everything but the GPUs
  Watts per_switch;                         // per fabric switch, optics included
  double pue = 1.2;                         // facility power / IT power
  std::optional<double> usd_per_gpu_hour;
  std::optional<double> usd_per_kwh;
  double grid_kg_co2_per_kwh = 0.0;

  Watts gpu_in(Activity a) const { return gpu[static_cast<std::size_t>(a)]; }
};

// IT power of one node with all its GPUs in one activity (GPUs + node overhead).
Watts node_power(Activity a, int gpus_per_node, const PowerInputs& in);
// The nodes' overhead a job draws: its share of its servers, GPUs over GPUs a node (a job of
// part of a server shares it, as it is billed its own GPUs; a whole-node job draws its nodes').
double node_share(std::int64_t gpus, int gpus_per_node);
// IT power of the whole job with every GPU in activity `a` (GPUs, its share of the nodes, the
// job's switches).
Watts cluster_power(Activity a, const StepProfile& step, const PowerInputs& in);

// Cluster power over one failure-free step.
struct StepPower {
  Watts it_average;  // time-weighted over the step
  Watts it_peak;     // the most power-hungry phase
  Watts it_trough;   // the least power-hungry phase that occurs in the step
  Watts it_idle;     // everything idle (stalls, recovery)
  Watts swing() const { return it_peak - it_trough; }
};
StepPower step_power(const StepProfile& step, const PowerInputs& in);

// The spare pool beside the job: hot spares, powered and idle, ready to replace a failed node,
// and reserved (billed) with the job for the whole run. `powered` is the mean number idling in
// the pool over the run: the places of nodes out for repair (failed, or evicted stragglers)
// are empty (they draw no power).
struct SparePool {
  std::int64_t reserved = 0;  // nodes reserved for the job
  double powered = 0.0;       // mean nodes idling in the pool
  int gpus_per_node = 8;
  // Nodes' worth billed with the job, when not `reserved`: a small job's share of its one spare
  // (ReliabilityModel::billed_spares_for); its energy is that share of the spares' too.
  std::optional<double> billed;
  double billed_nodes() const {
    return std::max(billed.value_or(static_cast<double>(reserved)), 0.0);
  }
};

// Energy, cost and CO2 of a run given how its wall-clock time splits between training and
// everything else (checkpoint stalls, recovery, waiting), during which the GPUs idle, plus the
// spare pool's idle power over the whole wall-clock time.
struct RunEnergy {
  SparePool spares;
  Watts spare_it;  // the powered spares, idle: the mean over the run
  // Every reserved spare idle at once (at launch, before any is taken): what the facility must
  // supply beside the job's peak. The billed share of both, for a small job's share of one.
  Watts spare_it_peak;
  double it_mwh = 0.0;
  double facility_mwh = 0.0;
  Watts facility_average;               // over the whole run, idle periods included
  std::optional<double> usd_gpu_hours;  // (gpus + reserved spares' GPUs) × wall hours × $/GPU-hour
  std::optional<double> usd_energy;     // facility kWh × $/kWh
  double tonnes_co2 = 0.0;
};
RunEnergy run_energy(const StepPower& p, Time training, Time not_training, std::int64_t gpus,
                     const SparePool& spares, const PowerInputs& in);

}  // namespace megasim::run
