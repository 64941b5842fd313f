// import-nccl-tests: the GPUs a log names against the --device profile and the --cluster's
// nodes. A log is imported only onto the part it ran on: an H100 log onto the A100 profile
// would price A100 shapes with H100 measurements, and a PCIe card's (no NVSwitch) figures are
// not an SXM module's.
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/import_scales.h"
#include "engine/error.h"
#include "hw/gpu_part.h"

namespace megasim::cli {
void check_device_family(const std::string& log, const std::vector<std::string>& devices,
                         const hw::DeviceProfile& base, const std::string& device_ref) {
  const hw::GpuPart want = hw::gpu_part(hw::profile_part_name(base));
  // A log of two parts measured neither: no profile is the one to import it onto.
  for (const auto& d : devices) {
    if (!hw::part_mismatch(hw::gpu_part(devices.front()), hw::gpu_part(d)).empty()) {
      throw InputError(
          fmt::format("{}: its rank lines name two GPU models ('{}' and '{}'): a run "
                      "across two parts times neither; import a log of one",
                      log, devices.front(), d));
    }
  }
  for (const auto& d : devices) {
    const hw::GpuPart got = hw::gpu_part(d);
    // Another part megasim has no profile of (a GB10 or an RTX onto the H100 profile): taken,
    // since the log may be all a user has, but said (it was silent until 2026-12-05). GH200 and
    // H800 are Hopper parts, so near enough to H100 and H200 not to be named.
    const std::string l = lower(d);
    const bool hopper_kin =
        l.find("gh200") != std::string::npos || l.find("h800") != std::string::npos;
    if (!want.family.empty() && got.family.empty() && !(hopper_kin && want.family != "a100")) {
      std::fprintf(stderr,
                   "megasim: warning: %s: its rank lines name '%s', not an %s part; its figures "
                   "are imported onto --device '%s' as they are\n",
                   log.c_str(), d.c_str(), want.family.c_str(), device_ref.c_str());
    }
    // The form and the memory were not compared until 2026-12-06: an "A100 80GB PCIe" log
    // imported onto the SXM4 profile, an "A100-SXM4-40GB" one onto the 80 GB profile.
    if (const std::string why = hw::part_mismatch(got, want); !why.empty()) {
      throw InputError(fmt::format(
          "{}: its rank lines name '{}', but --device '{}' is the profile of '{}': {}; import "
          "the log onto a profile of its part",
          log, d, device_ref, hw::profile_part_name(base), why));
    }
  }
}

void check_cluster_part(const net::ClusterSpec& cluster, const std::string& cluster_ref,
                        const hw::DeviceProfile& base) {
  // The cluster the log ran on has the log's GPUs (the --device profile's, checked above): a
  // fit against another part's links (an A100 log fitted on NDR 400G H100 nodes) scales NCCL's
  // model wrongly everywhere the profile goes (accepted until 2026-12-06).
  // Family and form (hw::node_part_mismatch): the links the fit scales do not depend on the
  // memory.
  if (const std::string why = hw::node_part_mismatch(cluster.node.gpu, base); !why.empty()) {
    throw InputError(fmt::format(
        "--cluster '{}': its nodes hold '{}', not the --device profile's part: {}; give the "
        "cluster the log ran on",
        cluster_ref, cluster.node.gpu, why));
  }
}

}  // namespace megasim::cli
