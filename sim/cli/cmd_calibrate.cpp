// `megasim calibrate`: the calibration front end.
//   megasim calibrate import-nccl-tests LOG... --device BASE -o FILE
//       parses nccl-tests logs into an imported calibration: BASE's profile plus the rows and
//       the alpha-beta fits per collective, usable as a scenario's `device`;
//   megasim calibrate fit FILE -o OUT
//       refits the GEMM, memory-bound and collective models of a calibration to its tables
//       and prints the residuals; a model that cannot be fitted keeps the input's figures.
//   megasim calibrate -o FILE [--quick] [--resume] [--device BASE] [--timeout S] [--skip ...]
//       measures the local GPUs by running megasim-calibrate-gpu, the CUDA measuring tool, a
//       separate executable so that megasim itself never needs the CUDA libraries. Where the
//       tool was not built (no CUDA toolkit at configure time), this says how to get it and
//       exits 2.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <unistd.h>

#include <fmt/format.h>

#include "calibrate/fit.h"
#include "calibrate/nccl_tests_import.h"
#include "cli/commands.h"
#include "cli/import_scales.h"
#include "engine/error.h"
#include "io/device_profile_loader.h"
#include "io/gemm_shapes.h"
#include "io/inputs.h"
#include "io/output.h"
#include "io/resolve.h"
#include "plan/shapes.h"
#include "reports/shapes_report.h"

namespace megasim::cli {
namespace {

struct ImportOpts {
  std::vector<std::string> logs;
  std::string device;
  std::string output;
  std::string name;
  std::string op, algorithm, protocol;
  int nodes = 0;
  int ranks = 0;
  std::string cluster;  // the fabric the logs ran on: NCCL's model is fitted on it
  bool json = false;
};

struct MeasureOpts {
  std::string output, device, name, scenario;
  bool quick = false, resume = false;
  double timeout_s = 0.0;
  std::vector<std::string> skip;
};

struct ShapesOpts {
  std::string scenario;
  std::optional<std::string> output;  // set when -o is given, even empty
  std::vector<std::string> overrides;
  bool json = false;
};

void run_shapes(const ShapesOpts& o) {
  io::InputOptions io_options;
  io_options.run_level = false;
  io::FilesRead read;
  const io::Inputs inputs =
      io::load_inputs(io::load_scenario(o.scenario, o.overrides, nullptr, &read), io_options, &read);
  io::OutputFiles files({}, &read);
  if (o.output) files.add("-o", *o.output);
  const auto shapes = plan::calibration_gemm_shapes(inputs);
  const std::string doc = io::json_file_text(
      io::gemm_shapes_to_json(shapes, "megasim calibrate shapes " + o.scenario), 1);
  files.set("-o", doc);
  std::string text = o.json ? doc : reports::gemm_shapes_text(shapes, inputs.scenario.name);
  if (o.output && !o.json) text += "wrote " + *o.output + "\n";
  files.commit(text);
}

struct FitOpts {
  std::string input;
  std::string output;
  bool json = false;
};

std::filesystem::path device_file(const std::string& ref, const std::string& option) {
  return io::resolve_data_file(ref, io::DataKind::kDevice, io::working_dir(), option, "");
}

// The report of a command that writes `files`: JSON or text, on stdout before the files are
// renamed into place (io/output.h), unless -o - takes stdout.
void emit(io::OutputFiles& files, const io::Json& result, const std::string& text, bool json) {
  files.commit(json ? io::json_file_text(result, 2) : text);
}

// What a calibration writes, read back as megasim reads a profile: a fit or an import whose
// figures the loader refuses (a bandwidth or efficiency below its floor, a size past its
// bound) is refused here, before the output is written, instead of leaving a file (or
// replacing a good one) that no later command can load.
std::string loadable_text(const io::Json& doc, const std::string& output,
                          const std::string& command) {
  const std::string text = io::json_file_text(doc, 2);
  const std::string origin = command + "'s profile";
  try {
    io::parse_device_profile(io::parse_json_text(text, origin), origin);
  } catch (const InputError& e) {
    throw InputError(
        fmt::format("{}: nothing written, as megasim could not load it: {}", output, e.what()));
  }
  return text;
}

// The import's options from the command line's, each checked.
calibrate::ImportOptions import_options(const ImportOpts& o) {
  calibrate::ImportOptions options;
  if (!o.op.empty()) {
    options.op = calibrate::op_from_test_name(o.op);
    if (!options.op) {
      throw InputError("--op: '" + o.op +
                       "' is not a collective megasim models (all_reduce, all_gather, "
                       "reduce_scatter, alltoall or all_to_all, sendrecv or send_recv, broadcast, "
                       "reduce)");
    }
  }
  check_nccl_labels(o.algorithm, o.protocol);
  options.algorithm = o.algorithm;
  options.protocol = o.protocol;
  if (o.nodes > 0) options.nodes = o.nodes;
  if (o.ranks > 0) options.ranks = o.ranks;
  return options;
}

void run_import(const ImportOpts& o) {
  const calibrate::ImportOptions options = import_options(o);
  const auto base_file = device_file(o.device, "--device");
  check_logs_once(o.logs);
  std::vector<std::filesystem::path> inputs(o.logs.begin(), o.logs.end());
  inputs.push_back(base_file);
  // The fabric the logs ran on is read too: -o naming it replaced the topology with the
  // calibration, exit 0, until 2026-12-05.
  if (!o.cluster.empty()) {
    inputs.push_back(io::resolve_data_file(o.cluster, io::DataKind::kCluster, io::working_dir(),
                                           "--cluster", "cluster"));
  }
  io::OutputFiles files(inputs);
  files.add("-o", o.output);
  if (o.json) files.refuse_beside_stdout("--json");
  const io::LoadedDeviceProfile base = io::load_device_profile(base_file);
  hw::DeviceProfile p = base.profile;
  std::vector<std::string> devices;
  io::Json runs = io::Json::array();
  std::vector<std::pair<std::string, std::size_t>> run_sizes;  // (run id, distinct sizes)
  std::string text;
  for (const auto& log : o.logs) {
    for (const auto& run : calibrate::import_nccl_tests_file(log, options)) {
      check_not_in_base(run, base.profile, o.device);
      p.collective_table.insert(p.collective_table.end(), run.rows.begin(), run.rows.end());
      if (p.collective_table.size() > calibrate::kMaxImportedRows) {
        throw InputError(
            fmt::format("{}: with the {} rows before it ({} of them the --device profile's), the "
                        "calibration would hold more than {} measurements, the most it may hold",
                        log, p.collective_table.size() - run.rows.size(),
                        base.profile.collective_table.size(), calibrate::kMaxImportedRows));
      }
      check_device_family(log, run.devices, base.profile, o.device);
      for (const auto& d : run.devices) {
        if (std::find(devices.begin(), devices.end(), d) == devices.end()) devices.push_back(d);
      }
      std::set<double> sizes;
      for (const auto& row : run.rows) sizes.insert(row.size.value());
      run_sizes.emplace_back(run.rows.empty() ? std::string() : run.rows.front().run, sizes.size());
      report_run(log, run, runs, text);
    }
  }
  report_overlaps(p.collective_table, base.profile.collective_table.size(), runs, text);
  p.kind = hw::ProfileKind::kImported;
  p.name = o.name.empty() ? base.profile.name + "-nccl-tests" : o.name;
  p.base = base.profile.base.empty() ? base.profile.name : base.profile.base;
  p.source = base.profile.source + " Collective measurements imported from nccl-tests logs: " +
             [&] {
               std::string s;
               for (const auto& l : o.logs) s += (s.empty() ? "" : ", ") + l;
               return s;
             }() + ".";
  p.measurement = import_measurement(base.profile.measurement, devices);
  io::Json scales = io::Json::array();
  fit_imported(p, base.profile.collective_table.size(), run_sizes, base_file, o.cluster, runs,
               scales, text);
  io::Json doc = io::device_profile_to_json(p);
  const io::Json fits = doc.value("collective_fits", io::Json::array());
  // The base profile's collective constants stay as they were, for the collective module.
  if (!base.collective.is_null()) doc["collective"] = base.collective;
  files.set("-o", loadable_text(doc, o.output, "import-nccl-tests"));
  text += fmt::format("wrote {} (kind imported, {} collective rows)\n", o.output,
                      p.collective_table.size());
  emit(files, {{"output", o.output}, {"runs", runs}, {"fits", fits}, {"scales", scales}}, text,
       o.json);
}

void run_fit(const FitOpts& o) {
  const auto input = device_file(o.input, "calibrate fit");
  io::OutputFiles files({input});
  files.add("-o", o.output);
  if (o.json) files.refuse_beside_stdout("--json");
  const io::LoadedDeviceProfile in = io::load_device_profile(input);
  hw::DeviceProfile p = in.profile;
  if (p.gemm_table.empty() && p.memory_table.empty() && p.collective_table.empty() &&
      p.attention_table.empty() && p.power_table.empty()) {
    throw InputError(o.input +
                     ": has no measured tables (gemm_table, attention_table, "
                     "memory_table, power_table, collective_table) to fit");
  }
  // A refused fit keeps the input's figures, the others are written (until 2026-12-03: none).
  std::vector<std::string> failed;
  int fitted = 0;
  const auto lines = calibrate::refit_profile(p, &failed, &fitted);
  if (fitted == 0 && !failed.empty()) {
    std::string why;
    for (const auto& f : failed) why += (why.empty() ? "" : "; ") + f;
    throw InputError(o.input + ": no model could be fitted: " + why);
  }
  for (const auto& f : failed)
    std::fprintf(stderr, "megasim: warning: calibrate fit: %s; kept as the input has it\n",
                 f.c_str());
  io::Json doc = io::device_profile_to_json(p);
  if (!in.collective.is_null()) doc["collective"] = in.collective;
  files.set("-o", loadable_text(doc, o.output, "calibrate fit"));
  std::string text;
  for (const auto& l : lines) text += l + "\n";
  for (const auto& f : failed) text += "not fitted, kept as the input has it: " + f + "\n";
  // NCCL's model's scales were fitted at import, on the cluster each log ran on, which the
  // profile names but fit does not load: kept, and said (a table edited by hand left them
  // stale without a word until 2026-12-06).
  std::string scales_kept;
  if (!p.collective_scales.empty()) {
    scales_kept = fmt::format(
        "kept {} scale fit(s) of NCCL's model as imported (fit does not refit them; "
        "import-nccl-tests --cluster refits them from the logs)",
        p.collective_scales.size());
    text += scales_kept + "\n";
  }
  text += "wrote " + o.output + "\n";
  io::Json report = {{"output", o.output}, {"fits", lines}, {"not_fitted", failed}};
  if (!scales_kept.empty()) report["collective_scales_kept"] = scales_kept;
  emit(files, report, text, o.json);
}

// Present when NVIDIA's kernel driver is loaded: its /proc entry, or, where a sandbox's /proc
// lacks it (gVisor), the control device it creates.
constexpr const char* kNvidiaDriver = "/proc/driver/nvidia/version";
constexpr const char* kNvidiaControl = "/dev/nvidiactl";

// The measuring tool: beside this executable (installed), else where the build put it.
std::string find_gpu_tool() {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const auto beside = self.parent_path() / "megasim-calibrate-gpu";
    if (std::filesystem::exists(beside)) return beside.string();
  }
#ifdef MEGASIM_GPU_TOOL
  if (std::filesystem::exists(MEGASIM_GPU_TOOL)) return MEGASIM_GPU_TOOL;
#endif
  return "";
}

void run_measure(const MeasureOpts& o) {
  if (o.output.empty()) throw InputError("calibrate: -o/--output FILE is required to measure");
  // The scenario's shapes are worked out before the tool is looked for: a bad scenario is an
  // input error on any machine.
  std::string shapes_doc, shapes_file;
  io::FilesRead read;
  if (!o.scenario.empty()) {
    io::InputOptions io_options;
    io_options.run_level = false;
    const io::Inputs inputs =
        io::load_inputs(io::load_scenario(o.scenario, {}, nullptr, &read), io_options, &read);
    shapes_doc =
        io::json_file_text(io::gemm_shapes_to_json(plan::calibration_gemm_shapes(inputs),
                                                   "megasim calibrate --scenario " + o.scenario),
                           1);
  }
  // The tool writes the file; its target is checked here like any other output's, and so is
  // the shapes file written beside it (it replaced the scenario it came from when the
  // scenario was named like it).
  io::OutputFiles targets({}, &read);
  targets.add("-o", o.output);
  if (!shapes_doc.empty()) {
    shapes_file = o.output + ".shapes.json";
    targets.add("-o (its .shapes.json)", shapes_file);
    targets.set("-o (its .shapes.json)", shapes_doc);
  }
  // Without NVIDIA's kernel driver CUDA can only say that the "driver version is
  // insufficient"; say what is missing, and what works without a GPU.
  const std::string without_gpu =
      "Without one, bring measurements from your cluster with `megasim calibrate "
      "import-nccl-tests LOG... --device PROFILE -o FILE`, or use a shipped profile from "
      "calibrate/profiles/ (a100-sxm4-80gb, a100-sxm4-40gb, h100-sxm5-80gb, h200-sxm-141gb) as a scenario's "
      "device";
  if (!std::filesystem::exists(kNvidiaDriver) && !std::filesystem::exists(kNvidiaControl)) {
    throw InputError(std::string("calibration measures the local GPUs and needs an NVIDIA GPU "
                                 "with its driver, which this machine lacks (no ") +
                     kNvidiaDriver + ", no " + kNvidiaControl + "). " + without_gpu);
  }
  const std::string tool = find_gpu_tool();
  if (tool.empty()) {
    throw InputError(
        "the CUDA measuring tool megasim-calibrate-gpu is not part of this build: configure "
        "megasim on a machine with the CUDA toolkit (nvcc, cuBLASLt, cuDNN 9, NCCL; NVML for "
        "power) with -DMEGASIM_CUDA=ON and build the target megasim-calibrate-gpu. " +
        without_gpu);
  }
  // The shapes beside the output, so that a --resume of the same calibration finds them.
  targets.commit();
  std::vector<std::string> args = {tool, "-o", o.output};
  if (!o.device.empty()) args.insert(args.end(), {"--device", o.device});
  if (!o.name.empty()) args.insert(args.end(), {"--name", o.name});
  if (o.quick) args.push_back("--quick");
  if (o.resume) args.push_back("--resume");
  if (o.timeout_s > 0.0) args.insert(args.end(), {"--timeout", fmt::format("{}", o.timeout_s)});
  for (const auto& s : o.skip) args.insert(args.end(), {"--skip", s});
  if (!shapes_file.empty()) args.insert(args.end(), {"--shapes", shapes_file});
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  execv(tool.c_str(), argv.data());
  throw InputError("cannot run " + tool + ": " + std::strerror(errno));
}

}  // namespace

void add_calibrate_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "calibrate",
      "Calibration: measure the local GPUs (cuBLASLt GEMMs bf16/fp16/fp8; attention forward "
      "and backward, fused through cuDNN's SDPA graph with causal and sliding-window masks, "
      "and unfused as batched GEMMs plus softmax; memory-bound kernels; NCCL collectives with "
      "algorithm/protocol forced; compute/communication interference; NVML board power) with "
      "the CUDA measuring tool; import nccl-tests logs; fit the cost models to measured "
      "tables");
  auto m = std::make_shared<MeasureOpts>();
  cmd->add_option("-o,--output", m->output, "Measure the local GPUs into this calibration JSON");
  cmd->add_option("--device", m->device,
                  "Datasheet profile to start from (default: chosen by GPU name)");
  cmd->add_option("--name", m->name, "Name of the measured profile (default BASE-measured)");
  cmd->add_flag("--quick", m->quick, "Small grid and fewer repeats (minutes on one node)");
  cmd->add_flag("--resume", m->resume, "Keep the sections already in the output; measure the rest");
  cmd->add_option("--timeout", m->timeout_s, "Seconds of timing per item before it stops")
      ->check(positive());
  cmd->add_option("--scenario", m->scenario,
                  "Also measure exactly the GEMM shapes this scenario's plan runs");
  cmd->add_option("--skip", m->skip,
                  "Sections to skip: gemm attention memory nccl interference power")
      ->check(CLI::IsMember({"gemm", "attention", "memory", "nccl", "interference", "power"}));
  cmd->callback([cmd, m] {
    if (!cmd->get_subcommands().empty()) return;
    run_measure(*m);
  });

  auto io_opts = std::make_shared<ImportOpts>();
  auto shapes_opts = std::make_shared<ShapesOpts>();
  CLI::App* shp = cmd->add_subcommand(
      "shapes", "List the distinct GEMM shapes a scenario runs (the CUDA tool's --shapes input)");
  shp->add_option("scenario", shapes_opts->scenario, "Scenario file")->required();
  shp->add_option("--set", shapes_opts->overrides, "Override a scenario key; repeatable");
  shp->add_option("-o,--output", shapes_opts->output, "Write the shape list to this file");
  shp->add_flag("--json", shapes_opts->json, "Print exactly one JSON object on stdout");
  shp->callback([shapes_opts] { run_shapes(*shapes_opts); });

  CLI::App* imp = cmd->add_subcommand(
      "import-nccl-tests",
      "Parse nccl-tests logs (all_reduce_perf and siblings; single- and multi-node) into an "
      "imported calibration with alpha-beta fits per collective");
  imp->add_option("logs", io_opts->logs, "nccl-tests output files")->required()->check(
      CLI::ExistingFile);
  imp->add_option("--device", io_opts->device,
                  "Base device profile (name in calibrate/profiles/ or a path)")
      ->required();
  imp->add_option("-o,--output", io_opts->output, "Calibration JSON to write")->required();
  imp->add_option("--name", io_opts->name, "Name of the new profile (default BASE-nccl-tests)");
  imp->add_option("--op", io_opts->op,
                  "Collective of logs that do not say (all_reduce, all_gather, reduce_scatter, "
                  "alltoall or all_to_all, sendrecv or send_recv, broadcast, reduce)");
  imp->add_option("--algorithm", io_opts->algorithm,
                  "Label rows with the NCCL_ALGO the run forced (e.g. Ring, Tree, NVLS)");
  imp->add_option("--protocol", io_opts->protocol,
                  "Label rows with the NCCL_PROTO the run forced (LL, LL128, Simple)");
  imp->add_option("--nodes", io_opts->nodes, "Node count, when the log's rank lines omit hosts")
      ->check(whole_number(1, 1 << 20));
  imp->add_option("--cluster", io_opts->cluster,
                  "Cluster the logs ran on (topologies/): fit NCCL's model to them there");
  imp->add_option("--ranks", io_opts->ranks,
                  "Rank count, for a log without device lines (checked against them and "
                  "busbw/algbw when the log has them)")
      ->check(whole_number(1, 1 << 20));
  imp->add_flag("--json", io_opts->json, "Print exactly one JSON object on stdout");
  imp->callback([io_opts] { run_import(*io_opts); });

  auto fit_opts = std::make_shared<FitOpts>();
  CLI::App* fit = cmd->add_subcommand(
      "fit", "Refit GEMM (tile/wave quantisation x efficiency per size class), fused attention "
             "(efficiency per pass), memory-bound, board power against activity and alpha-beta "
             "collective models to a calibration's tables; print residuals");
  fit->add_option("calibration", fit_opts->input, "Calibration JSON with measured tables")
      ->required();
  fit->add_option("-o,--output", fit_opts->output, "Refitted calibration JSON to write")
      ->required();
  fit->add_flag("--json", fit_opts->json, "Print exactly one JSON object on stdout");
  fit->callback([fit_opts] { run_fit(*fit_opts); });
}

}  // namespace megasim::cli
