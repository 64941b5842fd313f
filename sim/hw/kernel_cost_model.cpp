#include "hw/kernel_cost_model.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

namespace megasim::hw {
namespace {

// Neighbours used for the log-space interpolation of the measured/model ratio.
constexpr std::size_t kInterpolationNeighbours = 4;

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

double log2d(std::int64_t v) { return std::log2(static_cast<double>(std::max<std::int64_t>(v, 1))); }

// The lower-ranked source of two: a result is only as measured as its weakest part.
CostSource weakest(CostSource a, CostSource b) {
  return static_cast<int>(a) > static_cast<int>(b) ? a : b;
}

// The accumulation is not compared: each table holds one (gemm_key), and a fast-accumulation
// GEMM looked up among split rows takes the split measurement of its shape.
bool same_shape(const GemmShape& a, const GemmShape& b) {
  return a.m == b.m && a.n == b.n && a.k == b.k && a.batch == b.batch && a.dtype == b.dtype &&
         a.transpose_a == b.transpose_a && a.transpose_b == b.transpose_b;
}

// The table a GEMM's rows are in: its dtype, and for FP8 its accumulation.
std::pair<DType, bool> gemm_key(const GemmShape& g) {
  return {g.dtype, g.fast_accum};
}

bool same_shape(const AttentionShape& a, const AttentionShape& b) {
  return a.batch == b.batch && a.heads == b.heads && a.kv_heads == b.kv_heads && a.seq == b.seq &&
         a.cp == b.cp &&
         a.head_dim == b.head_dim && a.causal == b.causal && a.window == b.window &&
         a.backward == b.backward && a.fused == b.fused && a.flash_version == b.flash_version &&
         a.dtype == b.dtype;
}

std::array<double, 3> gemm_at(const GemmShape& g) {
  return {log2d(g.m), log2d(g.n), log2d(g.k * g.batch)};
}

std::array<double, 2> attention_at(const AttentionShape& a) {
  return {log2d(a.batch * a.heads), log2d(a.seq)};
}

}  // namespace

template <std::size_t N>
void KernelCostModel::RatioTable<N>::add(const std::array<double, N>& at, double log_ratio,
                                         std::size_t index) {
  if (rows.empty()) {
    lo = at;
    hi = at;
  }
  for (std::size_t i = 0; i < N; ++i) {
    lo[i] = std::min(lo[i], at[i]);
    hi[i] = std::max(hi[i], at[i]);
  }
  rows.push_back({at, log_ratio, index});
}

template <std::size_t N>
std::optional<double> KernelCostModel::RatioTable<N>::log_ratio_at(
    const std::array<double, N>& q) const {
  for (std::size_t i = 0; i < N; ++i) {
    if (q[i] < lo[i] || q[i] > hi[i]) return std::nullopt;
  }
  std::vector<std::pair<double, double>> near;  // (distance², log ratio)
  near.reserve(rows.size());
  for (const Row& r : rows) {
    double d2 = 0.0;
    for (std::size_t i = 0; i < N; ++i) d2 += (r.at[i] - q[i]) * (r.at[i] - q[i]);
    near.emplace_back(d2, r.log_ratio);
  }
  const std::size_t n = std::min(kInterpolationNeighbours, near.size());
  std::partial_sort(near.begin(), near.begin() + static_cast<std::ptrdiff_t>(n), near.end());
  double wsum = 0.0, acc = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    // d² > 0 unless only what the coordinates leave out differs (a GEMM's layout, attention's
    // KV heads); such a row is as good as exact.
    const double w = 1.0 / std::max(near[i].first, 1e-12);
    wsum += w;
    acc += w * near[i].second;
  }
  return acc / wsum;
}

KernelCostModel::AttentionKey KernelCostModel::attention_key(const AttentionShape& a) {
  const std::int64_t group = a.heads / std::max<std::int64_t>(a.kv_heads, 1);
  return {a.backward, a.dtype, a.head_dim, a.causal, a.window, group};
}

const char* to_string(CostSource s) {
  switch (s) {
    case CostSource::kMeasured: return "measured";
    case CostSource::kFitted: return "fitted";
    case CostSource::kRoofline: return "roofline";
  }
  return "?";
}

void CostShare::add(const KernelCost& c) {
  switch (c.source) {
    case CostSource::kMeasured: measured += c.time; break;
    case CostSource::kFitted: fitted += c.time; break;
    case CostSource::kRoofline: roofline += c.time; break;
  }
}

double CostShare::measured_fraction() const {
  const Time t = total();
  return t > Time::zero() ? measured.to_seconds() / t.to_seconds() : 0.0;
}

std::string provenance(const DeviceProfile& p) {
  std::string s = std::string(to_string(p.kind)) + " profile " + p.name;
  if (p.kind == ProfileKind::kDatasheet) {
    return s + ": no measured calibration; kernel costs from datasheet peaks and the cited "
               "efficiencies in the profile";
  }
  if (p.measurement) {
    const auto& m = *p.measurement;
    s += ": " + m.tool + ", " + m.date;
    if (!m.device_name.empty()) s += ", " + m.device_name;
    if (!m.cuda.empty()) s += ", CUDA " + m.cuda;
    if (!m.nccl.empty()) s += ", NCCL " + m.nccl;
  }
  return s + "; " + std::to_string(p.gemm_table.size()) + " GEMM, " +
         std::to_string(p.attention_table.size()) + " fused-attention, " +
         std::to_string(p.memory_table.size()) + " memory-bound, " +
         std::to_string(p.collective_table.size()) + " collective measurements";
}

namespace {

// The profile at the figures its tables were measured with, its tables left out; nullopt where
// the figures were not edited (or there is no table whose ratios they would anchor).
std::optional<DeviceProfile> measured_profile(const DeviceProfile& p) {
  if (!p.measured_with || *p.measured_with == p.figures()) return std::nullopt;
  if (p.gemm_table.empty() && p.attention_table.empty() && p.memory_table.empty()) {
    return std::nullopt;
  }
  DeviceProfile m = p;
  m.set_figures(*p.measured_with);
  m.measured_with.reset();
  m.gemm_table.clear();
  m.attention_table.clear();
  m.memory_table.clear();
  return m;
}

}  // namespace

KernelCostModel::KernelCostModel(DeviceProfile profile) : profile_(std::move(profile)) {
  if (profile_.gemm.tiles.empty()) profile_.gemm.tiles.push_back(GemmTile{});
  if (auto m = measured_profile(profile_)) {
    anchor_ = std::make_shared<const KernelCostModel>(std::move(*m));
  }
  // Each row's ratio against the model at the figures it was measured with: an edit of the
  // figures then moves the rows and the shapes between them alike, by the model (its ratios,
  // formed against the edited model, moved otherwise than the model did: a faster peak slowed
  // TE's ring pieces on the measured H200 profile until 2026-12-07).
  const KernelCostModel& at = anchor();
  for (std::size_t idx = 0; idx < profile_.gemm_table.size(); ++idx) {
    const auto& r = profile_.gemm_table[idx];
    const double ratio = r.time.to_seconds() / at.model_gemm_time(r.shape).to_seconds();
    gemm_tables_[gemm_key(r.shape)].add(gemm_at(r.shape), std::log(ratio), idx);
  }
  for (std::size_t idx = 0; idx < profile_.attention_table.size(); ++idx) {
    const auto& r = profile_.attention_table[idx];
    const double ratio = r.time.to_seconds() / at.model_attention_time(r.shape).to_seconds();
    attention_tables_[attention_key(r.shape)].add(attention_at(r.shape), std::log(ratio), idx);
  }
}

CostSource KernelCostModel::model_source(bool fitted) const {
  return fitted ? CostSource::kFitted : CostSource::kRoofline;
}

Time KernelCostModel::edited(Time measured, Time model, Time anchored) const {
  if (!anchor_ || anchored <= Time::zero()) return measured;
  return measured * (model.to_seconds() / anchored.to_seconds());
}

KernelCost KernelCostModel::cost(const KernelShape& shape) const {
  if (const auto* g = std::get_if<GemmShape>(&shape)) return gemm(*g);
  if (const auto* a = std::get_if<AttentionShape>(&shape)) return attention(*a);
  return memory(std::get<MemoryShape>(shape));
}

Time KernelCostModel::model_memory_time(Bytes moved) const {
  const BytesPerSec bw = profile_.hbm_bandwidth * profile_.memory_model.bandwidth_efficiency;
  return transfer_time(moved, bw);
}

Time KernelCostModel::model_gemm_compute_time(const GemmShape& g, double efficiency) const {
  return model_gemm_compute_time(g, efficiency, profile_.sm_count);
}

Time KernelCostModel::model_gemm_compute_time(const GemmShape& g, double efficiency,
                                              std::int64_t sms) const {
  const FlopsPerSec peak = profile_.peak_for(g.dtype);
  const std::int64_t device_sms = std::max(profile_.sm_count, 1);
  sms = std::clamp<std::int64_t>(sms, 1, device_sms);
  // Each SM runs one tile at a time at its share of the peak; a partial last wave costs a
  // full wave. cuBLAS's heuristics pick among tile shapes; the cheapest candidate stands in.
  double best = std::numeric_limits<double>::infinity();
  for (const GemmTile& t : profile_.gemm.tiles) {
    const std::int64_t tiles = ceil_div(g.m, t.m) * ceil_div(g.n, t.n) * g.batch;
    const std::int64_t waves = ceil_div(tiles, sms);
    const double wave_flops = 2.0 * static_cast<double>(t.m * t.n) * static_cast<double>(g.k);
    const double per_sm = peak.value() / static_cast<double>(device_sms) * efficiency;
    best = std::min(best, static_cast<double>(waves) * wave_flops / per_sm);
  }
  return Time::from_seconds(best);
}

Time KernelCostModel::model_gemm_time(const GemmShape& g) const {
  return model_gemm_time(g, profile_.sm_count);
}

Time KernelCostModel::model_gemm_time(const GemmShape& g, std::int64_t sms) const {
  // An empty GEMM (no rows, columns or reduction) does no work: its launch alone. The loaders
  // refuse the shapes that make one; a k of 0 would otherwise price 0/0 FLOPs a second.
  if (g.m <= 0 || g.n <= 0 || g.k <= 0 || g.batch <= 0) return profile_.gemm.launch_overhead;
  const double k = static_cast<double>(g.k);
  const double k_factor = k / (k + profile_.gemm.k_half);
  const Time compute =
      model_gemm_compute_time(g, profile_.gemm.efficiency_for(g.flops()) * k_factor, sms);
  const Time memory = model_memory_time(g.bytes_moved());
  return std::max(compute, memory) + profile_.gemm.launch_overhead;
}

KernelCost KernelCostModel::gemm_on_sms(const GemmShape& g, std::int64_t sms) const {
  const KernelCost all = gemm(g);
  if (sms >= profile_.sm_count) return all;
  // The model's time on the SMs left over its time on all of them: the compute's waves grow,
  // the memory floor and the launch do not.
  const double full = model_gemm_time(g).to_seconds();
  if (full <= 0.0) return all;
  return {all.time * (model_gemm_time(g, sms).to_seconds() / full), all.source};
}

KernelCost KernelCostModel::gemm(const GemmShape& g) const {
  const Time model = model_gemm_time(g);
  const KernelCost fallback{model, model_source(profile_.gemm.fitted)};
  // Its own accumulation's rows, exact or around it; then, for an FP8 GEMM of the fast
  // accumulation, the split rows, which are slower: an upper bound (every measured profile of
  // 2026 has only those, and a run cut short may have only some fast ones).
  const std::pair<DType, bool> keys[] = {gemm_key(g), {g.dtype, false}};
  for (std::size_t i = 0; i < (g.fast_accum ? 2u : 1u); ++i) {
    const auto it = gemm_tables_.find(keys[i]);
    if (it == gemm_tables_.end()) continue;
    for (const auto& r : it->second.rows) {
      const GemmMeasurement& m = profile_.gemm_table[r.index];
      if (same_shape(m.shape, g)) {
        const Time at = anchor_ ? anchor_->model_gemm_time(g) : model;
        return {edited(m.time, model, at), CostSource::kMeasured};
      }
    }
    if (const auto log_ratio = it->second.log_ratio_at(gemm_at(g)))
      return {model * std::exp(*log_ratio), CostSource::kMeasured};
  }
  return fallback;
}

double KernelCostModel::attention_hardware_flops(const AttentionShape& a) {
  // The fused backward recomputes Q·Kᵀ: 5 matrix products against the forward's 2, so its
  // hardware work is 2.5× the forward's, while AttentionShape counts 2× (model FLOPs).
  // Published fused-backward efficiencies are quoted against the 2.5× count.
  const double hw_scale = a.backward ? 2.5 / 2.0 : 1.0;
  return a.flops().value() * hw_scale;
}

Time KernelCostModel::model_attention_compute_time(const AttentionShape& a,
                                                   double efficiency) const {
  const FlopsPerSec peak = profile_.peak_for(a.dtype);
  return Time::from_seconds(attention_hardware_flops(a) / (peak.value() * efficiency));
}

Time KernelCostModel::model_attention_time(const AttentionShape& a) const {
  const auto& am = profile_.attention;
  const bool v1 = a.flash_version == 1;
  const double eff =
      a.backward
          ? (v1 ? am.flash_v1_backward_efficiency.value_or(am.fused_backward_efficiency)
                : am.fused_backward_efficiency)
          : (v1 ? am.flash_v1_forward_efficiency.value_or(am.fused_forward_efficiency)
                : am.fused_forward_efficiency);
  // Too little work to fill the GPU (few heads, short sequences) lowers it (the ramp): at
  // efficiency × F / (F + half) the F FLOPs take as long as F + half at the efficiency.
  const double half = 1e9 * (a.backward ? am.backward_half_gflop : am.forward_half_gflop);
  const double work = attention_hardware_flops(a);
  const Time compute = Time::from_seconds((work > 0.0 ? work + half : 0.0) /
                                          (profile_.peak_for(a.dtype).value() * eff));
  const Time memory = model_memory_time(a.bytes_moved());
  return std::max(compute, memory) + profile_.gemm.launch_overhead;
}

KernelCost KernelCostModel::attention(const AttentionShape& a) const {
  if (a.cp > 1) {
    // A context-parallel rank's share: 1/cp of the whole sequence's causal work (the two
    // load-balanced chunks), priced at the whole sequence's kernel efficiency. Transformer
    // Engine runs it as several smaller kernel calls (one per ring step or chunk); their own
    // efficiency (lower on the ramp: each call is a fraction of the work) and launches are not
    // priced apart (README, Known limitations).
    AttentionShape whole = a;
    whole.cp = 1;
    KernelCost k = attention(whole);
    k.time = Time::from_ns(k.time.ns() / a.cp);
    return k;
  }
  if (a.fused) {
    const Time model = model_attention_time(a);
    // The fit is of the measured (FlashAttention-2-class) kernel; the first FlashAttention keeps
    // its stated efficiencies, so it is never "fitted".
    const bool fitted = profile_.attention.fitted && a.flash_version == kMeasuredFlashVersion;
    const KernelCost fallback{model, model_source(fitted)};
    if (a.flash_version != kMeasuredFlashVersion) return fallback;
    const auto it = attention_tables_.find(attention_key(a));
    if (it == attention_tables_.end()) return fallback;
    for (const auto& r : it->second.rows) {
      const AttentionMeasurement& m = profile_.attention_table[r.index];
      if (same_shape(m.shape, a)) {
        const Time at = anchor_ ? anchor_->model_attention_time(a) : model;
        return {edited(m.time, model, at), CostSource::kMeasured};
      }
    }
    const auto log_ratio = it->second.log_ratio_at(attention_at(a));
    if (!log_ratio) return fallback;
    return {model * std::exp(*log_ratio),
            CostSource::kMeasured};
  }
  // Unfused: batched GEMMs over the full s×s score matrix (the mask is applied afterwards, so
  // causality saves nothing) around a softmax that reads and writes the scores.
  const std::int64_t bh = a.batch * a.heads;
  const GemmShape qk{a.seq, a.seq, a.head_dim, bh, a.dtype, false, true};
  const GemmShape pv{a.seq, a.head_dim, a.seq, bh, a.dtype, false, false};
  const double scores = static_cast<double>(bh) * static_cast<double>(a.seq) *
                        static_cast<double>(a.seq) * static_cast<double>(dtype_bytes(a.dtype));
  MemoryShape softmax{MemoryKernel::kSoftmax, Bytes(scores), Bytes(scores), Flops(0.0)};
  std::vector<KernelCost> parts;
  if (!a.backward) {
    parts = {gemm(qk), memory(softmax), gemm(pv)};
  } else {
    // dV = Pᵀ·dO, dP = dO·Vᵀ, softmax backward (reads P and dP, writes dS), dQ = dS·K,
    // dK = dSᵀ·Q.
    const GemmShape dv{a.seq, a.head_dim, a.seq, bh, a.dtype, true, false};
    const GemmShape dp{a.seq, a.seq, a.head_dim, bh, a.dtype, false, true};
    const GemmShape dq{a.seq, a.head_dim, a.seq, bh, a.dtype, false, false};
    const GemmShape dk{a.seq, a.head_dim, a.seq, bh, a.dtype, true, false};
    MemoryShape softmax_bwd{MemoryKernel::kSoftmax, Bytes(2.0 * scores), Bytes(scores),
                            Flops(0.0)};
    parts = {gemm(dv), gemm(dp), memory(softmax_bwd), gemm(dq), gemm(dk)};
  }
  KernelCost total{Time::zero(), CostSource::kMeasured};
  for (const auto& p : parts) {
    total.time += p.time;
    total.source = weakest(total.source, p.source);
  }
  return total;
}

KernelCost KernelCostModel::memory(const MemoryShape& m) const {
  const Bytes moved = m.bytes_read + m.bytes_written;
  const Time launch = profile_.memory_model.launch_overhead;
  const Time model = model_memory_time(moved) + launch;
  const auto measured = [&](double log_seconds) {
    const Time t = Time::from_seconds(std::exp(log_seconds));
    const Time at = anchor_ ? anchor_->model_memory_time(moved) + launch : model;
    return KernelCost{edited(t, model, at), CostSource::kMeasured};
  };
  // Rows of the same kernel sorted by size; interpolate time linearly in log-log space.
  std::vector<std::pair<double, double>> pts;  // (log bytes, log seconds)
  for (const auto& r : profile_.memory_table) {
    if (r.kind != m.kind || r.bytes.value() <= 0.0 || r.time <= Time::zero()) continue;
    pts.emplace_back(std::log(r.bytes.value()), std::log(r.time.to_seconds()));
  }
  if (!pts.empty() && moved.value() > 0.0) {
    std::sort(pts.begin(), pts.end());
    const double x = std::log(moved.value());
    if (x >= pts.front().first && x <= pts.back().first) {
      auto hi = std::lower_bound(pts.begin(), pts.end(), std::make_pair(x, -1e300));
      if (hi->first == x || hi == pts.begin()) return measured(hi->second);
      const auto lo = hi - 1;
      const double f = (x - lo->first) / (hi->first - lo->first);
      return measured(lo->second + f * (hi->second - lo->second));
    }
  }
  return {model, model_source(profile_.memory_model.fitted)};
}

Time KernelCostModel::with_interference(Time compute) const {
  return compute * profile_.interference.compute_slowdown;
}

}  // namespace megasim::hw
