#include "io/system_loader.h"

#include "engine/error.h"
#include "io/json_reader.h"
#include "io/resolve.h"

namespace megasim::io {

step::SystemOptions load_system_file(const std::filesystem::path& file, FilesRead* read) {
  const Json doc = parse_json_file(file, read);
  JsonReader r(doc, "", file.string());
  step::SystemOptions s;
  r.ignore("$schema");
  s.preset = r.string("name");
  r.string("source");
  {
    JsonReader w = r.object("switches");
    for (const step::Switch& sw : step::kSwitches) s.*sw.field = w.boolean_or(sw.key, false);
    w.finish();
  }
  {
    JsonReader a = r.object("attention");
    s.attention = *step::attention_kernel_from_string(
        a.choice("kernel", {"unfused", "flash-v1", "flash-v2"}));
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
  if (auto e = r.optional_object("pipeline_engine")) {
    s.pipe_engine.partitioned_transfers = e->boolean_or("partitioned_transfers", false);
    s.pipe_engine.bf16_optimizer = e->boolean_or("bf16_optimizer", false);
    e->string("source");
    e->finish();
  }
  if (auto z = r.optional_object("sharded_data_parallel")) {
    s.sharding.per_tensor = z->choice("collective_per", {"tensor", "layer"}) == "tensor";
    s.sharding.per_sub_module =
        z->choice_or("fetch_unit", "layer", {"layer", "sub-module"}) == "sub-module";
    s.sharding.prefetch_layers = static_cast<int>(z->integer("prefetch_layers", 0, 64));
    s.sharding.blocking_reduce = z->boolean_or("blocking_reduce", false);
    s.sharding.regather_after_recompute = z->boolean_or("regather_after_recompute", false);
    s.sharding.per_rank_copies = z->boolean_or("per_rank_copies", false);
    s.sharding.zeroed_gather_buffer = z->boolean_or("zeroed_gather_buffer", false);
    s.sharding.gather_host = Time::from_us(z->number_or("gather_host_us", 0.0, 0.0, 1e6));
    s.sharding.persistence_threshold =
        z->integer_or("param_persistence_threshold", 0, 0, std::int64_t{1} << 40);
    // Persistence keeps single tensors gathered: a per-layer collective has none to keep.
    if (!s.sharding.per_tensor && s.sharding.persistence_threshold > 0) {
      z->fail("param_persistence_threshold",
              "keeps single tensors gathered, so it needs collective_per \"tensor\"");
    }
    z->string("source");
    z->finish();
  }
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
