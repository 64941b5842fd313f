#include "step/pipeline_schedule.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>


namespace megasim::step {
namespace {

using workload::Schedule;

int one_f_one_b_warmup(int pp, int stage, int m) { return std::min(pp - stage - 1, m); }

std::vector<PassId> one_f_one_b(int pp, int stage, int m) {
  std::vector<PassId> order;
  const int warmup = one_f_one_b_warmup(pp, stage, m);
  for (int i = 0; i < warmup; ++i) order.push_back({Pass::kForward, i, 0});
  for (int i = 0; i < m - warmup; ++i) {
    order.push_back({Pass::kForward, warmup + i, 0});
    order.push_back({Pass::kBackward, i, 0});
  }
  for (int i = m - warmup; i < m; ++i) order.push_back({Pass::kBackward, i, 0});
  return order;
}

// Megatron-LM's forward_backward_pipelining_with_interleaving: the k-th chunk-pass of a stage
// works on micro-batch (k / (g·v))·g + k % g of chunk (k % (g·v)) / g (reversed for backward),
// g the micro-batch group (pp in Megatron-LM).
std::vector<PassId> interleaved(int pp, int v, int group, int stage, int m) {
  const int total = m * v;
  const int warmup = workload::interleaved_warmup(pp, v, group, stage, m);
  const auto id = [group, v](Pass pass, int k) {
    return PassId{pass, (k / (group * v)) * group + k % group,
                  workload::interleaved_chunk(k, group, v, pass == Pass::kBackward)};
  };
  std::vector<PassId> order;
  for (int k = 0; k < warmup; ++k) order.push_back(id(Pass::kForward, k));
  for (int i = 0; i < total - warmup; ++i) {
    order.push_back(id(Pass::kForward, warmup + i));
    order.push_back(id(Pass::kBackward, i));
  }
  for (int k = total - warmup; k < total; ++k) order.push_back(id(Pass::kBackward, k));
  return order;
}

// ZB-H1 (Qi et al.): the F/B order of 1F1B, each backward split into B and W, and a W run
// whenever the next F/B is not ready yet or when stage s already defers s W passes. A stage
// then holds at most (pp − s) micro-batches between F and B (as in 1F1B) plus s between B and
// W: pp in all, the peak of 1F1B's first stage, which is ZB-H1's memory bound. The order is found
// by list-scheduling the whole pipeline once with equal unit times for F, B and W, as the
// paper's handcrafted schedule assumes; the executor then replays that order with real costs.
std::vector<std::vector<PassId>> zero_bubble_h1(int pp, int m) {
  std::vector<std::vector<PassId>> fb(pp), order(pp);
  for (int s = 0; s < pp; ++s) fb[s] = one_f_one_b(pp, s, m);
  // done[s][pass][mb] = finish time in units, or -1.
  std::vector<std::vector<std::vector<long>>> done(
      pp, std::vector<std::vector<long>>(3, std::vector<long>(m, -1)));
  std::vector<std::size_t> next(pp, 0);
  // B passes run in micro-batch order: `backwarded` counts them (recounting each time made
  // the build quadratic in m, 4 s at m = 32,768).
  std::vector<int> next_w(pp, 0), forwarded(pp, 0), backwarded(pp, 0);
  std::vector<long> free_at(pp, 0);
  const auto producer_finish = [&](int s, const PassId& p) -> long {
    if (p.pass == Pass::kForward) return s == 0 ? 0 : done[s - 1][0][p.micro_batch];
    return s == pp - 1 ? done[s][0][p.micro_batch] : done[s + 1][1][p.micro_batch];
  };
  const auto run = [&](int s, const PassId& p) {
    order[s].push_back(p);
    free_at[s] += 1;
    done[s][static_cast<int>(p.pass)][p.micro_batch] = free_at[s];
    if (p.pass == Pass::kBackward) ++backwarded[s];
  };
  for (;;) {
    int s = -1;
    for (int i = 0; i < pp; ++i) {
      const bool unfinished = next[i] < fb[i].size() || next_w[i] < m;
      if (unfinished && (s < 0 || free_at[i] < free_at[s])) s = i;
    }
    if (s < 0) break;
    const bool w_pending = next_w[s] < m && done[s][1][next_w[s]] >= 0;
    if (next[s] < fb[s].size()) {
      const PassId& p = fb[s][next[s]];
      const long ready = producer_finish(s, p);
      const bool memory_full = backwarded[s] - next_w[s] > s;
      if (ready >= 0 && ready <= free_at[s] && !(memory_full && w_pending)) {
        if (p.pass == Pass::kForward) ++forwarded[s];
        run(s, p);
        ++next[s];
        continue;
      }
      if (w_pending) {
        run(s, {Pass::kWeightGrad, next_w[s]++, 0});
        continue;
      }
      // Wait: until the producer finishes if it is scheduled, else until another stage moves.
      long wake = ready > free_at[s] ? ready : -1;
      if (wake < 0) {
        for (int i = 0; i < pp; ++i) {
          if (i != s && free_at[i] > free_at[s] && (wake < 0 || free_at[i] < wake)) wake = free_at[i];
        }
      }
      free_at[s] = wake < 0 ? free_at[s] + 1 : wake;
      continue;
    }
    if (w_pending) {
      run(s, {Pass::kWeightGrad, next_w[s]++, 0});
    } else {
      free_at[s] += 1;  // its last B has not run yet: cannot happen once fb is exhausted
    }
  }
  return order;
}

}  // namespace

int warmup_forwards(const PipelineSchedule& s, int stage) {
  switch (s.kind) {
    case Schedule::kInterleaved:
      return workload::interleaved_warmup(s.pp, s.vpp, s.group, stage, s.micro_batches);
    case Schedule::kOneFOneB:
    case Schedule::kZeroBubble: return one_f_one_b_warmup(s.pp, stage, s.micro_batches);
    case Schedule::kGpipe: return s.micro_batches;
  }
  return 0;
}

const char* to_string(Pass p) {
  switch (p) {
    case Pass::kForward: return "F";
    case Pass::kBackward: return "B";
    case Pass::kWeightGrad: return "W";
  }
  return "?";
}

PipelineSchedule build_schedule(Schedule kind, int pp, int vpp, int m, int group) {
  // Preconditions: workload::validate_plan, run once by io::load_inputs, holds the plan to them.
  if (group <= 0) group = pp;
  if (pp < 1 || vpp < 1 || m < 1) {
    throw std::invalid_argument(fmt::format("pipeline schedule: pp = {}, vpp = {} and micro-batches = {} "
                                 "must all be at least 1",
                                 pp, vpp, m));
  }
  if (vpp > 1 && kind != Schedule::kInterleaved) {
    throw std::invalid_argument(fmt::format("pipeline schedule: vpp = {} needs the interleaved schedule",
                                 vpp));
  }
  if (kind == Schedule::kInterleaved && m % group != 0) {
    throw std::invalid_argument(fmt::format("plan: the interleaved schedule needs the micro-batches per "
                                 "replica ({}) to be a multiple of the micro-batch group ({}; pp "
                                 "in Megatron-LM)",
                                 m, group));
  }
  PipelineSchedule s;
  s.kind = kind;
  s.pp = pp;
  s.vpp = vpp;
  s.group = group;
  s.micro_batches = m;
  if (kind == Schedule::kZeroBubble) {
    s.order = zero_bubble_h1(pp, m);
    return s;
  }
  for (int stage = 0; stage < pp; ++stage) {
    switch (kind) {
      case Schedule::kGpipe: {
        std::vector<PassId> order;
        for (int i = 0; i < m; ++i) order.push_back({Pass::kForward, i, 0});
        for (int i = 0; i < m; ++i) order.push_back({Pass::kBackward, i, 0});
        s.order.push_back(std::move(order));
        break;
      }
      case Schedule::kOneFOneB: s.order.push_back(one_f_one_b(pp, stage, m)); break;
      case Schedule::kInterleaved: s.order.push_back(interleaved(pp, vpp, group, stage, m)); break;
      case Schedule::kZeroBubble: break;  // built above
    }
  }
  return s;
}

Dependency dependency(const PipelineSchedule& s, int stage, const PassId& pass) {
  const int vs = s.virtual_stage(stage, pass.chunk);
  const int last = s.pp * s.vpp - 1;
  Dependency d;
  switch (pass.pass) {
    case Pass::kForward:
      if (vs == 0) return d;
      d.found = true;
      d.stage = s.stage_of(vs - 1);
      d.pass = {Pass::kForward, pass.micro_batch, s.chunk_of(vs - 1)};
      break;
    case Pass::kBackward:
      d.found = true;
      if (vs == last) {
        d.stage = stage;
        d.pass = {Pass::kForward, pass.micro_batch, pass.chunk};
      } else {
        d.stage = s.stage_of(vs + 1);
        d.pass = {Pass::kBackward, pass.micro_batch, s.chunk_of(vs + 1)};
      }
      break;
    case Pass::kWeightGrad:
      d.found = true;
      d.stage = stage;
      d.pass = {Pass::kBackward, pass.micro_batch, pass.chunk};
      break;
  }
  d.crosses_stages = d.stage != stage;
  return d;
}

namespace {

// Whether pass p of `stage` hands its output to another stage.
bool output_leaves_stage(const PipelineSchedule& s, int stage, const PassId& p) {
  if (p.pass == Pass::kWeightGrad || s.pp == 1) return false;
  const int vs = s.virtual_stage(stage, p.chunk);
  const int to = p.pass == Pass::kForward ? vs + 1 : vs - 1;
  return to >= 0 && to < s.pp * s.vpp && s.stage_of(to) != stage;
}

}  // namespace

std::vector<ProgramStep> blocking_p2p_program(const PipelineSchedule& s, int stage) {
  const std::vector<PassId>& order = s.order[stage];
  // The passes run between two exchanges, and whether the exchange after a group is one
  // combined call (true) or a send followed by a separate receive (false).
  std::vector<std::vector<PassId>> groups;
  std::vector<bool> combined;
  const bool interleaved = s.kind == workload::Schedule::kInterleaved;
  if (interleaved || s.kind == workload::Schedule::kOneFOneB) {
    // Warm-up forwards, steady-state (F, B) pairs, cool-down backwards. A forward-only run
    // (evaluation: forward_only=True) is all warm-up, as Megatron-LM takes every micro-batch
    // as one then.
    const bool forward_only = std::none_of(
        order.begin(), order.end(), [](const PassId& p) { return p.pass != Pass::kForward; });
    const auto steady =
        forward_only ? order.size() : static_cast<std::size_t>(warmup_forwards(s, stage));
    const std::size_t cooldown = steady + (order.size() - 2 * steady);
    for (std::size_t i = 0; i < order.size();) {
      const bool in_steady = i >= steady && i < cooldown;
      if (in_steady && interleaved) {
        groups.push_back({order[i], order[i + 1]});
        combined.push_back(true);
        i += 2;
        continue;
      }
      groups.push_back({order[i]});
      // 1F1B combines the steady state's exchanges but the one after its last backward; the
      // interleaved schedule combines all of them but, when every forward is warm-up, the
      // one after the last forward (a send_forward_recv_forward, then a recv_backward).
      const bool all_warmup = steady == cooldown;
      combined.push_back(interleaved ? !(all_warmup && i + 1 == steady)
                                     : in_steady && i + 1 < cooldown);
      ++i;
    }
  } else {
    for (const PassId& p : order) {
      groups.push_back({p});
      combined.push_back(false);
    }
  }

  std::vector<ProgramStep> program;
  // `sync_when_empty`: the exchange is one of the interleaved schedule's helpers.
  const auto exchange = [&](const std::vector<PassId>* sent, const std::vector<PassId>* next,
                            bool sync_when_empty) {
    ProgramStep x;
    x.exchange = true;
    if (sent != nullptr) {
      for (const PassId& p : *sent) {
        if (output_leaves_stage(s, stage, p)) x.sends.push_back(p);
      }
    }
    if (next != nullptr) {
      for (const PassId& p : *next) {
        if (dependency(s, stage, p).crosses_stages) x.recvs.push_back(p);
      }
    }
    if (sync_when_empty || !x.sends.empty() || !x.recvs.empty()) program.push_back(std::move(x));
  };
  // The first forward's receive is a recv_forward (returns early on the first stage).
  if (!groups.empty()) exchange(nullptr, &groups.front(), false);
  for (std::size_t g = 0; g < groups.size(); ++g) {
    for (const PassId& p : groups[g]) program.push_back({false, p, {}, {}});
    const std::vector<PassId>* next = g + 1 < groups.size() ? &groups[g + 1] : nullptr;
    if (combined[g]) {
      exchange(&groups[g], next, interleaved);
    } else {
      exchange(&groups[g], nullptr, interleaved);
      exchange(nullptr, next, false);
    }
  }
  return program;
}

bool blocking_sends_rendezvous(const PipelineSchedule& s) {
  return s.kind == workload::Schedule::kOneFOneB || s.kind == workload::Schedule::kInterleaved;
}

IdealResult simulate_ideal(const PipelineSchedule& s, const IdealTimes& t) {
  // finish[stage][pass][chunk * m + micro_batch]; -1 = not yet run.
  const int slots = s.vpp * s.micro_batches;
  std::vector<std::vector<std::vector<std::int64_t>>> finish(
      s.pp, std::vector<std::vector<std::int64_t>>(3, std::vector<std::int64_t>(slots, -1)));
  const auto at = [&](int stage, const PassId& p) -> std::int64_t& {
    return finish[stage][static_cast<int>(p.pass)][p.chunk * s.micro_batches + p.micro_batch];
  };
  const auto duration = [&](Pass p) {
    return p == Pass::kForward ? t.forward : p == Pass::kBackward ? t.backward : t.weight_grad;
  };
  std::vector<std::size_t> next(s.pp, 0);
  std::vector<std::int64_t> free_at(s.pp, 0);
  Time busy;
  for (const PassId& p : s.order[0]) busy += duration(p.pass);
  bool progress = true;
  while (progress) {
    progress = false;
    for (int stage = 0; stage < s.pp; ++stage) {
      while (next[stage] < s.order[stage].size()) {
        const PassId& p = s.order[stage][next[stage]];
        const Dependency d = dependency(s, stage, p);
        std::int64_t ready = 0;
        if (d.found) {
          const std::int64_t f = at(d.stage, d.pass);
          if (f < 0) break;
          ready = f + (d.crosses_stages ? t.p2p.ns() : 0);
        }
        const std::int64_t start = std::max(ready, free_at[stage]);
        free_at[stage] = at(stage, p) = start + duration(p.pass).ns();
        ++next[stage];
        progress = true;
      }
    }
  }
  for (int stage = 0; stage < s.pp; ++stage) {
    if (next[stage] != s.order[stage].size()) {
      throw std::logic_error(fmt::format("pipeline schedule deadlocks at stage {} pass {}", stage,
                                         next[stage]));
    }
  }
  IdealResult r;
  r.makespan = Time::from_ns(*std::max_element(free_at.begin(), free_at.end()));
  r.busy_per_stage = busy;
  r.bubble_fraction = static_cast<double>((r.makespan - busy).ns()) / static_cast<double>(busy.ns());
  return r;
}

}  // namespace megasim::step
