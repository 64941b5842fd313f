#include "hw/gpu_part.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

namespace megasim::hw {
namespace {

std::string lower_ascii(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool has(const std::string& s, const char* what) {
  return s.find(what) != std::string::npos;
}

// "nvl" as a word of its own (the H100 NVL, "h100-nvl"), not the start of "nvlink".
bool has_nvl(const std::string& s) {
  for (std::size_t at = s.find("nvl"); at != std::string::npos; at = s.find("nvl", at + 1)) {
    const bool starts = at > 0 && (s[at - 1] == ' ' || s[at - 1] == '-' || s[at - 1] == '_');
    // Not NVL8 or NVL72, an NVLink domain's size (HGX H100 NVL8 is SXM modules on NVSwitch).
    const bool ends = at + 3 == s.size() || !std::isalnum(static_cast<unsigned char>(s[at + 3]));
    if (starts && ends) return true;
  }
  return false;
}

}  // namespace

GpuPart gpu_part(const std::string& name) {
  const std::string t = lower_ascii(name);
  GpuPart p;
  if (has(t, "gh200")) return p;
  for (const char* f : {"a100", "h100", "h200"}) {
    if (has(t, f)) p.family = f;
  }
  if (p.family.empty()) return p;
  if (has(t, "sxm")) {
    p.form = "sxm";
  } else if (has(t, "pcie") || has_nvl(t)) {
    p.form = "pcie";
  }
  if (p.family == "a100") {
    for (const char* m : {"40gb", "80gb"}) {
      if (has(t, m)) p.memory = m;
    }
  }
  return p;
}

std::string part_mismatch(const GpuPart& a, const GpuPart& b) {
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

std::string profile_part_name(const DeviceProfile& p) {
  return !gpu_part(p.name).family.empty() || p.base.empty() ? p.name : p.base;
}

std::string node_part_mismatch(const std::string& node_gpu, const DeviceProfile& device) {
  GpuPart nodes = gpu_part(node_gpu), profile = gpu_part(profile_part_name(device));
  nodes.memory.clear();
  profile.memory.clear();
  return part_mismatch(nodes, profile);
}

std::string measured_part_mismatch(const std::string& device_names, const DeviceProfile& device) {
  const auto family = [](const std::string& name) { return gpu_part(name).family; };
  const std::string want = family(profile_part_name(device));
  bool named = false;
  for (std::size_t at = 0; at <= device_names.size();) {
    const std::size_t end = std::min(device_names.find(';', at), device_names.size());
    std::string name = device_names.substr(at, end - at);
    name.erase(0, name.find_first_not_of(" \t"));
    name.erase(name.find_last_not_of(" \t") + 1);
    at = end + 1;
    named = named || !name.empty();
    const std::string got = family(name);
    if (got.empty() || want.empty() || got == want) continue;
    return fmt::format("'{}' measured the tables, but the profile is of '{}': {}", name,
                       profile_part_name(device), part_mismatch(gpu_part(got), gpu_part(want)));
  }
  if (!named) return fmt::format("'{}' names no GPU", device_names);
  return "";
}

}  // namespace megasim::hw
