// What the pricer tests share (context_parallel_test.cpp, tp_decomposition_test.cpp): the
// MegaScale cluster, the A100 datasheet profile and Korthikanti's 22B model (48 layers, h 6144,
// 64 heads, s 2048), and a stage priced under the megatron-core preset with one edit.
#pragma once

#include <string>

#include "hw/kernel_cost_model.h"
#include "io/cluster_loader.h"
#include "io/collective_constants_reader.h"
#include "io/device_profile_loader.h"
#include "io/model_loader.h"
#include "io/system_loader.h"
#include "net/topology.h"
#include "step/pricing.h"
#include "workload/program.h"

namespace megasim::step {
// One DP-group collective priced as the stage's DP traffic is (simulated with its peers).
struct PricerProbe {
  static Time dp(Pricer& p, const workload::CommOp& c) { return p.dp_time_simulated(c, false); }
};
}  // namespace megasim::step

namespace megasim::test {

struct PricerFixture {
  inline static const std::string kSource = MEGASIM_SOURCE_DIR;
  net::Topology topology{io::load_cluster(kSource + "/topologies/megascale-a100-12288.json")};
  io::LoadedDeviceProfile device{
      io::load_device_profile(kSource + "/calibrate/profiles/a100-sxm4-80gb.json")};
  hw::CollectiveConstants constants{io::read_collective_constants(device.file)};
  hw::KernelCostModel kernels{device.profile};
  workload::ModelSpec model{io::load_model(kSource + "/models/korthikanti-22b.json")};
  workload::ParallelPlan plan;

  // The stage's costs under the megatron-core preset as `edit` leaves it.
  template <typename Edit>
  step::StageCosts price(const workload::StageProgram& s, Edit edit) const {
    step::SystemOptions system = io::load_system_preset("megatron-core");
    edit(system);
    step::Pricer pricer(topology, topology.pack_placement(static_cast<int>(plan.gpus())), constants,
                        kernels, plan, system);
    step::PricingTally tally;
    return pricer.price(s, tally);
  }
};

}  // namespace megasim::test
