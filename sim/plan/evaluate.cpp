#include "plan/evaluate.h"

#include <algorithm>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "engine/error.h"
#include "hw/gpu_part.h"
#include "hw/kernel_cost_model.h"
#include "io/json_reader.h"
#include "io/resolve.h"
#include "net/topology.h"
#include "plan/assembly.h"
#include "plan/published_runs.h"
#include "run/power.h"
#include "workload/memory.h"

namespace megasim::plan {

std::string power_preset_mismatch(const io::Inputs& in) {
  // Inputs loaded without the run level (compare's, search's) price no power.
  return power_preset_mismatch(in, in.run.has_value());
}

std::string power_preset_mismatch(const io::Inputs& in, bool priced) {
  const auto& preset = in.scenario.power.preset;
  if (!priced || !preset || !io::is_data_name(*preset)) return {};
  const hw::DeviceProfile& d = in.device;
  const std::string own = d.base.empty() ? d.name : d.base;
  if (*preset == own) return {};
  for (const auto& dir : io::builtin_data_dirs(io::DataKind::kDevice)) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(dir / (*preset + ".json"), ec)) continue;
    return fmt::format(
        "power.preset {} is the power preset of the device profile {}, not of this job's "
        "device {} (whose own is {}): its node overhead and switches are charged to the job",
        *preset, *preset, d.name, own);
  }
  return {};
}

std::string cluster_device_mismatch(const net::ClusterSpec& cluster,
                                    const hw::DeviceProfile& device, const char* runs) {
  // A part megasim has no family for (an MI300X, a B200, a GH200) cannot be held to the
  // profile's: said, as the step runs the profile's GPU there too (taken silently until
  // 2026-12-07).
  if (hw::gpu_part(cluster.node.gpu).family.empty())
    return fmt::format(
        "cluster {} holds '{}' GPUs, a part megasim does not know (it knows the A100, H100 and "
        "H200 by name): {} runs the device profile {}'s GPU on the cluster's NVLink and NICs",
        cluster.name, cluster.node.gpu, runs, device.name);
  const std::string why = hw::node_part_mismatch(cluster.node.gpu, device);
  if (why.empty()) return {};
  return fmt::format(
      "cluster {} holds {} GPUs, but the device profile {} is another part's ({}): {} runs the "
      "profile's GPU on the cluster's NVLink and NICs",
      cluster.name, cluster.node.gpu, device.name, why, runs);
}

std::string cluster_device_mismatch(const io::Inputs& in) {
  return cluster_device_mismatch(in.cluster, in.device, "the step");
}

std::string allow_oom_without_run(const io::Inputs& in,
                                  const std::vector<workload::MemoryEstimate>& memory) {
  const auto& v = in.scenario.validation;
  // Only where the key let this plan run: a stage of the step over the device (the file's plan
  // was judged, and a --set plan that fits warned, until a review of 2026-12-07).
  const bool over = workload::worst_fit(memory, in.device.memory) == workload::Fit::kDoesNotFit;
  if (!v || !v->allow_oom || !over) return {};
  const std::filesystem::path file = io::data_root() / "validation/published_runs.json";
  // Said only from a runs file read whole: one that cannot be read says nothing of the run
  // (and simulate, which needs it for nothing else, is not refused for it).
  io::Json runs;
  try {
    runs = io::parse_json_file(file);
  } catch (const InputError&) {
    return {};
  }
  if (!runs.is_object() || !runs.contains("runs") || !runs["runs"].is_array()) return {};
  if (find_run(runs, v->run)) return {};
  return fmt::format(
      "validation.allow_oom lets this plan run over the device's memory as published run '{}' "
      "ran, but {} holds no such run; without the key a plan that does not fit is refused",
      v->run, file.string());
}

std::string framework_lacks(const io::Inputs& in) {
  const auto& f = in.system.not_in_framework;
  const workload::ParallelPlan& p = in.scenario.plan;
  std::vector<std::string> keys;
  if (f.zero2 && p.zero2) keys.push_back("plan.zero2");
  if (f.zero3 && p.zero3) keys.push_back("plan.zero3");
  if (f.cp && p.cp > 1) keys.push_back(fmt::format("plan.cp {}", p.cp));
  if (f.fp8 && p.fp8) keys.push_back("plan.fp8");
  if (f.pp && p.pp > 1) keys.push_back(fmt::format("plan.pp {}", p.pp));
  if (keys.empty()) return {};
  return fmt::format(
      "{} under preset '{}', whose framework does not run {}: {}. Priced as a what-if on the "
      "preset's other mechanisms; the megatron-core preset runs every one",
      fmt::join(keys, ", "), in.scenario.optimizations.preset, keys.size() == 1 ? "it" : "them",
      f.source);
}

std::string node_power_over_reference(const io::Inputs& in) {
  const auto& ref = in.device.reference_system;
  const int gpus = in.cluster.node.gpus;
  if (!in.run || !ref || ref->gpus != gpus) return {};
  const run::PowerInputs& power = in.run->power;
  // The node at its most power-hungry activity, as run::step_power's peak takes it.
  double node_w = 0.0;
  for (std::size_t a = 0; a < hw::kActivityCount; ++a) {
    node_w = std::max(node_w, run::node_power(static_cast<hw::Activity>(a), gpus, power).value());
  }
  if (node_w <= ref->max_power.value()) return {};
  const double gpu_w = (node_w - power.node_overhead.value()) / gpus;
  return fmt::format(
      "a node draws {:.0f} W at its peak ({} GPUs at {:.0f} W and {:.0f} W of node overhead from "
      "power preset {}), more than the {:.0f} W that the device profile's reference system, {} "
      "of {} GPUs, may draw (reference_system.max_power_w): check the preset's node_overhead",
      node_w, gpus, gpu_w, power.node_overhead.value(), power.name, ref->max_power.value(),
      ref->name, ref->gpus);
}

double job_switches(const net::Topology& t, std::int64_t job_gpus) {
  return static_cast<double>(t.switch_count()) * static_cast<double>(job_gpus) /
         static_cast<double>(t.gpus());
}

run::StepProfile step_profile(const io::Inputs& in, const net::Topology& topology,
                              const step::StepPrediction& step) {
  run::StepProfile p;
  p.step_time = step.step_time;
  p.tokens_per_step = step.tokens_per_step;
  p.gpus = in.scenario.plan.gpus();
  p.gpus_per_node = in.cluster.node.gpus;
  p.nodes = (p.gpus + p.gpus_per_node - 1) / p.gpus_per_node;
  p.switches = job_switches(topology, p.gpus);
  p.checkpoint_size = workload::checkpoint_bytes(in.model);
  const double evaluation_s =
      step.evaluation_iteration.to_seconds() * in.scenario.run.evaluation_iterations;
  if (evaluation_s > run::kMaxRunSeconds) {
    throw InputError(
        fmt::format("{}: run.evaluation.iterations: {} forward-only iterations of "
                    "{:.3g} s take more than the {:.0f} years a run may last",
                    in.scenario.file.string(), in.scenario.run.evaluation_iterations,
                    step.evaluation_iteration.to_seconds(), run::kMaxRunYears));
  }
  p.evaluation = step.evaluation_iteration * in.scenario.run.evaluation_iterations;
  p.evaluation_interval_steps = in.scenario.run.evaluation_interval_steps;
  p.mfu = step.mfu;
  const auto at = [&p](hw::Activity a) -> Time& {
    return p.activity_time[static_cast<std::size_t>(a)];
  };
  at(hw::Activity::kGemm) = step.gemm_time;
  at(hw::Activity::kMemory) = step.memory_bound_time;
  at(hw::Activity::kCommunication) = step.comm_only_time;
  at(hw::Activity::kIdle) = step.idle_time;
  p.validate();
  return p;
}

Evaluation evaluate(const io::Inputs& in, const EvaluateOptions& o) {
  Evaluation e;
  e.inputs = in;
  check_step_work(in, o.full, o.limits);
  check_step_memory(in, o.full, o.trace, o.limits);
  const net::Topology topology(in.cluster);
  const step::StepRequest request = assemble_step(in, topology, {o.full, o.trace, o.network});
  const hw::KernelCostModel kernels(in.device);
  e.step = step::predict_step(request, topology, kernels, in.collective);
  if (!o.residuals.empty()) {
    // A validation scenario's own publication never vouches for it.
    const std::string own = in.scenario.validation ? source_of_run(in.scenario.validation->run) : "";
    const std::vector<ResidualRow> rows = load_residuals(o.residuals, o.read);
    Band b = band_for(rows, system_family(in.scenario), e.step.gpus, own);
    // Drawn from rows unlike the prediction (16-bit GEMMs, other scales, other GPUs), and says so.
    b.caveats = band_caveats(rows, b, {e.step.gpus, gpu_family(in.device), in.scenario.plan.fp8});
    if (!b.basis.empty()) {
      e.band = std::move(b);
    } else {
      e.no_band = "no validation row lends one";
    }
  } else {
    e.no_band = "no validation residuals (validation/residuals.json) to draw it from";
  }
  if (in.run) {
    e.profile = step_profile(in, topology, e.step);
    check_run_work(in, *e.profile, o.limits);
    try {
      e.run = run::simulate_run(*e.profile, in.run->spec, in.run->reliability, in.run->power);
    } catch (const InputError& err) {
      throw InputError(in.scenario.file.string() + ": " + err.what());
    }
  }
  return e;
}

}  // namespace megasim::plan
