// import-nccl-tests: the GPUs a log names against the --device profile and the --cluster's
// nodes. A log is imported only onto the part it ran on: an H100 log onto the A100 profile
// would price A100 shapes with H100 measurements, and a PCIe card's (no NVSwitch) figures are
// not an SXM module's.
#include <cctype>
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/import_scales.h"
#include "engine/error.h"

namespace megasim::cli {
namespace {

// What a name tells of a part megasim has profiles of: its family (a100, h100, h200; empty
// for any other part: a GH200, an H800, a GB10 has no profile of its own to go to), its form
// ("pcie" for a PCIe card or an H100 NVL, "sxm" for a module; empty where the name does not
// say: nvidia-smi calls the H100 SXM module "NVIDIA H100 80GB HBM3") and, for the A100, its
// memory ("40gb", "80gb").
struct Part {
  std::string family, form, memory;
};

Part part_of(const std::string& name) {
  const std::string t = lower(name);
  Part p;
  if (t.find("gh200") != std::string::npos) return p;
  for (const char* f : {"a100", "h100", "h200"}) {
    if (t.find(f) != std::string::npos) p.family = f;
  }
  if (p.family.empty()) return p;
  if (t.find("pcie") != std::string::npos || t.find(" nvl") != std::string::npos ||
      t.find("-nvl") != std::string::npos) {
    p.form = "pcie";
  } else if (t.find("sxm") != std::string::npos) {
    p.form = "sxm";
  }
  if (p.family == "a100") {
    for (const char* m : {"40gb", "80gb"}) {
      if (t.find(m) != std::string::npos) p.memory = m;
    }
  }
  return p;
}

// Why two parts are not one ("" when they may be): a family, a form or a memory that both
// names state and differ in.
std::string mismatch(const Part& a, const Part& b) {
  if (a.family.empty() || b.family.empty()) return "";
  // A100, H100, H200: each read with "an".
  const auto upper = [](std::string f) {
    f[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(f[0])));
    return f;
  };
  const auto form = [](const std::string& f) { return f == "pcie" ? "PCIe card" : "SXM module"; };
  if (a.family != b.family) return "an " + upper(a.family) + " is not an " + upper(b.family);
  if (!a.form.empty() && !b.form.empty() && a.form != b.form) {
    return fmt::format("an {} {} is not an {} {} (a PCIe card has no NVSwitch)", upper(a.family),
                       form(a.form), upper(b.family), form(b.form));
  }
  if (!a.memory.empty() && !b.memory.empty() && a.memory != b.memory) {
    return fmt::format("an {} of {} is not one of {}", upper(a.family), a.memory, b.memory);
  }
  return "";
}

// The profile's part: its own name where that names one (the A100 40 GB profile's base is the
// 80 GB one, whose part it is not), else the shipped profile it came from (a calibration or
// import named as its user chose).
std::string profile_name(const hw::DeviceProfile& p) {
  return !part_of(p.name).family.empty() || p.base.empty() ? p.name : p.base;
}

}  // namespace

void check_device_family(const std::string& log, const std::vector<std::string>& devices,
                         const hw::DeviceProfile& base, const std::string& device_ref) {
  const Part want = part_of(profile_name(base));
  // A log of two parts measured neither: no profile is the one to import it onto.
  for (const auto& d : devices) {
    if (!mismatch(part_of(devices.front()), part_of(d)).empty()) {
      throw InputError(
          fmt::format("{}: its rank lines name two GPU models ('{}' and '{}'): a run "
                      "across two parts times neither; import a log of one",
                      log, devices.front(), d));
    }
  }
  for (const auto& d : devices) {
    const Part got = part_of(d);
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
    if (const std::string why = mismatch(got, want); !why.empty()) {
      throw InputError(fmt::format(
          "{}: its rank lines name '{}', but --device '{}' is the profile of '{}': {}; import "
          "the log onto a profile of its part",
          log, d, device_ref, profile_name(base), why));
    }
  }
}

void check_cluster_part(const net::ClusterSpec& cluster, const std::string& cluster_ref,
                        const hw::DeviceProfile& base) {
  // The cluster the log ran on has the log's GPUs (the --device profile's, checked above): a
  // fit against another part's links (an A100 log fitted on NDR 400G H100 nodes) scales NCCL's
  // model wrongly everywhere the profile goes (accepted until 2026-12-06).
  // Family and form: the links the fit scales do not depend on the memory (every shipped A100
  // cluster names the 80 GB part, and the 40 GB profile runs on them).
  Part nodes = part_of(cluster.node.gpu), device = part_of(profile_name(base));
  nodes.memory.clear();
  device.memory.clear();
  if (const std::string why = mismatch(nodes, device); !why.empty()) {
    throw InputError(fmt::format(
        "--cluster '{}': its nodes hold '{}', not the --device profile's part: {}; give the "
        "cluster the log ran on",
        cluster_ref, cluster.node.gpu, why));
  }
}

}  // namespace megasim::cli
