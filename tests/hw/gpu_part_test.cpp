// A GPU's part read from its name, as nvidia-smi, nccl-tests and megasim's own profile and
// cluster files spell it, and why two parts are not one.
#include <doctest/doctest.h>

#include <string>

#include "hw/gpu_part.h"

using megasim::hw::DeviceProfile;
using megasim::hw::gpu_part;
using megasim::hw::measured_part_mismatch;
using megasim::hw::part_mismatch;

TEST_CASE("gpu part: family, form and the A100's memory from the names in use") {
  const auto h100 = gpu_part("NVIDIA H100 80GB HBM3");  // nvidia-smi's name of the SXM module
  CHECK(h100.family == "h100");
  CHECK(h100.form.empty());
  CHECK(gpu_part("h100-sxm5-80gb").form == "sxm");
  CHECK(gpu_part("NVIDIA H100 NVL").form == "pcie");
  CHECK(gpu_part("h100-nvl-94gb").form == "pcie");
  CHECK(gpu_part("NVIDIA H100 PCIe").form == "pcie");
  // "nvl" begins "NVLink": a node described with its NVLink is not a PCIe card (it was, by the
  // name's " nvl", until 2026-12-06).
  CHECK(gpu_part("H100 SXM with NVLink").form == "sxm");
  CHECK(gpu_part("H100 NVLink board").form.empty());
  // NVL8 is an NVLink domain's size (HGX H100 NVL8: SXM modules on NVSwitch), and a name that
  // says SXM is a module whatever else it says.
  CHECK(gpu_part("HGX H100 NVL8").form.empty());
  CHECK(gpu_part("h100-nvl8").form.empty());
  CHECK(gpu_part("H100-SXM5-80GB NVL").form == "sxm");
  const auto a100 = gpu_part("A100-SXM4-40GB");
  CHECK(a100.family == "a100");
  CHECK(a100.form == "sxm");
  CHECK(a100.memory == "40gb");
  CHECK(gpu_part("NVIDIA GH200 480GB").family.empty());  // no profile of its own
  CHECK(gpu_part("h200-sxm-141gb").family == "h200");
}

TEST_CASE("gpu part: two names of one part agree, and another family, form or memory is said") {
  CHECK(part_mismatch(gpu_part("NVIDIA H100 80GB HBM3"), gpu_part("h100-sxm5-80gb")).empty());
  CHECK(part_mismatch(gpu_part("h100-sxm5-80gb"), gpu_part("a100-sxm4-80gb")) ==
        "an H100 is not an A100");
  CHECK(part_mismatch(gpu_part("NVIDIA A100 80GB PCIe"), gpu_part("a100-sxm4-80gb")) ==
        "an A100 PCIe card is not an A100 SXM module (a PCIe card has no NVSwitch)");
  CHECK(part_mismatch(gpu_part("A100-SXM4-40GB"), gpu_part("a100-sxm4-80gb")) ==
        "an A100 of 40gb is not one of 80gb");
  // A part megasim has no profile of is not held against any.
  CHECK(part_mismatch(gpu_part("NVIDIA GB10"), gpu_part("h100-sxm5-80gb")).empty());
}

TEST_CASE("gpu part: measured tables are judged name by name, by family alone") {
  DeviceProfile h100;
  h100.name = "h100-sxm5-80gb-measured";
  h100.base = "h100-sxm5-80gb";
  // A PCIe or NVL card is calibrated onto its chip's SXM profile (the tool's --device).
  CHECK(measured_part_mismatch("NVIDIA H100 NVL", h100).empty());
  CHECK(measured_part_mismatch("NVIDIA H100 80GB HBM3", h100).empty());
  CHECK(measured_part_mismatch("NVIDIA GB10; NVIDIA H100 80GB HBM3", h100).empty());
  // Each name of an import's list alone: the A100 was passed over where an H100 came after it
  // (a review, 2026-12-06).
  CHECK(measured_part_mismatch("NVIDIA A100-SXM4-80GB; NVIDIA H100 80GB HBM3", h100) ==
        "'NVIDIA A100-SXM4-80GB' measured the tables, but the profile is of "
        "'h100-sxm5-80gb-measured': an A100 is not an H100");
  DeviceProfile a100;
  a100.name = "my-node";  // no part in its name: the base's
  a100.base = "a100-sxm4-80gb";
  CHECK(measured_part_mismatch("NVIDIA A100-SXM4-80GB; NVIDIA H100 80GB HBM3", a100) ==
        "'NVIDIA H100 80GB HBM3' measured the tables, but the profile is of 'a100-sxm4-80gb': an "
        "H100 is not an A100");
  // Not the memory: a 40 GB card's profile named without a part reads as its base's 80 GB part
  // (the 40 GB datasheet profile derives from the 80 GB one), and was refused (a review).
  CHECK(measured_part_mismatch("NVIDIA A100-SXM4-40GB", a100).empty());
  CHECK(measured_part_mismatch("", a100) == "'' names no GPU");
  CHECK(measured_part_mismatch("; ", a100) == "'; ' names no GPU");
}
