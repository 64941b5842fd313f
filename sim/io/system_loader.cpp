#include "io/system_loader.h"

#include <fmt/format.h>

#include <utility>

#include "engine/error.h"
#include "io/json_reader.h"
#include "io/resolve.h"

namespace megasim::io {

namespace {

void read_host_per_rank(JsonReader& h, step::SystemOptions::Sharding::HostPerRank& out) {
  out.python_op = Time::from_us(h.number("python_op_us", 0.0, 1e4));
  out.dispatched_op = Time::from_us(h.number("dispatched_op_us", 0.0, 1e4));
  out.memcpy = Time::from_us(h.number("memcpy_us", 0.0, 1e4));
  for (auto [key, ops] : {std::pair{"gather", &out.gather}, std::pair{"scatter", &out.scatter}}) {
    JsonReader o = h.object(key);
    ops->python = static_cast<int>(o.integer("python_ops", 0, 64));
    ops->dispatched = static_cast<int>(o.integer("dispatched_ops", 0, 64));
    ops->memcpys = static_cast<int>(o.integer("memcpys", 0, 64));
    o.finish();
  }
  h.string("source");
  h.finish();
}

// gather_host_us was measured on gather_host_ranks ranks, whose per-rank work is in it: the
// size is needed to take it out, and the measurement must hold at least that much.
void check_gather_host(const JsonReader& z, const step::SystemOptions::Sharding& s) {
  const Time per_rank = s.host_per_rank.per_rank(s.host_per_rank.gather);
  if (s.gather_host_ranks > 0 && per_rank == Time::zero()) {
    z.fail("gather_host_ranks", "takes the per-rank part out of gather_host_us, so it needs "
                                "host_per_rank with a gather cost above zero");
  }
  if (s.gather_host > Time::zero() && per_rank > Time::zero() && s.gather_host_ranks == 0) {
    z.fail("gather_host_ranks",
           "is needed with host_per_rank and gather_host_us: the DP group size gather_host_us "
           "was measured on, whose per-rank part is in it");
  }
  if (s.gather_fixed_host() < Time::zero()) {
    z.fail("gather_host_us", fmt::format("{:g} us measured on {} ranks is less than their "
                                         "per-rank host time ({:g} us = {} x {:g} us)",
                                         s.gather_host.to_us(), s.gather_host_ranks,
                                         (per_rank * s.gather_host_ranks).to_us(),
                                         s.gather_host_ranks, per_rank.to_us()));
  }
}

// The preset's sharded_data_parallel object.
void read_sharding(JsonReader& z, step::SystemOptions::Sharding& sh) {
  sh.per_tensor = z.choice("collective_per", {"tensor", "layer"}) == "tensor";
  sh.per_sub_module = z.choice_or("fetch_unit", "layer", {"layer", "sub-module"}) == "sub-module";
  sh.prefetch_layers = static_cast<int>(z.integer("prefetch_layers", 0, 64));
  sh.blocking_reduce = z.boolean_or("blocking_reduce", false);
  sh.fetch_waits_device = z.boolean_or("fetch_waits_device", false);
  sh.regather_after_recompute = z.boolean_or("regather_after_recompute", false);
  sh.max_reuse_distance = z.integer_or("max_reuse_distance_elements", 0, 0, std::int64_t{1} << 50);
  sh.no_shard_at_one_rank = z.boolean_or("no_shard_at_one_rank", false);
  sh.zero2_reshard_after_backward = z.boolean_or("zero2_reshard_after_backward", false);
  sh.per_rank_copies = z.boolean_or("per_rank_copies", false);
  sh.zeroed_gather_buffer = z.boolean_or("zeroed_gather_buffer", false);
  sh.gather_host = Time::from_us(z.number_or("gather_host_us", 0.0, 0.0, 1e6));
  sh.gather_host_ranks = static_cast<int>(z.integer_or("gather_host_ranks", 0, 0, 1 << 20));
  if (auto h = z.optional_object("host_per_rank")) {
    read_host_per_rank(*h, sh.host_per_rank);
    // A reduce-scatter's copies into its flat buffer are taken to run as its host loop issues
    // them (Pricer::add_host), which holds only when no earlier reduction is still on the DP
    // line: the host waits for it first only with a blocking reduce.
    if (!sh.blocking_reduce) {
      z.fail("host_per_rank", "prices a reduce-scatter's copies as running beside its host "
                              "loop, which needs blocking_reduce true");
    }
  }
  check_gather_host(z, sh);
  sh.persistence_threshold =
      z.integer_or("param_persistence_threshold", 0, 0, std::int64_t{1} << 40);
  // Persistence keeps single tensors gathered: a per-layer collective has none to keep.
  if (!sh.per_tensor && sh.persistence_threshold > 0) {
    z.fail("param_persistence_threshold",
          "keeps single tensors gathered, so it needs collective_per \"tensor\"");
  }
  sh.reduce_bucket_elements =
      z.integer_or("reduce_bucket_elements", 0, 1, std::int64_t{1} << 40);
  // A bucket groups single tensors' reduce-scatters: a per-layer collective has none.
  if (!sh.per_tensor && sh.reduce_bucket_elements > 0) {
    z.fail("reduce_bucket_elements",
          "groups single tensors' reductions, so it needs collective_per \"tensor\"");
  }
  sh.contiguous_gradients = z.boolean_or("contiguous_gradients", false);
  // Its copies and divisions are the reduce buffer's: without a bucket size there is none.
  if (sh.contiguous_gradients && sh.reduce_bucket_elements == 0) {
    z.fail("contiguous_gradients",
          "copies gradients into the reduce bucket, so it needs reduce_bucket_elements");
  }
  z.string("source");
  z.finish();
}

// What the preset's framework does not run, and the dtype its bf16 gradients keep.
void read_framework(JsonReader& r, step::SystemOptions& s) {
  if (auto n = r.optional_object("not_in_framework")) {
    auto& f = s.not_in_framework;
    f.zero2 = n->boolean_or("zero2", false);
    f.zero3 = n->boolean_or("zero3", false);
    f.cp = n->boolean_or("cp", false);
    f.fp8 = n->boolean_or("fp8", false);
    f.pp = n->boolean_or("pp", false);
    f.source = n->string("source");
    n->finish();
  }
  if (auto g = r.optional_object("bf16_gradients")) {
    s.bf16_gradients_in_fp32 = g->choice_or("dtype", "fp32", {"fp32", "bf16"}) == "fp32";
    g->string("source");
    g->finish();
  }
  if (auto m = r.optional_object("fp32_main_gradient")) {
    s.main_gradient_at_step =
        *step::main_gradient_at_step_from_string(m->choice("held", step::main_gradient_names()));
    m->string("source");
    m->finish();
  }
}

}  // namespace

step::SystemOptions load_system_file(const std::filesystem::path& file, FilesRead* read) {
  const Json doc = parse_json_file(file, read);
  check_input_kind(doc, InputKind::kSystem, file.string());
  JsonReader r(doc, "", file.string());
  step::SystemOptions s;
  r.string_or("$schema", "");  // a string when given, as the schemas say
  s.preset = r.string("name");
  r.string("source");
  {
    JsonReader w = r.object("switches");
    for (const step::Switch& sw : step::kSwitches) s.*sw.field = w.boolean_or(sw.key, false);
    w.finish();
  }
  {
    JsonReader a = r.object("attention");
    s.attention =
        *step::attention_kernel_from_string(a.choice("kernel", step::attention_kernel_names()));
    a.string("source");
    a.finish();
  }
  {
    JsonReader b = r.object("backward_tp_overlap");
    s.backward_tp_overlap = b.boolean_or("enabled", false);
    b.string("source");
    b.finish();
  }
  {
    JsonReader p = r.object("blocking_p2p_overhead");
    s.blocking_p2p_overhead = Time::from_us(p.number("us", 0.0, 1e6));
    p.string("source");
    p.finish();
  }
  if (auto g = r.optional_object("grad_accumulation_pass")) {
    s.grad_accumulation_pass = g->boolean_or("enabled", false);
    g->string("source");
    g->finish();
  }
  if (auto t = r.optional_object("scatter_gather_transfers")) {
    s.scatter_gather_transfers = t->boolean_or("enabled", true);
    s.scatter_gather_list_copy = t->boolean_or("list_copy", false);
    t->string("source");
    t->finish();
  }
  read_framework(r, s);
  if (auto b = r.optional_object("dp_bucket_overlap")) {
    s.dp_bucket_overlap = b->boolean_or("enabled", false);
    b->string("source");
    b->finish();
  }
  if (auto c = r.optional_object("context_parallel")) {
    s.cp_overlap = c->boolean_or("overlap", false);
    c->string("source");
    c->finish();
  }
  if (auto d = r.optional_object("tp_overlap_decomposition")) {
    s.tp_decomposition.enabled = d->boolean_or("enabled", false);
    s.tp_decomposition.pipeline_splits = static_cast<int>(d->integer("pipeline_splits", 1, 64));
    s.tp_decomposition.pipeline_comm_sms =
        static_cast<int>(d->integer("pipeline_comm_sms", 0, 1024));
    s.tp_decomposition.bulk_comm_sms = static_cast<int>(d->integer("bulk_comm_sms", 0, 1024));
    d->string("source");
    d->finish();
  }
  if (auto e = r.optional_object("pipeline_engine")) {
    s.pipe_engine.present = true;
    s.pipe_engine.partitioned_transfers = e->boolean_or("partitioned_transfers", false);
    s.pipe_engine.bf16_optimizer = e->boolean_or("bf16_optimizer", false);
    e->string("source");
    e->finish();
  }
  if (auto z = r.optional_object("sharded_data_parallel")) read_sharding(*z, s.sharding);
  r.finish();
  return s;
}

step::SystemOptions load_system_preset(const std::string& name, FilesRead* read) {
  // Looked up in the built-in systems/ folders (the scenario already chose the name from a
  // fixed list), or taken as a path.
  return load_system_file(resolve_data_file(name, DataKind::kSystem, builtin_data_dirs(DataKind::kSystem).front(),
                                            "optimizations.preset", "preset"),
                          read);
}

}  // namespace megasim::io
