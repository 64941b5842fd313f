// `calibrate import-nccl-tests`'s fits: an alpha-beta line per imported run, and NCCL's model
// fitted on the cluster the logs ran on (import_scales.cpp), each said in the report.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "calibrate/fit.h"
#include "cli/import_scales.h"

namespace megasim::cli {
namespace {

// A run without a fit is said to be one, with why: its rows stay in the table all the same.
// `run_sizes`: each run's id and how many message sizes it holds, in the order of `runs`.
void report_unfitted(const std::vector<std::pair<std::string, std::size_t>>& run_sizes,
                     const std::vector<hw::CollectiveFit>& fits, io::Json& runs,
                     std::string& text) {
  for (std::size_t i = 0; i < run_sizes.size(); ++i) {
    // Not a structured binding: clang before 16 cannot capture one in the lambda below.
    const std::string& id = run_sizes[i].first;
    const std::size_t sizes = run_sizes[i].second;
    const bool fitted = std::any_of(fits.begin(), fits.end(),
                                    [&](const hw::CollectiveFit& f) { return f.run == id; });
    runs[i]["fitted"] = fitted;
    if (fitted) continue;
    const std::string why = calibrate::no_fit_reason(runs[i].value("ranks", 0), sizes);
    runs[i]["no_fit"] = why;
    text += fmt::format("{}: no alpha-beta fit: {}\n", id, why);
  }
}

}  // namespace

// The alpha-beta fits per run, and NCCL's model fitted on `cluster` ("": not fitted, said so).
void fit_imported(hw::DeviceProfile& p, std::size_t first_new,
                  const std::vector<std::pair<std::string, std::size_t>>& run_sizes,
                  const std::filesystem::path& base_file, const std::string& cluster,
                  io::Json& runs, io::Json& scales, std::string& text) {
  p.collective_fits = calibrate::fit_collectives(p.collective_table);
  for (const auto& f : p.collective_fits) {
    text += fmt::format(
        "fit {} {} ranks / {} nodes ({}): alpha {:.2f} us, bus {:.2f} GB/s, rms "
        "residual {:.1f} % over {} rows\n",
        hw::to_string(f.op), f.ranks, f.nodes, f.run, f.alpha.to_us(),
        f.bus_bandwidth.value() / 1e9, 100.0 * f.rms_relative_residual, f.points);
  }
  report_unfitted(run_sizes, p.collective_fits, runs, text);
  if (cluster.empty()) {
    text +=
        "no --cluster: NCCL's model not fitted to the logs (their measured tables answer "
        "for the shapes they hold; other shapes take the profile's constants)\n";
  } else {
    p.collective_scales = fit_import_scales(p, first_new, base_file, cluster, text, scales);
  }
}

}  // namespace megasim::cli
