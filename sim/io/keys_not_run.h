// The keys a scenario writes (in its file or by --set) that the step does not run as written,
// found by their effect on the system and plan it runs (io::load_inputs fills
// Inputs::keys_not_run with them; simulate says them, compare where every variant has them,
// search and simulate refuse a --set value a switch overrides, and compare a varied one).
#pragma once

#include <vector>

#include "io/inputs.h"

namespace megasim::io {

// The optimisation and plan keys: a switch that runs another value in place of the written
// one, and a key with nothing to apply to. Needs the model and the system read.
std::vector<KeyNotRun> keys_not_run(const Inputs& in);

// The stragglers the scenario states that slow no host, appended to `keys`. Needs the cluster.
void stragglers_not_run(const Inputs& in, std::vector<KeyNotRun>& keys);

}  // namespace megasim::io
