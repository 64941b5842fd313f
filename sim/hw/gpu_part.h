// What a GPU's name tells of the part: its family, its form and (for the A100) its memory, so
// that a log, a cluster's nodes and a device profile can be held to one part.
#pragma once

#include <string>

#include "hw/device_profile.h"

namespace megasim::hw {

// Family: a100, h100, h200; empty for any other part (a GH200, an H800, a GB10 has no profile
// of its own to go to). Form: "pcie" for a PCIe card or an H100 NVL, "sxm" for a module; empty
// where the name does not say (nvidia-smi calls the H100 SXM module "NVIDIA H100 80GB HBM3").
// Memory, for the A100 alone: "40gb", "80gb".
struct GpuPart {
  std::string family, form, memory;
};

GpuPart gpu_part(const std::string& name);

// Why two parts are not one ("" when they may be): a family, a form or a memory that both
// names state and differ in.
std::string part_mismatch(const GpuPart& a, const GpuPart& b);

// The name that gives a profile's part: its own where that names one (the A100 40 GB profile's
// base is the 80 GB one, whose part it is not), else the shipped profile it came from (a
// calibration or import named as its user chose).
std::string profile_part_name(const DeviceProfile& p);

// Why a node whose GPUs are named `node_gpu` (a cluster's node.gpu) does not hold the part of
// `device` ("" when it may): family and form only, as a node's links do not depend on the
// memory (every shipped A100 cluster names the 80 GB part, and the 40 GB profile runs on them).
std::string node_part_mismatch(const std::string& node_gpu, const DeviceProfile& device);

// Why kernel tables measured on the GPUs `device_names` names (one name, or several joined by
// "; " as an import of several logs writes them) are not `device`'s part, naming the GPU and
// the part ("" when they may be): the family alone (A100, H100, H200), not the form, since a
// PCIe or NVL card is calibrated onto the SXM profile of its chip (`megasim-calibrate-gpu
// --device`; megasim has no PCIe profile), nor the memory, since a profile's part is read from
// its name or, failing that, its base (a 40 GB card's profile named "mygpu" reads as the 80 GB
// part its datasheet profile derives from). Each name is judged alone: one scan of the joined
// names kept the last part. A list of no name at all names no GPU.
std::string measured_part_mismatch(const std::string& device_names, const DeviceProfile& device);

}  // namespace megasim::hw
