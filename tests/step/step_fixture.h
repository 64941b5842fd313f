// The step-model tests' job: a small job of the MegaScale cluster with real op programs, the
// A100 datasheet profile and collectives on the fabric (step_model_test.cpp,
// deepspeed_step_test.cpp).
#pragma once

#include <functional>
#include <string>
#include <utility>

#include <doctest/doctest.h>

#include "engine/error.h"
#include "hw/kernel_cost_model.h"
#include "io/cluster_loader.h"
#include "io/collective_constants_reader.h"
#include "io/device_profile_loader.h"
#include "io/model_loader.h"
#include "io/system_loader.h"
#include "net/topology.h"
#include "step/step_model.h"
#include "workload/flops.h"
#include "workload/program.h"

namespace megasim::test {
inline const std::string kSource = MEGASIM_SOURCE_DIR;

struct Fixture {
  net::Topology topology{io::load_cluster(kSource + "/topologies/megascale-a100-12288.json")};
  io::LoadedDeviceProfile device{io::load_device_profile(kSource + "/calibrate/profiles/a100-sxm4-80gb.json")};
  hw::CollectiveConstants constants{io::read_collective_constants(device.file)};
  hw::KernelCostModel kernels{device.profile};

  // A 22B-class GPT on 64 GPUs: TP 8 × PP 4 (VPP 2) × DP 2, 16 micro-batches per replica;
  // `edit` changes the plan before the workload is assembled.
  step::StepRequest request(const std::string& preset,
                            const std::function<void(workload::ParallelPlan&)>& edit = {}) const {
    workload::ParallelPlan plan;
    plan.tp = 8;
    plan.pp = 4;
    plan.vpp = 2;
    plan.dp = 2;
    plan.micro_batch = 1;
    plan.global_batch = 32;
    plan.sequence_parallel = true;
    plan.distributed_optimizer = true;
    plan.recompute = workload::Recompute::kSelective;
    plan.schedule = workload::Schedule::kInterleaved;
    if (edit) edit(plan);
    step::StepRequest r;
    r.system = io::load_system_preset(preset);
    r.system.attention_window = 1024;
    r.workload = step::assemble_workload(model(), plan, r.system);
    r.placement = topology.pack_placement(static_cast<int>(plan.gpus()));
    return r;
  }
  step::StepPrediction predict(const step::StepRequest& r) const {
    return step::predict_step(r, topology, kernels, constants);
  }
  // The step on another device profile (a changed copy of the fixture's).
  step::StepPrediction predict_on(const hw::DeviceProfile& p, const step::StepRequest& r) const {
    const hw::KernelCostModel k(p);
    return step::predict_step(r, topology, k, constants);
  }
  // The fixture's profile without the compute/communication interference: a pass's compute
  // is then the same wherever it meets the DP and PP traffic.
  hw::DeviceProfile quiet_profile() const {
    hw::DeviceProfile p = device.profile;
    p.interference.compute_slowdown = 1.0;
    return p;
  }
  // The job's model, the 22B GPT the requests assemble.
  static workload::ModelSpec model() {
    return io::load_model(kSource + "/models/korthikanti-22b.json");
  }
  // A memory-bound pass reading and writing these bytes on the device, in seconds.
  double memory_s(double read, double write) const {
    const hw::MemoryShape m{hw::MemoryKernel::kCopy, Bytes(read), Bytes(write), Flops(0.0)};
    return kernels.cost(hw::KernelShape{m}).time.to_seconds();
  }
  // The step with a sharded-DP flag as the request has it (the preset's, required on) and off.
  std::pair<step::StepPrediction, step::StepPrediction> on_and_off(
      step::StepRequest r, bool step::SystemOptions::Sharding::*flag) const {
    REQUIRE(r.system.sharding.*flag);
    const step::StepPrediction on = predict(r);
    r.system.sharding.*flag = false;
    return {on, predict(r)};
  }
  // Compute no slower beside communication: for tests that hold compute apart from DP time.
  void without_interference() {
    device.profile.interference.compute_slowdown = 1.0;
    kernels = hw::KernelCostModel{device.profile};
  }
};
// 22B under ZeRO-3 alone over 64 GPUs (no TP or PP), full recompute, `micro_batch` sequences a
// GPU in one micro-batch: the plan the DeepSpeed tests below run.
inline std::function<void(workload::ParallelPlan&)> zero3_over(int dp, int micro_batch) {
  return [dp, micro_batch](workload::ParallelPlan& p) {
    p = workload::ParallelPlan{};
    p.dp = dp;
    p.micro_batch = micro_batch;
    p.global_batch = dp * micro_batch;
    p.recompute = workload::Recompute::kFull;
    p.zero3 = true;
  };
}
inline std::function<void(workload::ParallelPlan&)> zero3_over_64(int micro_batch) {
  return zero3_over(64, micro_batch);
}
// A step's data-parallel time, exposed and hidden: what the sharded collectives cost in all.
inline double dp_total(const step::StepPrediction& s) {
  return (s.breakdown.dp_exposed + s.dp_hidden).to_seconds();
}
}  // namespace megasim::test
