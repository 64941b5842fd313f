// `megasim collective --cluster NAME --op all_reduce --gpus N --bytes 8:8G`: an nccl-tests-style
// sweep of one collective on a cluster, each size simulated alone at flow level (and NCCL's
// analytic estimate beside it), so a user can hold it line by line against an nccl-tests log.
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.h"
#include "collective/collective_engine.h"
#include "engine/error.h"
#include "engine/simulator.h"
#include "io/cluster_loader.h"
#include "io/collective_constants_reader.h"
#include "io/json_reader.h"
#include "io/resolve.h"
#include "net/flow_solver.h"
#include "net/topology.h"

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
  std::string device;
  bool json = false;
};

// "8", "64K", "1M", "8G" (binary multiples, as nccl-tests' -b/-e take them).
double parse_size(const std::string& text) {
  std::size_t used = 0;
  double v = 0.0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    throw InputError("--bytes: '" + text + "' is not a size (e.g. 8, 64K, 1M, 8G)");
  }
  std::string suffix = text.substr(used);
  if (!suffix.empty() && (suffix.back() == 'B' || suffix.back() == 'b')) suffix.pop_back();
  double mult = 1.0;
  if (suffix == "K" || suffix == "k") mult = 1024.0;
  else if (suffix == "M" || suffix == "m") mult = 1024.0 * 1024.0;
  else if (suffix == "G" || suffix == "g") mult = 1024.0 * 1024.0 * 1024.0;
  else if (suffix == "T" || suffix == "t") mult = 1024.0 * 1024.0 * 1024.0 * 1024.0;
  else if (!suffix.empty()) throw InputError("--bytes: unknown unit '" + suffix + "' in '" + text + "' (use K, M, G or T)");
  if (!(v > 0.0) || !std::isfinite(v)) throw InputError("--bytes: size '" + text + "' must be positive");
  return v * mult;
}

std::vector<double> parse_sizes(const std::string& spec, double factor) {
  const auto colon = spec.find(':');
  const double lo = parse_size(spec.substr(0, colon));
  const double hi = colon == std::string::npos ? lo : parse_size(spec.substr(colon + 1));
  if (hi < lo) throw InputError("--bytes: the largest size " + spec.substr(colon + 1) + " is below the smallest");
  if (!(factor > 1.0)) throw InputError("--step-factor must be above 1, found " + std::to_string(factor));
  std::vector<double> sizes;
  for (double s = lo; s <= hi * (1.0 + 1e-12) && sizes.size() < 200; s *= factor) sizes.push_back(std::round(s));
  return sizes;
}

void run_collective(const CollectiveOptions& o) {
  const net::ClusterSpec spec = io::load_cluster_ref(o.cluster);
  const std::string device_ref = o.device.empty() ? spec.node.gpu : o.device;
  const auto device_file = io::resolve_data_file(device_ref, io::DataKind::kDevice,
                                                 std::filesystem::current_path(), "--cluster",
                                                 o.device.empty() ? "node.gpu" : "--device");
  const hw::CollectiveConstants constants = io::read_collective_constants(device_file);
  const hw::CollectiveOp op = collective::parse_op(o.op);
  const hw::CollAlgorithm algo = collective::parse_algorithm(o.algo);
  const hw::CollProtocol proto = collective::parse_protocol(o.proto);
  if (o.routing != "ecmp" && o.routing != "spray")
    throw InputError("--routing: expected ecmp or spray, found '" + o.routing + "'");
  const net::Routing routing = o.routing == "ecmp" ? net::Routing::kEcmp : net::Routing::kSpray;
  if (op == hw::CollectiveOp::kSendRecv && o.gpus < 2)
    throw InputError("--gpus: send_recv needs at least 2 GPUs, found " + std::to_string(o.gpus));

  const net::Topology topology(spec);
  std::vector<int> placement;
  if (o.placement == "packed") placement = topology.pack_placement(o.gpus);
  else if (o.placement == "spread") placement = topology.spread_placement(o.gpus);
  else throw InputError("--placement: expected packed or spread, found '" + o.placement + "'");

  Simulator sim;
  net::FlowSolver solver(sim, topology, routing);
  collective::CollectiveEngine engine(sim, topology, solver, constants);
  const double bus_factor = hw::bus_factor(op, o.gpus);

  io::Json rows = io::Json::array();
  std::string text = fmt::format(
      "# megasim collective: {} on {} ({} of {} GPUs, {} placement), {} routing, device {}\n"
      "# time: flow-level simulation of the call alone; model: NCCL's analytic estimate\n"
      "#{:>12} {:>12} {:>6} {:>6} {:>12} {:>8} {:>8} {:>6} {:>7} {:>12}\n"
      "#{:>12} {:>12} {:>6} {:>6} {:>12} {:>8} {:>8} {:>6} {:>7} {:>12}\n",
      o.op, spec.name, o.gpus, spec.gpus, o.placement, o.routing, device_ref, "size", "count", "type",
      "redop", "time", "algbw", "busbw", "algo", "proto", "model", "(B)", "(elements)", "", "", "(us)",
      "(GB/s)", "(GB/s)", "", "", "(us)");
  for (double size : parse_sizes(o.bytes, o.step_factor)) {
    collective::CollectiveCall call;
    call.op = op;
    call.gpus = placement;
    call.bytes = Bytes(size);
    call.algorithm = algo;
    call.protocol = proto;
    const collective::Prediction p = engine.predict(call);
    const double seconds = p.time.to_seconds();
    const double algbw = seconds > 0.0 ? size / seconds * 1e-9 : 0.0;
    const double busbw = algbw * bus_factor;
    const auto count = static_cast<long long>(size / 4.0);
    text += fmt::format(" {:>12.0f} {:>12} {:>6} {:>6} {:>12.2f} {:>8.2f} {:>8.2f} {:>6} {:>7} {:>12.2f}\n",
                        size, count, "float", "sum", p.time.to_us(), algbw, busbw,
                        hw::to_string(p.algorithm), hw::to_string(p.protocol),
                        p.model_time.to_us());
    rows.push_back({{"size_bytes", size}, {"count", count}, {"type", "float"},
                    {"time_us", p.time.to_us()}, {"algbw_gbps", algbw}, {"busbw_gbps", busbw},
                    {"algorithm", hw::to_string(p.algorithm)},
                    {"protocol", hw::to_string(p.protocol)},
                    {"model_time_us", p.model_time.to_us()}, {"flows", p.flows}});
  }
  if (o.json) {
    const io::Json out = {{"cluster", spec.name}, {"op", o.op}, {"gpus", o.gpus},
                          {"placement", o.placement}, {"routing", o.routing}, {"device", device_ref},
                          {"bandwidth_unit", "GB/s (1e9 bytes per second), as nccl-tests"},
                          {"rows", rows}};
    const std::string s = out.dump(2) + "\n";
    std::fwrite(s.data(), 1, s.size(), stdout);
  } else {
    std::fwrite(text.data(), 1, text.size(), stdout);
  }
}

}  // namespace

void add_collective_command(CLI::App& app) {
  auto opts = std::make_shared<CollectiveOptions>();
  CLI::App* cmd = app.add_subcommand("collective", "Sweep one collective over sizes, nccl-tests style");
  cmd->add_option("--cluster", opts->cluster, "Cluster name or file (topologies/)")->required();
  cmd->add_option("--op", opts->op, "all_reduce, all_gather, reduce_scatter, broadcast, all_to_all, send_recv");
  cmd->add_option("--gpus", opts->gpus, "GPUs in the communicator")->check(CLI::Range(1, 1 << 22));
  cmd->add_option("--bytes", opts->bytes, "Size or MIN:MAX, e.g. 8:8G (binary units)");
  cmd->add_option("--step-factor", opts->step_factor, "Multiply the size by this between rows (nccl-tests -f)");
  cmd->add_option("--algo", opts->algo, "ring, tree or auto (NCCL's choice)");
  cmd->add_option("--proto", opts->proto, "ll, ll128, simple or auto");
  cmd->add_option("--routing", opts->routing, "ecmp (flow hash) or spray (ideal)");
  cmd->add_option("--placement", opts->placement, "packed (consecutive servers) or spread");
  cmd->add_option("--device", opts->device, "Device profile (default: the cluster node's GPU)");
  cmd->add_flag("--json", opts->json, "Print exactly one JSON object on stdout");
  cmd->callback([opts] { run_collective(*opts); });
}

}  // namespace megasim::cli
