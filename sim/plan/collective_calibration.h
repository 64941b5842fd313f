// NCCL's analytic model as a function of the scales a calibration lays over it
// (hw::CollectiveScale), for one measured shape on a cluster: what calibrate's scale fit
// (calibrate/collective_scale_fit.h) evaluates at every trial scale. The CLI joins the two,
// since calibrate sees no topology and plan does not fit.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "hw/collective_constants.h"
#include "hw/device_profile.h"
#include "net/topology.h"

namespace megasim::plan {

// `ranks` over `nodes` nodes: ranks / nodes consecutive GPUs on each of the first `nodes`
// nodes. InputError (naming `what`) when ranks do not divide evenly or the cluster is too small.
std::vector<int> measured_placement(const net::Topology& topology, int ranks, int nodes,
                                    const std::string& what);

// NCCL's modelled time (analytic, as NCCL picks the algorithm and protocol) of `op` on the
// placement above, at a size and under a scale. Owns copies of what it reads; not
// thread-safe (it reuses one constants table, rescaled per call).
// A run with NCCL_ALGO / NCCL_PROTO forced passes them: NCCL's choice keeps them.
std::function<hw::ModelledTime(double, const hw::CollectiveScale&)> scaled_nccl_model(
    std::shared_ptr<const net::Topology> topology, const hw::CollectiveConstants& constants,
    hw::CollectiveOp op, int ranks, int nodes, const std::string& what,
    hw::CollAlgorithm algorithm = hw::CollAlgorithm::kAuto,
    hw::CollProtocol protocol = hw::CollProtocol::kAuto);

}  // namespace megasim::plan
