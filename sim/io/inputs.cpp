#include "io/inputs.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "engine/error.h"
#include "io/cluster_loader.h"
#include "io/collective_constants_reader.h"
#include "io/device_profile_loader.h"
#include "io/keys_not_run.h"
#include "io/link_bound.h"
#include "io/model_loader.h"
#include "io/reliability_loader.h"
#include "io/resolve.h"
#include "io/system_loader.h"
#include "step/step_model.h"
#include "step/workload_assembly.h"
#include "workload/parallel_plan.h"
#include "workload/program.h"

namespace megasim::io {
namespace {

// Runs checks that do not depend on one another and gathers what each one refuses, so that a
// user sees every clash at once.
class Clashes {
 public:
  void check(const std::function<void()>& f) {
    try {
      f();
    } catch (const InputError& e) {
      messages_.emplace_back(e.what());
    }
  }
  void add(std::string message) { messages_.push_back(std::move(message)); }
  bool any() const { return !messages_.empty(); }
  void throw_if_any() const {
    if (messages_.empty()) return;
    std::string all = messages_.front();
    for (std::size_t i = 1; i < messages_.size(); ++i) all += "\n" + messages_[i];
    throw InputError(all);
  }

 private:
  std::vector<std::string> messages_;
};

void read_device(const Scenario& s, Inputs& in, FilesRead* read) {
  const LoadedDeviceProfile device = load_device_profile(s.device_file, read);
  in.device = device.profile;
  if (device.collective.is_null()) {
    throw InputError(fmt::format("{}: device profile '{}' has no \"collective\" constants table, "
                                 "which the network model needs",
                                 s.device_file.string(), device.profile.name));
  }
  in.collective = read_collective_constants(
      JsonReader(device.collective, "collective", s.device_file.string()));
  in.collective.scale = hw::collective_scale(in.device.collective_scales);
}

void check_plan_against_model(const Inputs& in) {
  try {
    workload::validate_plan(in.model, in.scenario.plan);
  } catch (const InputError& e) {
    // A line a clash, each naming the scenario.
    const std::string file = in.scenario.file.string() + ": ";
    std::string lines = file;
    for (const char c : std::string(e.what())) lines += c == '\n' ? "\n" + file : std::string(1, c);
    throw InputError(lines);
  }
}

void check_plan_against_cluster(const Inputs& in) {
  const Scenario& s = in.scenario;
  const workload::ParallelPlan& p = s.plan;
  if (p.gpus() > in.cluster.gpus) {
    throw InputError(fmt::format("{}: plan: tp × cp × pp × dp = {} × {} × {} × {} = {} GPUs, but "
                                 "cluster '{}' has {}",
                                 s.file.string(), p.tp, p.cp, p.pp, p.dp, p.gpus(), in.cluster.name,
                                 in.cluster.gpus));
  }
  if (s.placement == "spread" && p.gpus() % in.cluster.node.gpus != 0) {
    throw InputError(fmt::format(
        "{}: placement: 'spread' puts the job on whole servers, but "
        "tp × cp × pp × dp = {} × {} × {} × {} = {} GPUs is not a "
        "multiple of the {} GPUs a server of cluster '{}' holds",
        s.file.string(), p.tp, p.cp, p.pp, p.dp, p.gpus(), in.cluster.node.gpus, in.cluster.name));
  }
  const std::int64_t limit = cluster_gpu_limit(p.gpus());
  if (in.cluster.gpus > limit) {
    throw InputError(fmt::format(
        "{}: cluster '{}' ({}) has {} GPUs, more than the {} megasim builds for a job of {} GPUs "
        "(the larger of {} and {} × the job's GPUs): the whole topology is built, so describe "
        "only the part of the cluster the job runs on",
        s.file.string(), in.cluster.name, s.cluster_file.string(), in.cluster.gpus, limit,
        p.gpus(), kMaxClusterGpusFloor, kMaxClusterPerJobGpu));
  }
}

// A measured collective the scenario's cluster could not have run (imported from a faster
// fabric, or a wrong log) would answer its shape with a time these links cannot give.
void check_measured_collectives(const Inputs& in) {
  check_profile_against_links(in.device, in.scenario.device_file.string(), in.cluster);
}

void check_window(const Inputs& in) {
  if (in.system.sliding_window && in.system.attention_window <= 0) {
    throw InputError(fmt::format(
        "{}: optimizations.sliding_window is on (preset '{}') but neither "
        "optimizations.attention_window nor the model gives a window size",
        in.scenario.file.string(), in.scenario.optimizations.preset));
  }
}

// BF16_Optimizer is DeepSpeed's pipeline engine's; no other preset runs it.
void check_bf16_optimizer(const Inputs& in) {
  const auto& o = in.scenario.optimizations;
  if (o.overrides.bf16_optimizer && o.preset != "deepspeed") {
    throw InputError(fmt::format(
        "{}: optimizations.bf16_optimizer is DeepSpeed's pipeline engine's, but the preset is '{}'",
        in.scenario.file.string(), o.preset));
  }
  // BF16_Optimizer has no unsharded form: it always shards its fp32 weights and optimizer
  // states over DP and all-gathers the updated parameters (bf16_optimizer.py), and bf16 runs
  // nothing else beside the engine ('bf16 must use z0! it implements its own zero stage 1
  // equivalent', BLOOM's tr11-176B-ml.slurm). Priced as written until 2026-12-06: a plan
  // without the gather and with four times the states, which search ranked first.
  const workload::ParallelPlan& p = in.scenario.plan;
  if (workload::bf16_optimizer_applies(in.system.pipe_engine.bf16_optimizer, p) &&
      p.dp_cp() > 1 && !p.distributed_optimizer) {
    throw InputError(fmt::format(
        "{}: plan.distributed_optimizer is false, but preset '{}' runs DeepSpeed's "
        "BF16_Optimizer for bf16, which shards its fp32 weights and optimizer states over the "
        "{} DP ranks always (ZeRO stage 0 with bf16: its own stage 1); set "
        "plan.distributed_optimizer true, or optimizations.bf16_optimizer false",
        in.scenario.file.string(), in.scenario.optimizations.preset, p.dp_cp()));
  }
}

void check_pipeline_engine_schedule(const Inputs& in) {
  const workload::ParallelPlan& p = in.scenario.plan;
  if (in.system.pipe_engine.present && p.pp > 1 && p.schedule != workload::Schedule::kOneFOneB) {
    throw InputError(fmt::format(
        "{}: plan.schedule '{}' (vpp {}): preset '{}' runs DeepSpeed's pipeline engine, whose "
        "one training schedule is a 1F1B (TrainSchedule); set plan.schedule 1f1b and vpp 1",
        in.scenario.file.string(), workload::to_string(p.schedule), p.vpp,
        in.scenario.optimizations.preset));
  }
  // PipelineEngine.__init__: "ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism".
  if (in.system.pipe_engine.present && p.pp > 1 && (p.zero2 || p.zero3)) {
    throw InputError(fmt::format(
        "{}: plan.{} with pp {}: preset '{}' runs DeepSpeed's pipeline engine, which refuses "
        "ZeRO-2 and ZeRO-3 beside pipeline parallelism (ZeRO-1, distributed_optimizer, is its)",
        in.scenario.file.string(), p.zero3 ? "zero3" : "zero2", p.pp,
        in.scenario.optimizations.preset));
  }
}

void check_context_parallel(const Inputs& in) {
  // Context parallelism splits the fused attention kernel's work over the CP ranks (Megatron-
  // Core runs it only with Transformer Engine's fused attention); the unfused path's s² score
  // matrices have no context-parallel form in megasim.
  if (in.scenario.plan.cp > 1 && in.system.attention_kernel() == step::AttentionKernel::kUnfused) {
    throw InputError(fmt::format(
        "{}: plan.cp {} needs a fused attention kernel, but the scenario runs unfused attention "
        "(preset '{}' with its optimizations; set optimizations.attention)",
        in.scenario.file.string(), in.scenario.plan.cp, in.scenario.optimizations.preset));
  }
}

void check_fp8(const Inputs& in) {
  if (in.scenario.plan.fp8 && !in.device.has_peak(hw::DType::kFp8)) {
    throw InputError(fmt::format(
        "{}: plan.fp8 is true, but device profile '{}' ({}) states no fp8 peak "
        "(peak_tflops.fp8): the GPU has no FP8 tensor cores, or the profile must state them",
        in.scenario.file.string(), in.device.name, in.scenario.device_file.string()));
  }
}

void check_tp_decomposition(const Inputs& in) {
  // Transformer Engine's userbuffers hold SMs for their collectives; the GEMM needs the rest.
  const auto& d = in.system.tp_decomposition;
  if (!d.enabled) return;
  for (const auto& [key, sms] : {std::pair{"pipeline_comm_sms", d.pipeline_comm_sms},
                                 std::pair{"bulk_comm_sms", d.bulk_comm_sms}}) {
    if (sms >= in.device.sm_count) {
      throw InputError(fmt::format(
          "{}: tp_overlap_decomposition.{} of preset '{}' is {}, but device profile '{}' has "
          "{} SMs: the GEMM beside the collective would have none",
          in.scenario.file.string(), key, in.scenario.optimizations.preset, sms, in.device.name,
          in.device.sm_count));
    }
  }
}

void check_microbatch_group(const Inputs& in) {
  // megasim's blocking exchanges (no pp_overlap) post each receive just before the pass that
  // consumes it, which is Megatron-LM's order for a group of pp. With a larger group the last
  // stage's send waits for a receive the first stage posts only after its whole group of
  // forwards, while the stages between wait in their own sends: a cycle in megasim's program.
  // Megatron-Core's blocking path takes larger groups (its leading stage posts the receive pp -
  // 1 iterations after the aligned send); megasim does not model that alignment.
  const workload::ParallelPlan& p = in.scenario.plan;
  if (p.microbatch_group > p.pp && !in.system.pp_overlap) {
    throw InputError(fmt::format(
        "{}: plan.microbatch_group {} is more than pp {}: megasim runs such groups with "
        "asynchronous pipeline sends only, and preset '{}' runs blocking ones (set "
        "optimizations.pp_overlap or a group of pp)",
        in.scenario.file.string(), p.microbatch_group, p.pp, in.scenario.optimizations.preset));
  }
  // Megatron-LM refuses interleaving on two stages with blocking exchanges: each batch would
  // hold two sends and two receives between the same two ranks (arguments.py, "pipeline-model-
  // parallel size should be greater than 2 with interleaved schedule").
  if (p.vpp > 1 && p.pp == 2 && !in.system.pp_overlap) {
    throw InputError(fmt::format(
        "{}: plan.vpp {} with pp 2: Megatron-LM interleaves only over more than 2 stages when "
        "its pipeline exchanges block, as preset '{}' runs them (set optimizations.pp_overlap, "
        "vpp 1 or pp above 2)",
        in.scenario.file.string(), p.vpp, in.scenario.optimizations.preset));
  }
}

void read_run_level(const InputOptions& o, Inputs& in, FilesRead* read) {
  const Scenario& s = in.scenario;
  RunInputs r;
  r.spec = run_spec_for(s, o.trials);
  r.reliability = reliability_for(s, in.cluster.node.gpus, read);
  r.power = power_for(s, in.device, read);
  in.run = r;
}

}  // namespace

void check_plan(const Inputs& in) {
  if (const auto clash = plan_clash(in.scenario.plan)) {
    throw InputError(
        fmt::format("{}: plan.{}: {}", in.scenario.file.string(), clash->key, clash->message));
  }
  Clashes clashes;
  clashes.check([&] { check_plan_against_model(in); });
  clashes.check([&] { check_plan_against_cluster(in); });
  clashes.check([&] { check_bf16_optimizer(in); });
  clashes.check([&] { check_context_parallel(in); });
  clashes.check([&] { check_pipeline_engine_schedule(in); });
  clashes.check([&] { check_microbatch_group(in); });
  clashes.check([&] { check_fp8(in); });
  clashes.throw_if_any();
}

Inputs load_inputs(const Scenario& s, const InputOptions& o, FilesRead* read) {
  Inputs in;
  in.scenario = s;
  Clashes clashes;
  bool have_model = false, have_cluster = false, have_system = false, have_device = false;
  clashes.check([&] {
    named_by(s, "model", s.model_ref, [&] { in.model = load_model(s.model_file, nullptr, read); });
    have_model = true;
  });
  clashes.check([&] {
    named_by(s, "cluster", s.cluster_ref, [&] { in.cluster = load_cluster(s.cluster_file, read); });
    have_cluster = true;
  });
  clashes.check([&] {
    named_by(s, "device", s.device_ref, [&] { read_device(s, in, read); });
    have_device = true;
  });
  clashes.check([&] {
    step::SystemOptions preset;
    named_by(s, "optimizations.preset", s.optimizations.preset,
             [&] { preset = load_system_preset(s.optimizations.preset, read); });
    in.system = step::apply_overrides(preset, s.optimizations.overrides, in.model.parallel_block,
                                      in.model.attention_window);
    have_system = have_model;
  });
  // The plan every report prints is the one priced: with the optimizer the system runs.
  in.written_optimizer = s.plan.optimizer;
  if (have_system) {
    in.scenario.plan.optimizer = step::system_optimizer(s.plan.optimizer, in.system);
    // DeepSpeed's ZeRO optimizers keep and reduce bf16 gradients in bf16; its BF16_Optimizer
    // adds them into fp32 ones (until 2026-12-07 fp32 under every preset: ZeRO-2 and 3 moved
    // twice the bytes DeepSpeed does, a trial of the presets).
    if (!s.fp32_gradients_written) {
      in.scenario.plan.fp32_gradients = step::fp32_gradients_by_rule(in.system, in.scenario.plan);
    }
  }
  if (have_system) in.keys_not_run = keys_not_run(in);
  if (have_cluster) stragglers_not_run(in, in.keys_not_run);
  if (have_model) clashes.check([&] { check_plan_against_model(in); });
  if (have_cluster) clashes.check([&] { check_plan_against_cluster(in); });
  if (have_system) clashes.check([&] { check_window(in); });
  if (have_system) clashes.check([&] { check_bf16_optimizer(in); });
  if (have_system) clashes.check([&] { check_context_parallel(in); });
  if (have_system) clashes.check([&] { check_pipeline_engine_schedule(in); });
  if (have_system) clashes.check([&] { check_microbatch_group(in); });
  if (have_device) clashes.check([&] { check_fp8(in); });
  if (have_device && have_cluster) clashes.check([&] { check_measured_collectives(in); });
  if (have_device && have_system) clashes.check([&] { check_tp_decomposition(in); });
  // The run level's power preset comes from the device: without a device there is none to name.
  if (o.trials && !s.run.tokens) {
    clashes.check([&] {
      throw InputError(
          fmt::format("--trials {}: {} sets no run.tokens, so there is no run to "
                      "draw trials of (set run.tokens, or drop --trials)",
                      *o.trials, s.file.string()));
    });
  }
  if (have_device && o.run_level && s.run.tokens) {
    clashes.check([&] { read_run_level(o, in, read); });
  } else {
    // Unused without a run, but a preset the scenario names must exist and read: a wrong name
    // would otherwise pass until run.tokens is set (and a file read is one no output replaces:
    // compare --html wrote over a reliability preset's file until 2026-12-07).
    if (s.power.preset) clashes.check([&] { scenario_power_preset(s, read); });
    if (!is_data_name(s.reliability.preset)) {
      clashes.check([&] {
        named_by(s, "reliability.preset", s.reliability.preset, [&] {
          (void)load_reliability_preset(s.reliability.preset, read, s.file.parent_path());
        });
      });
    }
  }
  clashes.throw_if_any();
  return in;
}

}  // namespace megasim::io
