// Fitting NCCL's own model to one imported nccl-tests run, so that the fit transfers to other
// rank and node counts (an alpha-beta line answers only for the shape it measured).
//
// Two unknowns per run, laid over the model as hw::CollectiveScale lays them: k, the scale of
// the modelled bus bandwidth on the links the run crossed (NVLink on one node, the NICs on
// several), and d, an offset in microseconds added to the modelled latency. Each holds for
// what NCCL ran in the rows that pin it (k: the algorithm of the bandwidth-bound rows, e.g.
// nvls_tree; d: the algorithm and protocol of the latency-bound rows, e.g. tree/LL) when they
// all ran one thing, else for every algorithm on the link. Least squares in log time over the
// run's rows: minimise sum (ln t_model(size; k, d) - ln t_measured)^2. NCCL picks by its own
// estimate, which knows no fitted scale, so the rows keep their algorithm at every (k, d).
// The model is a callback (plan/collective_calibration.h builds it on a cluster): this module
// sees no topology.
//
// Regimes: at the neutral scales, a row is bandwidth-bound when the bandwidth term is 80 % of
// its modelled time or more, latency-bound when the latency is. A run with fewer than
// hw::kRowsToPinRegime rows in a regime does not pin it: that unknown stays neutral (k = 1 or
// d = 0) and the profile answers there. The sum runs over the rows of the pinned regimes only:
// rows between (both terms matter, and k and d trade off there) would bend k or d to stand in
// for each other, and then transfer that error to other shapes. The rms residual is reported over every row. Searches: coordinate
// descent, each step a grid on
// ln k in [ln 0.1, ln 10] (d in [-0.9 x the least modelled latency, 10 x the largest measured
// time]) refined by golden section; deterministic.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "hw/collective_constants.h"
#include "hw/device_profile.h"

namespace megasim::calibrate {

// NCCL's modelled time of the run's call at `bytes` under `scale` (only the run's link class
// is read: nodes > 1 reads net_*, else nvlink_*).
using ScaledModel = std::function<hw::ModelledTime(double bytes, const hw::CollectiveScale& scale)>;

struct ScaleFitRow {
  double bytes = 0.0;
  double seconds = 0.0;  // measured
};

// Fits k and d for one run of `op` on `ranks` over `nodes` (rows: one per size, > 0).
// Throws InputError when a row's time is not positive.
hw::CollectiveScaleFit fit_collective_scale(const std::vector<ScaleFitRow>& rows,
                                            const ScaledModel& model, hw::CollectiveOp op,
                                            int ranks, int nodes);

// What a fit pins and what it leaves to the profile, one line each:
//   "latency of tree/ll: pinned by 12 rows (8 B-32 KiB), offset +4.10 us"
//   "NIC bandwidth of nvls_tree: pinned by 9 rows (64 MiB-16 GiB), scale 0.962"
//   "NVLink bandwidth: not measured (a 2-node run), left to the profile"
// `span`: the sizes each regime covers among the run's rows (regime_span).
struct RegimeSpan {
  double latency_min = 0, latency_max = 0, bandwidth_min = 0, bandwidth_max = 0;  // bytes
};
std::vector<std::string> describe_regimes(const hw::CollectiveScaleFit& fit,
                                          const RegimeSpan& span);
// The sizes each regime spans among `rows` at neutral scales.
RegimeSpan regime_span(const std::vector<ScaleFitRow>& rows, const ScaledModel& model);

}  // namespace megasim::calibrate
