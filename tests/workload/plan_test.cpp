#include <doctest/doctest.h>

#include <set>
#include <string>

#include "engine/error.h"
#include "test_models.h"
#include "workload/rank_index.h"

using namespace megasim;
using namespace megasim::workload;

namespace {

struct BadPlan {
  const char* what;
  ModelSpec model;
  ParallelPlan plan;
  const char* message;  // the numbers the error must name
};

ModelSpec gpt(int layers, int heads, int kv_heads, std::int64_t ffn, std::int64_t seq) {
  ModelSpec m;
  m.name = "gpt-test";
  m.layers = layers;
  m.hidden = 96 * heads;
  m.heads = heads;
  m.kv_heads = kv_heads;
  m.ffn_hidden = ffn;
  m.seq = seq;
  m.vocab = 1000;
  return m;
}

ParallelPlan plan(int tp, int pp, int vpp, int dp, int mb, std::int64_t gb) {
  ParallelPlan p;
  p.tp = tp;
  p.pp = pp;
  p.vpp = vpp;
  p.schedule = vpp > 1 ? Schedule::kInterleaved : Schedule::kOneFOneB;
  p.dp = dp;
  p.micro_batch = mb;
  p.global_batch = gb;
  return p;
}

std::string error_of(const ModelSpec& m, const ParallelPlan& p) {
  try {
    validate_plan(m, p);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("plan: every invalid plan in the table gets its own error naming the numbers") {
  const ModelSpec base = gpt(96, 128, 128, 4 * 96 * 128, 2048);
  ParallelPlan sp_plan = plan(4, 1, 1, 1, 1, 8);
  sp_plan.sequence_parallel = true;
  ParallelPlan split_sum = plan(1, 2, 1, 1, 1, 8);
  split_sum.layer_split = {40, 50};
  ParallelPlan split_len = plan(1, 2, 1, 1, 1, 8);
  split_len.layer_split = {96};
  ParallelPlan split_zero = plan(1, 3, 1, 1, 1, 8);
  split_zero.layer_split = {48, 0, 48};
  ParallelPlan cp_odd = plan(1, 1, 1, 1, 1, 8);
  cp_odd.cp = 3;  // 2·cp = 6 chunks do not divide seq 2048
  ParallelPlan small_group = plan(1, 4, 2, 1, 1, 8);
  small_group.microbatch_group = 2;  // under pp 4, and not all 8 micro-batches
  ParallelPlan split_wrap = plan(1, 65537, 1, 1, 1, 65537);
  split_wrap.layer_split.assign(65536, 65536);  // 2^32 layers, and 96 more
  split_wrap.layer_split.push_back(96);
  ParallelPlan split_vpp = plan(1, 2, 2, 1, 1, 8);
  split_vpp.layer_split = {48, 48};

  const BadPlan cases[] = {
      {"heads % tp", base, plan(3, 1, 1, 1, 1, 8), "plan.tp: heads 128 is not divisible by tp 3"},
      {"kv_heads vs tp", gpt(4, 12, 4, 1200, 2048), plan(3, 1, 1, 1, 1, 8),
       "plan.tp: kv_heads 4 is not divisible by tp 3"},
      {"kv_heads under tp", gpt(4, 8, 2, 1024, 2048), plan(4, 1, 1, 1, 1, 8),
       "plan.tp: kv_heads 2 is not divisible by tp 4"},
      {"ffn % tp", gpt(4, 8, 8, 1001, 2048), plan(8, 1, 1, 1, 1, 8),
       "plan.tp: ffn_hidden 1001 is not divisible by tp 8"},
      {"seq % tp with SP", gpt(4, 8, 8, 1024, 2046), sp_plan,
       "plan.sequence_parallel: sequence parallelism splits seq 2046 over tp 4"},
      {"layers into pp × vpp", base, plan(1, 8, 5, 1, 1, 64),
       "plan.vpp: layers 96 do not divide into pp × vpp = 8 × 5 = 40"},
      // pp's key where pp alone does not divide them (vpp's, until 2026-12-06).
      {"layers into pp at vpp 3", base, plan(1, 7, 3, 1, 1, 63),
       "plan.pp: layers 96 do not divide into pp × vpp = 7 × 3 = 21 equal chunks (give "
       "plan.layer_split for an uneven split)"},
      // Past layers + 2 chunks no split helps, and none is offered (a user's trial, 2026-12-06).
      {"more stages than a split holds", base, plan(1, 99, 1, 1, 1, 99),
       "plan.pp: layers 96 do not divide into pp × vpp = 99 × 1 = 99 equal chunks (nor into an "
       "uneven split, which gives every chunk but the first and the last a layer: at most 98)"},
      {"layer_split sum", base, split_sum,
       "plan.layer_split: layer_split sums to 90 layers but the model has 96"},
      {"layer_split sum past 2^32", base, split_wrap,
       "plan.layer_split: layer_split sums to 4294967392 layers but the model has 96"},
      {"layer_split length", base, split_len,
       "plan.layer_split: layer_split has 1 entries but pp = 2"},
      {"layer_split empty stage", base, split_zero, "plan.layer_split[1]: layer_split[1] = 0"},
      {"seq % (2 × cp)", base, cp_odd,
       "plan.cp: cp 3: context parallelism splits seq 2048 into 2 × cp = 6"},
      {"micro-batch group under pp", base, small_group,
       "plan.microbatch_group: microbatch_group 2 is less than pp 4"},
      {"layer_split with vpp", base, split_vpp,
       "plan.layer_split: layer_split has 2 entries but the interleaved schedule has pp × vpp = 2 "
       "× 2 = 4"},
      {"global batch % (dp × micro_batch)", base, plan(1, 1, 1, 3, 2, 100),
       "plan.global_batch: global_batch 100 is not divisible by dp × micro_batch = 3 × 2 = 6"},
      {"micro-batches % pp interleaved", base, plan(1, 8, 2, 1, 1, 12),
       "plan.global_batch: the interleaved schedule needs the micro-batches per replica, "
       "global_batch / (dp × micro_batch) = 12 / (1 × 1) = 12, to be a multiple of pp 8"},
      {"zero degree", base, plan(0, 1, 1, 1, 1, 8), "plan.tp: tp 0 must be at least 1"},
      {"zero global batch", base, plan(1, 1, 1, 1, 1, 0), "plan.global_batch: global_batch 0"},
  };
  std::set<std::string> seen;
  for (const BadPlan& c : cases) {
    CAPTURE(c.what);
    const std::string err = error_of(c.model, c.plan);
    CHECK(err.find(c.message) != std::string::npos);
    CHECK(seen.insert(err).second);  // no two cases share a message
  }
}

TEST_CASE("plan: the clashes of different kinds are given together, a line each") {
  // 175B (128 heads, 96 layers) on TP 6, PP 7 × VPP 6, DP 4, batch 770: the heads, the
  // sequence split, the layers and the batch each clash; until 2026-12-05 only the heads were
  // named.
  const ModelSpec m175 =
      io::load_model(std::string(MEGASIM_SOURCE_DIR) + "/models/gpt-175b-megascale.json");
  ParallelPlan p = plan(6, 7, 6, 4, 1, 770);
  p.sequence_parallel = true;
  const std::string err = error_of(m175, p);
  CHECK(err.find("plan.tp: heads 128 is not divisible by tp 6") != std::string::npos);
  CHECK(err.find("\nplan.sequence_parallel: ") != std::string::npos);
  CHECK(err.find("\nplan.pp: layers 96 do not divide into pp × vpp = 7 × 6 = 42") !=
        std::string::npos);
  CHECK(err.find("\nplan.global_batch: global_batch 770 is not divisible by dp × micro_batch") !=
        std::string::npos);
  // A degree under 1 is named alone: the other checks divide by it.
  CHECK(error_of(m175, plan(0, 7, 6, 4, 1, 770)).find('\n') == std::string::npos);
}

TEST_CASE("plan: the MegaScale plans and an uneven split validate") {
  const ModelSpec m175 =
      io::load_model(std::string(MEGASIM_SOURCE_DIR) + "/models/gpt-175b-megascale.json");
  CHECK_NOTHROW(validate_plan(m175, plan(8, 8, 6, 192, 1, 6144)));
  const ModelSpec m530 =
      io::load_model(std::string(MEGASIM_SOURCE_DIR) + "/models/gpt-530b-megascale.json");
  CHECK_NOTHROW(validate_plan(m530, plan(8, 35, 3, 1, 1, 280)));
  ParallelPlan uneven = plan(8, 2, 1, 1, 1, 8);
  uneven.layer_split = {46, 50};
  CHECK_NOTHROW(validate_plan(m175, uneven));
  CHECK(chunk_layers(m175, uneven, 1, 0).first == 46);
  CHECK(stage_layers(m175, uneven, 1) == 50);
}

TEST_CASE("plan: Llama 3's interleaved plan with lighter first and last virtual stages") {
  // 126 layers on PP 16 × VPP 2: 32 virtual stages of 4 layers, the first and the last with 3
  // (Llama 3 Herd, section 3.3.2), in model order: virtual stage c·pp + i is chunk c of stage i.
  const ModelSpec llama =
      io::load_model(std::string(MEGASIM_SOURCE_DIR) + "/models/llama3-405b-like.json");
  ParallelPlan p = plan(8, 16, 2, 64, 1, 2048);
  p.layer_split.assign(32, 4);
  p.layer_split.front() = 3;
  p.layer_split.back() = 3;
  CHECK_NOTHROW(validate_plan(llama, p));
  CHECK(chunk_layers(llama, p, 0, 0).first == 0);
  CHECK(chunk_layers(llama, p, 0, 0).count == 3);
  CHECK(chunk_layers(llama, p, 1, 0).first == 3);
  CHECK(chunk_layers(llama, p, 0, 1).first == 3 + 15 * 4);  // chunk 1 of stage 0: virtual stage 16
  CHECK(chunk_layers(llama, p, 15, 1).count == 3);
  CHECK(chunk_layers(llama, p, 15, 1).first == 123);
  CHECK(stage_layers(llama, p, 0) == 7);
  CHECK(stage_layers(llama, p, 15) == 7);
  CHECK(stage_layers(llama, p, 7) == 8);
  int total = 0;
  for (int s = 0; s < 16; ++s) total += stage_layers(llama, p, s);
  CHECK(total == 126);
}

TEST_CASE("rank index: TP innermost, then DP, then stages, every rank decodes to itself") {
  // TP 2 · PP 3 · DP 4: (stage · 4 + d) · 2 + t, so rank 13 is stage 1, d = 2, t = 1.
  const megasim::workload::RankIndex ranks(2, 3, 4);
  CHECK(ranks.size() == 24);
  CHECK(ranks.linear(0, 0, 1) == 1);
  CHECK(ranks.linear(0, 1, 0) == 2);
  CHECK(ranks.linear(1, 0, 0) == 8);
  CHECK(ranks.linear(1, 2, 1) == 13);
  CHECK(ranks.stage_of(13) == 1);
  CHECK(ranks.dp_of(13) == 2);
  CHECK(ranks.tp_of(13) == 1);
  for (std::int64_t r = 0; r < ranks.size(); ++r) {
    CHECK(ranks.linear(ranks.stage_of(r), ranks.dp_of(r), ranks.tp_of(r)) == r);
  }
}

TEST_CASE("plan: context parallelism sits between TP and DP and multiplies a replica's GPUs") {
  // TP 2 · CP 2 · PP 3 · DP 4 = 48 GPUs. Megatron-Core's order (tp-cp-dp-pp): the rank index's
  // DP position runs over dp × cp = 8, replica · cp + context rank, so the two context ranks of
  // replica 1 on stage 1 are d = 2 and 3: ranks (1·8 + 2)·2 = 20 and (1·8 + 3)·2 = 22.
  ParallelPlan p = plan(2, 3, 1, 4, 1, 8);
  p.cp = 2;
  CHECK(p.gpus() == 48);
  CHECK(p.dp_cp() == 8);
  const megasim::workload::RankIndex ranks(p);
  CHECK(ranks.size() == 48);
  CHECK(ranks.linear(1, 1 * p.cp + 0, 0) == 20);
  CHECK(ranks.linear(1, 1 * p.cp + 1, 0) == 22);
  // Micro-batches per replica still count replicas, not context ranks: 8 / (4 × 1).
  CHECK(p.micro_batches() == 2);
}

TEST_CASE("plan: the rank order decides where a rank sits, one place per rank") {
  // TP 2 · CP 2 · PP 3 · DP 4 = 48 GPUs.
  ParallelPlan p = plan(2, 3, 1, 4, 1, 8);
  p.cp = 2;
  // Megatron-LM's order: the place is the rank itself.
  CHECK(placement_slot(p, 1, 1 * p.cp + 1, 0) == 22);
  // Llama 3's [TP, CP, PP, DP]: ((replica · pp + stage) · cp + context) · tp + t, so replica 1's
  // stage 1, context rank 1, is ((1·3 + 1)·2 + 1)·2 = 18, and one stage on is 4 places on.
  p.rank_order = RankOrder::kTpCpPpDp;
  CHECK(placement_slot(p, 1, 1 * p.cp + 1, 0) == 18);
  CHECK(placement_slot(p, 2, 1 * p.cp + 1, 0) == 22);
  CHECK(placement_slot(p, 0, 0, 1) == 1);
  // A replica's whole pipeline is one block of tp · cp · pp = 12 places.
  CHECK(placement_slot(p, 0, 2 * p.cp, 0) == 24);
  for (const RankOrder order : {RankOrder::kTpCpDpPp, RankOrder::kTpCpPpDp}) {
    p.rank_order = order;
    std::set<std::int64_t> places;
    for (int s = 0; s < p.pp; ++s)
      for (int d = 0; d < p.dp_cp(); ++d)
        for (int t = 0; t < p.tp; ++t) places.insert(placement_slot(p, s, d, t));
    CHECK(places.size() == 48);
    CHECK(*places.begin() == 0);
    CHECK(*places.rbegin() == 47);
  }
}

TEST_CASE("plan: Llama 3's first and last model chunks may hold no transformer layer") {
  // 126 layers + the embedding + the output layer on PP 16 × VPP 8: 128 virtual stages of one
  // layer each, the first with only the embedding and the last with only the output layer and
  // loss (Llama 3 Herd, section 3.3.2).
  const ModelSpec llama =
      io::load_model(std::string(MEGASIM_SOURCE_DIR) + "/models/llama3-405b-like.json");
  ParallelPlan p = plan(8, 16, 8, 64, 1, 2048);
  p.layer_split.assign(128, 1);
  p.layer_split.front() = 0;
  p.layer_split.back() = 0;
  CHECK_NOTHROW(validate_plan(llama, p));
  CHECK(chunk_layers(llama, p, 0, 0).count == 0);
  CHECK(chunk_layers(llama, p, 15, 7).count == 0);
  CHECK(stage_layers(llama, p, 0) == 7);
  CHECK(stage_layers(llama, p, 1) == 8);
  // Llama 3's tunable micro-batch group N: 32 (one round) is accepted, 8 (under pp) is not.
  p.microbatch_group = 32;
  CHECK_NOTHROW(validate_plan(llama, p));
  p.microbatch_group = 8;
  CHECK_THROWS_AS(validate_plan(llama, p), InputError);
}
