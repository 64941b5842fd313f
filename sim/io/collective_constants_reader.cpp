#include "io/collective_constants_reader.h"

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "engine/error.h"

namespace megasim::io {
namespace {

constexpr double kMaxLatencyUs = 1e4;
// The smallest share of a link's bandwidth a protocol may reach. NCCL's own factors lie
// between 0.24 and 1; one near zero turns a gigabyte into centuries, past the simulator's clock.
constexpr double kMinBandwidthFactor = 0.01;
// The smallest bandwidth cap (GB/s) other than 0 (no cap): NCCL's lie between 20 and 235, and
// one near zero turns a gigabyte into centuries, past the simulator's clock.
constexpr double kMinBusbwCapGbps = 0.1;
constexpr double kMaxBusbwCapGbps = 1e5;

// A cap in GB/s: 0 (none) or in [kMinBusbwCapGbps, kMaxBusbwCapGbps].
double read_cap(JsonReader& r, const std::string& key) {
  const double v = r.number(key, 0.0, kMaxBusbwCapGbps);
  if (v > 0.0 && v < kMinBusbwCapGbps) {
    r.fail(key, fmt::format("{} GB/s is below the {} GB/s a bandwidth cap may be (0: no cap)", v,
                            kMinBusbwCapGbps));
  }
  return v;
}

hw::ProtoTable read_caps(JsonReader r) {
  hw::ProtoTable t{};
  t[0] = read_cap(r, "ll");
  t[1] = read_cap(r, "ll128");
  t[2] = read_cap(r, "simple");
  r.finish();
  return t;
}

// NCCL 2.7.5's LL128 cap per channel of the search graph, by collective, and the graph's
// channels (hw::CollectiveConstants::Ll128ChannelCap).
hw::CollectiveConstants::Ll128ChannelCap read_ll128_channel_cap(JsonReader r) {
  r.string("source");
  hw::CollectiveConstants::Ll128ChannelCap c;
  JsonReader g = r.object("per_channel_gbps");
  c.all_reduce = read_cap(g, "all_reduce");
  c.all_gather = read_cap(g, "all_gather");
  c.reduce_scatter = read_cap(g, "reduce_scatter");
  c.broadcast = read_cap(g, "broadcast");
  c.reduce = read_cap(g, "reduce");
  g.finish();
  c.one_node_channels = static_cast<int>(r.integer("one_node_channels", 1, 64));
  c.channels_a_nic = static_cast<int>(r.integer("channels_a_nic", 1, 64));
  r.finish();
  return c;
}

hw::ProtoTable read_protocols(JsonReader r, double lo, double hi) {
  hw::ProtoTable t{};
  t[0] = r.number("ll", lo, hi);
  t[1] = r.number("ll128", lo, hi);
  t[2] = r.number("simple", lo, hi);
  r.finish();
  return t;
}

hw::AlgoProtoTable read_algorithms(JsonReader& r, double lo, double hi) {
  hw::AlgoProtoTable t{};
  t[static_cast<int>(hw::CollAlgorithm::kTree)] = read_protocols(r.object("tree"), lo, hi);
  t[static_cast<int>(hw::CollAlgorithm::kRing)] = read_protocols(r.object("ring"), lo, hi);
  return t;
}

// NVLink SHARP speeds, caps and latencies: bounded like the tables above.
constexpr double kMaxSpeedGbps = 1e4;
constexpr std::size_t kMaxSpeeds = 64;

// PAT's constants (NCCL 2.23+): latencies in microseconds, a divisor and a bandwidth share.
constexpr double kMaxLatencyDivisor = 1e3;

hw::PatConstants read_pat(JsonReader p) {
  hw::PatConstants c;
  c.available = true;
  p.string("source");
  c.base_latency_us = p.number("base_latency_us", 0.0, kMaxLatencyUs);
  c.log_latency_divisor = p.number("log_latency_divisor", 1.0, kMaxLatencyDivisor);
  c.per_rank_latency_us = p.number("per_rank_latency_us", 0.0, kMaxLatencyUs);
  c.bandwidth_factor = p.number("bandwidth_factor", kMinBandwidthFactor, 1.0);
  p.finish();
  return c;
}

hw::NvlsConstants read_nvls(JsonReader n) {
  hw::NvlsConstants c;
  c.available = true;
  n.string("source");
  const auto speeds = [&n](const char* key) {
    const std::vector<double> s =
        n.number_array(key, kMinBusbwCapGbps, kMaxSpeedGbps, 1, kMaxSpeeds);
    for (std::size_t i = 1; i < s.size(); ++i) {
      if (!(s[i] < s[i - 1]))
        n.fail(key, fmt::format("element {}: {} is not below the one before it; the speeds are "
                                "listed fastest first",
                                i, s[i]));
    }
    return s;
  };
  c.channel_speeds_gbps = speeds("channel_speeds_gbps");
  if (n.has("channel_speeds_inter_gbps"))
    c.channel_speeds_inter_gbps = speeds("channel_speeds_inter_gbps");
  c.efficiency = n.number("efficiency", kMinBandwidthFactor, 1.0);
  {
    JsonReader cap = n.object("tree_channel_cap_gbps");
    c.tree_channel_cap_two_nodes_gbps = cap.number("two_nodes", kMinBusbwCapGbps, kMaxSpeedGbps);
    c.tree_channel_cap_more_nodes_gbps = cap.number("more_nodes", kMinBusbwCapGbps, kMaxSpeedGbps);
    cap.finish();
  }
  c.nvlink_latency_us = n.number("nvlink_latency_us", 0.0, kMaxLatencyUs);
  c.net_latency_us = n.number("net_latency_us", 0.0, kMaxLatencyUs);
  n.finish();
  return c;
}

void read_tree_correction(JsonReader t, hw::CollectiveConstants& c) {
  t.string("source");
  // NCCL 2.7.5's table has 22 sizes, 2.19+'s 23 (the 24th serves NVLSTree only): sizes past a
  // table's end take 1, as NCCL applies it only below its length.
  const char* names[hw::kCollProtocols] = {"ll", "ll128", "simple"};  // CollProtocol order
  for (int p = 0; p < hw::kCollProtocols; ++p) {
    const std::vector<double> v =
        t.number_array(names[p], kMinBandwidthFactor, 1.0, 22, hw::kTreeCorrectionSizes);
    auto& row = c.tree_correction[static_cast<std::size_t>(p)];
    row.fill(1.0);
    std::copy(v.begin(), v.end(), row.begin());
  }
  c.tree_correction_choice_only = t.boolean_or("choice_only", false);
  t.finish();
  c.has_tree_correction = true;
}

// NCCL's chunked pipeline: step bytes per protocol (a step is 1 KiB to 64 MiB), its chunk
// rule, and NVLSTree's channels and chunks.
constexpr double kMinStepBytes = 1024.0;
constexpr double kMaxStepBytes = 64.0 * 1024 * 1024;
constexpr int kMaxNvlsChannels = 64;

hw::PipelineConstants read_pipeline(JsonReader p) {
  hw::PipelineConstants k;
  k.available = true;
  p.string("source");
  {
    JsonReader s = p.object("step_bytes");
    s.string("source");
    k.step_bytes = {s.number("ll", kMinStepBytes, kMaxStepBytes), s.number("ll128", kMinStepBytes, kMaxStepBytes),
                    s.number("simple", kMinStepBytes, kMaxStepBytes)};
    s.finish();
  }
  k.tree_chunk_by_depth = p.boolean_or("tree_simple_chunk_by_depth", false);
  if (auto n = p.optional_object("nvls_tree")) {
    n->string("source");
    k.nvls_channels = static_cast<int>(n->integer("channels", 1, kMaxNvlsChannels));
    k.nvls_chunk_bytes = n->number("chunk_bytes", kMinStepBytes, kMaxStepBytes);
    k.nvls_tree_chunk_bytes_4_nodes = n->number("chunk_bytes_4_nodes_or_more", kMinStepBytes, kMaxStepBytes);
    n->finish();
  }
  p.finish();
  return k;
}

void read_multi_node(JsonReader& r, hw::CollectiveConstants& c) {
  {
    JsonReader m = r.object("multi_node_latency");
    m.string("source");
    c.ll_intra_factor_multi_node = m.number("ll_intra_factor", 1.0, 100.0);
    c.ring_net_overhead_us = m.number("ring_net_overhead_us", 0.0, kMaxLatencyUs);
    c.one_rank_per_node_tree_net_latency = m.boolean_or("one_rank_per_node_uses_tree_net_latency", false);
    m.finish();
  }
  {
    JsonReader p = r.object("ring_plateau");
    p.string("source");
    c.ring_plateau.factor = p.number("factor", 1.0, 100.0);
    c.ring_plateau.min_bytes_per_rank = p.number("min_bytes_per_rank", 0.0, 1e15);
    p.finish();
  }
}

// The groups a profile may leave out: NCCL's corrections and caps of some versions, NVLS, PAT,
// the chunked pipeline and point-to-point efficiency.
void read_optional_groups(JsonReader& r, hw::CollectiveConstants& c) {
  if (auto t = r.optional_object("tree_correction")) read_tree_correction(*t, c);
  if (auto l = r.optional_object("ring_ll_busbw_cap_gbps")) {
    l->string("source");
    c.ring_ll_cap_gbps = {read_cap(*l, "one_node"), read_cap(*l, "two_nodes"),
                          read_cap(*l, "more_nodes")};
    l->finish();
  }
  if (auto f = r.optional_object("ring_factors_nccl_2_7")) {
    f->string("source");
    c.ring_ll128_factor_under_two_per_node =
        f->number("ll128_under_two_per_node", kMinBandwidthFactor, 1.0);
    c.ring_ll_factor_one_node_gather = f->number("ll_one_node_gather", kMinBandwidthFactor, 1.0);
    f->finish();
  }
  if (auto l = r.optional_object("ring_ll128_busbw_cap_gbps")) {
    l->string("source");
    c.ring_ll128_cap_across_nodes_gbps = read_cap(*l, "across_nodes");
    l->finish();
  }
  if (auto l = r.optional_object("ll128_channel_cap_nccl_2_7"))
    c.ll128_channel_cap = read_ll128_channel_cap(*l);
  if (auto t = r.optional_object("tree_pattern")) {
    t->string("source");
    c.tree_factor_one_gpu_node = t->number("one_gpu_node_factor", kMinBandwidthFactor, 1.0);
    t->finish();
  }
  if (auto n = r.optional_object("nvls")) c.nvls = read_nvls(*n);
  if (auto p = r.optional_object("pat")) c.pat = read_pat(*p);
  if (auto p = r.optional_object("pipeline")) c.pipeline = read_pipeline(*p);
  if (c.tree_correction_choice_only && !c.pipeline.available) {
    r.fail("tree_correction",
           "choice_only times the tree with the pipeline's fill in place of "
           "the correction, so it needs a pipeline group");
  }
  if (auto p = r.optional_object("p2p")) {
    p->string("source");
    c.p2p_nvlink_efficiency = p->number("nvlink_efficiency", kMinBandwidthFactor, 1.0);
    p->finish();
  }
}

}  // namespace

hw::CollectiveConstants read_collective_constants(JsonReader r) {
  hw::CollectiveConstants c;
  c.source = r.string("source");
  {
    JsonReader b = r.object("base_latency_us");
    b.string("source");
    c.base_latency_us = read_algorithms(b, 0.0, kMaxLatencyUs);
    b.finish();
  }
  {
    JsonReader h = r.object("hw_latency_us");
    h.string("source");
    const char* names[hw::kCollLinkTypes] = {"nvlink", "pcie", "net"};  // CollLinkType order
    for (int l = 0; l < hw::kCollLinkTypes; ++l) {
      JsonReader link = h.object(names[l]);
      c.hw_latency_us[static_cast<std::size_t>(l)] = read_algorithms(link, 0.0, kMaxLatencyUs);
      link.finish();
    }
    h.finish();
  }
  {
    JsonReader f = r.object("bandwidth_factor");
    f.string("source");
    JsonReader intra = f.object("intra_node");
    c.bandwidth_factor_intra = read_algorithms(intra, kMinBandwidthFactor, 1.0);
    intra.finish();
    JsonReader inter = f.object("inter_node");
    c.bandwidth_factor_inter = read_algorithms(inter, kMinBandwidthFactor, 1.0);
    inter.finish();
    f.finish();
  }
  {
    JsonReader cap = r.object("busbw_cap_gbps");
    c.busbw_cap_gbps = read_cap(cap, "value");
    cap.string("source");
    cap.finish();
  }
  {
    JsonReader t = r.object("tree_busbw_cap_gbps");
    t.string("source");
    c.tree_cap_two_nodes_gbps = read_caps(t.object("two_nodes"));
    c.tree_cap_more_nodes_gbps = read_caps(t.object("more_nodes"));
    if (auto one = t.optional_object("one_node")) {
      c.tree_cap_one_node_gbps = read_caps(*one);
      c.has_tree_cap_one_node = true;
    }
    t.finish();
  }
  {
    JsonReader ch = r.object("channels");
    c.channels = static_cast<int>(ch.integer("value", 1, 64));
    ch.string("source");
    ch.finish();
  }
  read_multi_node(r, c);
  read_optional_groups(r, c);
  r.finish();
  return c;
}

hw::CollectiveConstants read_collective_constants(const std::filesystem::path& profile) {
  const Json doc = parse_json_file(profile);
  if (!doc.is_object())
    throw InputError(profile.string() + ": expected a device profile object, found " + json_type_name(doc));
  check_input_kind(doc, InputKind::kDeviceProfile, profile.string());  // a model named as one
  JsonReader root(doc, "", profile.string());
  if (!root.has("collective"))
    throw InputError(profile.string() + ": collective: missing; the device profile has no NCCL "
                     "constants table, so collectives cannot be priced on it");
  return read_collective_constants(root.object("collective"));
}

}  // namespace megasim::io
