// `megasim collective --cluster NAME --op all_reduce --gpus N --bytes 8:8G`: parses the sweep's
// arguments (sizes in nccl-tests' units), runs it (plan/collective_sweep.h) and prints it
// (reports/collective_report.h).
#include <cctype>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.h"
#include "engine/error.h"
#include "io/output.h"
#include "plan/collective_sweep.h"
#include "reports/collective_report.h"

namespace megasim::cli {
namespace {

struct CollectiveOptions {
  std::string cluster;
  std::string op = "all_reduce";
  int gpus = 8;
  std::string bytes = "8:8G";
  double step_factor = 2.0;
  std::string algo = "auto";
  std::string proto = "auto";
  std::string routing = "ecmp";
  std::string placement = "packed";
  int per_node = 0;
  std::string device;
  bool json = false;
};

// "8", "64K", "1M", "8G", "1Gi" (binary multiples, as nccl-tests' -b/-e take them).
double parse_size(const std::string& text) {
  std::size_t used = 0;
  double v = 0.0;
  // A decimal number: std::stod alone took " 8", "0x100" and "inf" (until 2026-12-05).
  const std::size_t digits = text.find_first_not_of("0123456789.eE+-");
  const bool decimal =
      !text.empty() && (std::isdigit(static_cast<unsigned char>(text[0])) != 0 || text[0] == '.');
  try {
    if (!decimal || (digits != std::string::npos && (text[digits] == 'x' || text[digits] == 'X')))
      throw std::invalid_argument(text);
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    throw InputError("--bytes: '" + text + "' is not a size (e.g. 8, 64K, 1M, 8G)");
  }
  std::string suffix = text.substr(used);
  if (!suffix.empty() && (suffix.back() == 'B' || suffix.back() == 'b')) suffix.pop_back();
  if (suffix.size() == 2 && suffix.back() == 'i') suffix.pop_back();  // Ki, Mi, Gi, Ti
  double mult = 1.0;
  if (suffix == "K" || suffix == "k") mult = 1024.0;
  else if (suffix == "M" || suffix == "m") mult = 1024.0 * 1024.0;
  else if (suffix == "G" || suffix == "g") mult = 1024.0 * 1024.0 * 1024.0;
  else if (suffix == "T" || suffix == "t") mult = 1024.0 * 1024.0 * 1024.0 * 1024.0;
  else if (!suffix.empty()) throw InputError("--bytes: unknown unit '" + suffix + "' in '" + text + "' (use K, M, G or T)");
  if (!(v > 0.0) || !std::isfinite(v)) throw InputError("--bytes: size '" + text + "' must be positive");
  // A petabyte a call is past any buffer a GPU holds, and keeps the times in the simulator's range.
  constexpr double kMaxBytes = 1e15;
  if (v * mult > kMaxBytes) {
    throw InputError(
        fmt::format("--bytes: size '{}' is {:.3g} bytes, past the {:.0e} a call may move", text,
                    v * mult, kMaxBytes));
  }
  if (v * mult != std::floor(v * mult)) {
    throw InputError(
        fmt::format("--bytes: size '{}' is {:g} bytes; a size is a whole number of "
                    "bytes",
                    text, v * mult));
  }
  return v * mult;
}

std::vector<double> parse_sizes(const std::string& spec, double factor) {
  const auto colon = spec.find(':');
  const double lo = parse_size(spec.substr(0, colon));
  const double hi = colon == std::string::npos ? lo : parse_size(spec.substr(colon + 1));
  if (hi < lo) throw InputError("--bytes: the largest size " + spec.substr(colon + 1) + " is below the smallest");
  if (!(factor > 1.0) || !std::isfinite(factor))
    throw InputError(
        fmt::format("--step-factor must be a finite number above 1, found {}", factor));
  // As nccl-tests steps: multiply, and drop a size that rounds to the one before. A factor so
  // near 1 that the steps would number past kMaxSteps is refused before stepping.
  constexpr std::size_t kMaxSizes = 200;
  constexpr double kMaxSteps = 1e5;
  const double steps = std::log(hi / lo) / std::log(factor);
  if (steps > kMaxSteps) {
    throw InputError(
        fmt::format("--step-factor {}: {:.3g} steps from {:g} to {:g} bytes, more "
                    "than {:g}; give a larger factor",
                    factor, steps, lo, hi, kMaxSteps));
  }
  std::vector<double> sizes;
  for (double s = lo; s <= hi * (1.0 + 1e-12); s *= factor) {
    const double b = std::round(s);
    if (!sizes.empty() && b == sizes.back()) continue;
    if (sizes.size() == kMaxSizes) {
      throw InputError(
          fmt::format("--bytes {} with --step-factor {}: more than {} sizes; raise "
                      "the factor or narrow the range",
                      spec, factor, kMaxSizes));
    }
    sizes.push_back(b);
  }
  return sizes;
}

void run_collective(const CollectiveOptions& o) {
  plan::SweepRequest r;
  r.cluster = o.cluster;
  r.op = o.op;
  r.gpus = o.gpus;
  r.sizes = parse_sizes(o.bytes, o.step_factor);
  r.algorithm = o.algo;
  r.protocol = o.proto;
  r.routing = o.routing;
  r.placement = o.placement == "pack" ? "packed" : o.placement;  // a scenario's spelling
  r.per_node = o.per_node;
  r.device = o.device;
  const plan::Sweep sweep = plan::collective_sweep(r);
  if (!sweep.device_mismatch.empty())
    std::fprintf(stderr, "megasim: warning: %s\n", sweep.device_mismatch.c_str());
  const std::string out = o.json ? reports::collective_json(sweep) : reports::collective_text(sweep);
  io::write_stdout(out);
}

}  // namespace

void add_collective_command(CLI::App& app) {
  auto opts = std::make_shared<CollectiveOptions>();
  CLI::App* cmd = app.add_subcommand("collective", "Sweep one collective over sizes, nccl-tests style");
  cmd->add_option("--cluster", opts->cluster, "Cluster name or file (topologies/)")->required();
  // Each default shown in the help (none was until 2026-12-05).
  cmd->add_option("--op", opts->op,
                  "all_reduce, all_gather, reduce_scatter, broadcast, all_to_all, send_recv")
      ->capture_default_str();
  cmd->add_option("--gpus", opts->gpus, "GPUs in the communicator")
      ->check(whole_number(1, 1 << 22))
      ->capture_default_str();
  cmd->add_option(
         "--bytes", opts->bytes,
         "Size or MIN:MAX, e.g. 8:8G (binary units: K, M, G, T or Ki, Mi, Gi, Ti are "
         "powers of 1024; a trailing B is read as bytes); cut to whole 4-byte elements, and an "
         "all-gather, reduce-scatter or all-to-all needs one a rank: a sweep drops the "
         "sizes below that, a single size under it is refused")
      ->capture_default_str();
  cmd->add_option("--step-factor", opts->step_factor,
                  "Multiply the size by this between rows (nccl-tests -f)")
      ->capture_default_str();
  cmd->add_option("--algo", opts->algo, "ring, tree, nvls, nvls_tree, pat or auto (NCCL's choice)")
      ->capture_default_str();
  cmd->add_option("--proto", opts->proto, "ll, ll128, simple or auto")->capture_default_str();
  cmd->add_option("--routing", opts->routing, "ecmp (flow hash) or spray (ideal)")
      ->capture_default_str();
  cmd->add_option("--placement", opts->placement,
                  "packed (consecutive servers; or pack, as scenarios spell it) or spread")
      ->capture_default_str();
  cmd->add_option("--per-node", opts->per_node,
                  "GPUs of the communicator on each node, the first of each (default: all; 1 for a "
                  "DP group of a TP-8 job)")
      ->check(whole_number(1, 1 << 10));
  cmd->add_option("--device", opts->device, "Device profile (default: the cluster node's GPU)")
      ->check([](const std::string& v) {
        return v.empty() ? std::string("empty name; give a profile name or a path") : std::string();
      });
  cmd->add_flag("--json", opts->json, "Print exactly one JSON object on stdout");
  cmd->callback([opts] { run_collective(*opts); });
}

}  // namespace megasim::cli
