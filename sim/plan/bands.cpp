#include "plan/bands.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>
#include <string_view>

#include <fmt/format.h>

#include "engine/error.h"
#include "hw/gpu_part.h"
#include "io/json_reader.h"

namespace megasim::plan {
namespace {

constexpr double kScaleFactor = 8.0;
constexpr std::size_t kMinBasis = 3;
// The last fallback borrows only from families validated within the bound per
// framework family (issue 13: MAPE ≤ 8 %), measured as the mean |step-time residual| of the
// family's rows: a family megasim does not yet predict lends no band to another.
constexpr double kValidatedFamily = 0.08;

// Families whose rows' mean |residual| is within kValidatedFamily, judged without the source
// being predicted: a source's own rows never make its family one that lends.
std::set<std::string> validated_families(const std::vector<ResidualRow>& rows,
                                         const std::string& exclude_source) {
  std::map<std::string, std::pair<double, int>> sum;
  for (const auto& r : rows) {
    if (r.source == exclude_source) continue;
    sum[r.family].first += std::fabs(r.residual);
    ++sum[r.family].second;
  }
  std::set<std::string> out;
  for (const auto& [family, s] : sum) {
    if (s.first / s.second <= kValidatedFamily) out.insert(family);
  }
  return out;
}

bool time_metric(const std::string& metric) { return metric.rfind("iteration_time_s", 0) == 0; }

}  // namespace

std::string source_of_run(const std::string& run) { return run.substr(0, run.find('-')); }

double step_time_residual(const std::string& metric, double predicted, double published) {
  // A throughput predicted (1 + e) times too high means a step (1 + e) times too short.
  return time_metric(metric) ? predicted / published - 1.0 : published / predicted - 1.0;
}

Band band_for(const std::vector<ResidualRow>& rows, const std::string& family, std::int64_t gpus,
              const std::string& exclude_source) {
  std::vector<const ResidualRow*> pool, family_rows, near;
  const std::set<std::string> validated = validated_families(rows, exclude_source);
  for (const auto& r : rows) {
    if (r.source == exclude_source) continue;
    if (validated.count(r.family) != 0) pool.push_back(&r);
    if (r.family != family) continue;
    family_rows.push_back(&r);
    const double ratio = static_cast<double>(r.gpus) / static_cast<double>(std::max<std::int64_t>(1, gpus));
    if (ratio <= kScaleFactor && ratio >= 1.0 / kScaleFactor) near.push_back(&r);
  }
  Band b;
  const std::vector<const ResidualRow*>* basis = &near;
  b.rule = family + " rows within 8x the GPUs";
  if (near.size() < kMinBasis) {
    basis = &family_rows;
    b.rule = family + " rows at any scale";
  }
  if (basis->size() < kMinBasis) {
    basis = &pool;
    b.rule = "rows of the families whose mean error is within 8 %";
  }
  // Fewer rows than the rules above ask for draw no band: one row's residual alone is a band of
  // no width, which holds nothing (a validation of a few scenarios scored such bands as missing
  // every row), and two gave one as narrow as their difference (0.05 % in a reviewer's trial,
  // 2026-12-07; the fallback took two until then).
  if (basis->size() < kMinBasis) return b;
  b.low = b.high = basis->front()->residual;
  for (const ResidualRow* r : *basis) {
    b.low = std::min(b.low, r->residual);
    b.high = std::max(b.high, r->residual);
    b.basis.push_back(r->scenario);
  }
  return b;
}

std::string gpu_family(const hw::DeviceProfile& device) {
  return hw::gpu_part(hw::profile_part_name(device)).family;
}

namespace {

// "none ran within 8x its GPUs: the nearest on 256, 48x fewer" where every row of the basis ran
// more than kScaleFactor times fewer or more GPUs than the prediction; "" where one is near.
std::string scale_caveat(const std::vector<const ResidualRow*>& basis, std::int64_t gpus) {
  const double g = static_cast<double>(std::max<std::int64_t>(1, gpus));
  const ResidualRow* nearest = nullptr;
  double nearest_factor = 0;
  for (const ResidualRow* r : basis) {
    const double n = static_cast<double>(r->gpus);
    const double factor = std::max(n / g, g / n);
    // The first of equally near rows, so the words follow the rows' order only.
    if (nearest == nullptr || factor < nearest_factor) {
      nearest = r;
      nearest_factor = factor;
    }
  }
  if (nearest == nullptr || nearest_factor <= kScaleFactor) return "";
  // Two decimals under 10x, so a factor just past 8 does not read as 8.
  const std::string factor = nearest_factor < 10.0 ? fmt::format("{:.2f}", nearest_factor)
                                                   : fmt::format("{:.0f}", nearest_factor);
  return fmt::format("none ran within 8x its GPUs: the nearest on {}, {}x {}", nearest->gpus,
                     factor, nearest->gpus < gpus ? "fewer" : "more");
}

}  // namespace

std::vector<std::string> band_caveats(const std::vector<ResidualRow>& rows, const Band& b,
                                      const BandTarget& target) {
  std::vector<std::string> out;
  // No published row runs FP8 GEMMs: the band borrows the 16-bit rows' residuals.
  if (target.fp8) out.push_back("none runs FP8");
  if (b.basis.empty()) return out;
  const std::set<std::string> names(b.basis.begin(), b.basis.end());
  std::vector<const ResidualRow*> basis;
  for (const ResidualRow& r : rows) {
    if (names.count(r.scenario) != 0) basis.push_back(&r);
  }
  // A band drawn at any scale holds the family's errors where it was run, not how they grow
  // with the job (issue 12: they grew with DP on MegaScale's Table 2).
  if (std::string s = scale_caveat(basis, target.gpus); !s.empty()) out.push_back(std::move(s));
  if (target.gpu.empty()) return out;
  // A row whose GPU is not known may have run on it.
  const bool ran_on_it = std::any_of(basis.begin(), basis.end(), [&](const ResidualRow* r) {
    return r->gpu.empty() || r->gpu == target.gpu;
  });
  if (ran_on_it) return out;
  std::string upper = target.gpu;
  std::transform(upper.begin(), upper.end(), upper.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  out.push_back("none ran on " + upper + " GPUs");
  return out;
}

std::vector<ResidualRow> load_residuals(const std::filesystem::path& file, io::FilesRead* read) {
  const io::Json doc = io::parse_json_file(file, read);
  if (!doc.is_object() || !doc.contains("rows") || !doc["rows"].is_array())
    throw InputError(file.string() + ": rows: not the output of `megasim validate --json`");
  std::vector<ResidualRow> out;
  const auto& rows = doc["rows"];
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    const std::string at = fmt::format("{}: rows[{}]", file.string(), i);
    if (!r.is_object() || !r.contains("step_time_residual") || !r.contains("gpus") ||
        !r.contains("family") || !r.contains("source") || !r.contains("scenario"))
      throw InputError(at +
                       ": a row lacks its residual, GPUs, family or source; "
                       "regenerate it with scripts/update-goldens.sh");
    for (const char* key : {"scenario", "source", "family"}) {
      if (!r[key].is_string()) throw InputError(fmt::format("{}.{}: not a string", at, key));
    }
    if (!r["gpus"].is_number_integer() || r["gpus"].get<std::int64_t>() < 1)
      throw InputError(at + ".gpus: not a whole number of GPUs");
    if (!r["step_time_residual"].is_number())
      throw InputError(at + ".step_time_residual: not a number");
    // r = predicted / true − 1: a true step time exists only for r > −1.
    const double residual = r["step_time_residual"].get<double>();
    if (!std::isfinite(residual) || residual <= -1.0) {
      throw InputError(
          fmt::format("{}.step_time_residual: {} is not above -1 (r = predicted / "
                      "published step time - 1)",
                      at, residual));
    }
    // A "context" row (a published figure of unstated convention) lends no band.
    if (r.contains("role") && r["role"] == "context") continue;
    // The GPU family, where the file gives it (written since 2026-12-07).
    std::string gpu;
    if (r.contains("gpu")) {
      if (!r["gpu"].is_string()) throw InputError(at + ".gpu: not a string");
      gpu = r["gpu"].get<std::string>();
    }
    out.push_back(ResidualRow{r["scenario"].get<std::string>(), r["source"].get<std::string>(),
                              r["family"].get<std::string>(), r["gpus"].get<std::int64_t>(),
                              residual, gpu});
  }
  return out;
}

namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

std::string system_family(const io::Scenario& s) {
  const std::string& preset = s.optimizations.preset;
  // The switches the scenario turns on (the megatron-lm preset runs none), not the system as
  // run: a model with a parallel block or a window of its own runs them on any preset (a
  // reviewer's find). Not dp_overlap: PyTorch DDP's bucketed all-reduce beside the backward,
  // which SC'21's rows ran with Megatron-LM of 2021, overlaps DP as MegaScale's step 5 does.
  bool megascale_part = false;
  for (std::size_t i = 0; i < step::kSwitches.size(); ++i) {
    if (std::string_view(step::kSwitches[i].key) == "dp_overlap") continue;
    megascale_part = megascale_part || s.optimizations.overrides.switches[i].value_or(false);
  }
  // The same parts written as the plan's optimizer or the attention kernel (LAMB, FlashAttention-2)
  // run the same system: their rows are MegaScale's too (a user's trial: one step, two bands).
  const auto& attention = s.optimizations.overrides.attention;
  megascale_part = megascale_part || s.plan.optimizer == workload::Optimizer::kLamb ||
                   (attention && *attention == step::AttentionKernel::kFlashV2);
  return preset == "megatron-lm" && megascale_part ? "megascale" : preset;
}

std::optional<BandCheck> check_band(const std::vector<ResidualRow>& rows, const ResidualRow& r) {
  const Band b = band_for(rows, r.family, r.gpus, r.source);
  if (b.basis.empty()) return std::nullopt;
  // The truth lies in the band when this row's residual does.
  return BandCheck{r.residual >= b.low && r.residual <= b.high, b.high - b.low,
                   1.0 / (1.0 + b.low) - 1.0 / (1.0 + b.high),
                   r.measurement.empty() ? r.scenario : r.measurement};
}

Coverage coverage_of(const std::vector<BandCheck>& checks) {
  Coverage c;
  std::vector<double> widths, step_widths;
  std::map<std::string, std::pair<int, int>> measured;  // rows inside, rows
  for (const BandCheck& k : checks) {
    ++c.rows;
    if (k.covered) ++c.covered;
    widths.push_back(k.width);
    step_widths.push_back(k.step_width);
    auto& [inside, all] = measured[k.measurement];
    inside += k.covered ? 1 : 0;
    ++all;
  }
  c.measurements = measured.size();
  for (const auto& [name, m] : measured) c.measurements_covered += double(m.first) / m.second;
  c.median_width = median(widths);
  c.median_step_width = median(step_widths);
  return c;
}

Coverage band_coverage(const std::vector<ResidualRow>& rows) {
  std::vector<BandCheck> checks;
  for (const auto& r : rows) {
    if (auto k = check_band(rows, r)) checks.push_back(*k);
  }
  return coverage_of(checks);
}

}  // namespace megasim::plan
