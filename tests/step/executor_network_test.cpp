// The executor's PP and DP traffic on one shared network, hand-worked on a tiny fabric: two
// servers of two GPUs, one 10 GB/s NIC each, under one ToR; NVLink and PCIe far faster, so a
// server's NIC is the only link flows can share. One NCCL channel, so a two-rank ring sends
// one flow each way.
#include <doctest/doctest.h>

#include <vector>

#include "collective/collective_engine.h"
#include "io/cluster_loader.h"
#include "io/collective_constants_reader.h"
#include "net/topology.h"
#include "step/executor.h"
#include "step/pipeline_schedule.h"
#include "step/pp_sends.h"

using namespace megasim;
using namespace megasim::step;
using workload::Schedule;

namespace {

constexpr double kNic = 10e9;

net::ClusterSpec two_servers() {
  net::ClusterSpec c;
  c.name = "two-servers";
  c.gpus = 4;
  c.node.gpus = 2;
  c.node.nvlink_per_gpu = BytesPerSec(1e12);
  c.node.nics = 1;
  c.node.nic = BytesPerSec(kNic);
  c.node.pcie = BytesPerSec(1e12);
  c.fabric.tiers = 2;
  c.fabric.wiring = net::Wiring::kTor;
  c.fabric.radix = 8;
  c.fabric.agg_radix = 8;
  c.fabric.port = BytesPerSec(kNic);
  c.fabric.tor_down_ports = 4;
  c.fabric.pod_tors = 1;
  return c;
}

struct Fabric {
  net::Topology topology{two_servers()};
  hw::CollectiveConstants constants = [] {
    auto k = io::read_collective_constants(MEGASIM_SOURCE_DIR "/calibrate/profiles/a100-sxm4-80gb.json");
    k.channels = 1;
    return k;
  }();
  // The call alone on this fabric: its time and its latency term.
  std::pair<Time, Time> alone(const collective::CollectiveCall& call) const {
    Simulator sim;
    net::FlowSolver solver(sim, topology, net::Routing::kEcmp);
    collective::CollectiveEngine engine(sim, topology, solver, constants);
    const auto p = engine.predict(call);
    const auto shape = collective::comm_shape(topology, call.gpus);
    return {p.time, engine.model().cost(call, shape, p.algorithm, p.protocol).latency};
  }
};

// F = 10 us, B = 20 us, one chunk, no priced communication.
std::vector<StageCosts> stages(int pp) {
  StageCosts c;
  c.forward = {Time::from_us(10)};
  c.backward = {Time::from_us(20)};
  c.weight_grad = c.forward_tp = c.backward_tp = c.weight_grad_tp = {Time::zero()};
  c.dp_reduce_scatter = c.dp_all_gather = {Time::zero()};
  return std::vector<StageCosts>(pp, c);
}

StageTraffic reduce_scatter(Bytes bytes) {
  StageTraffic t;
  t.reduce_scatter = {{DpPart{true, hw::CollectiveOp::kReduceScatter, bytes, Time::zero()}}};
  t.all_gather = {{}};
  return t;
}

}  // namespace

TEST_CASE("network: two DP groups on one NIC each get half of it, and the step pays for it") {
  // TP 2, DP 2, one stage: GPU d·2 + t. Each TP rank's DP group {t, 2 + t} crosses the NICs.
  // One micro-batch: F [0,10], B [10,30], then the reduce-scatter. Alone (one rail issued) it
  // takes T = L + X; with both groups on the NIC each flow gets 5 GB/s: L + 2X.
  Fabric f;
  const Bytes bytes(1e8);
  collective::CollectiveCall call;
  call.op = hw::CollectiveOp::kReduceScatter;
  call.gpus = {0, 2};
  call.bytes = bytes;
  const auto [t_alone, latency] = f.alone(call);
  const auto sched = build_schedule(Schedule::kOneFOneB, 1, 1, 1);
  const auto costs = stages(1);
  for (const bool full : {false, true}) {
    Time step[3];
    for (int rails : {1, 2}) {
      ExecutorNetwork net{&f.topology, &f.constants, [](int, int d, int t) { return d * 2 + t; },
                          rails, {reduce_scatter(bytes)}};
      ExecutorConfig cfg;
      cfg.tp = 2;
      cfg.dp = 2;
      cfg.full = full;
      cfg.network = &net;
      step[rails] = execute_step(sched, costs, cfg).step_time;
    }
    CHECK(step[1] == Time::from_us(30) + t_alone);
    const Time x = t_alone - latency;
    CHECK(std::abs((step[2] - (Time::from_us(30) + latency + x * 2)).ns()) <= 1);
    CHECK(step[2] > step[1]);
  }
}

TEST_CASE("network: a PP send and a DP reduce-scatter on the same NIC share it") {
  // PP 2, DP 2, TP 1. Stage 0: d0 on GPU 0, d1 on GPU 2; stage 1: d0 on GPU 3, d1 on GPU 1.
  // Asynchronous PP, DP after the passes. Stage 1 ends its only backward and at once sends the
  // gradient (3 -> 0, 1 -> 2) and starts its reduce-scatter (3 -> 1, 1 -> 3): on each NIC one
  // PP flow meets one DP flow. The DP flow is the longer (over 5e7 bytes against 1e7), so the
  // PP flow runs at half the NIC throughout: its send takes 1e7 / 10 GB/s = 1 ms longer than
  // alone.
  Fabric f;
  const auto sched = build_schedule(Schedule::kOneFOneB, 2, 1, 1);
  const auto costs = stages(2);
  auto gpu = [](int s, int d, int) { return s == 0 ? 2 * d : 3 - 2 * d; };
  auto gradient_send = [&](Bytes dp_bytes, bool full) {
    StageTraffic t = reduce_scatter(dp_bytes);
    t.pp_on_network = true;
    t.pp_bytes = Bytes(1e7);
    ExecutorNetwork net{&f.topology, &f.constants, gpu, 1, {t, t}};
    ExecutorConfig cfg;
    cfg.pp_overlap = true;
    cfg.dp = 2;
    cfg.full = full;
    cfg.record_trace = true;
    cfg.network = &net;
    const auto r = execute_step(sched, costs, cfg);
    for (const auto& rec : r.trace) {
      if (rec.stage == 1 && rec.stream == "pp") return std::pair{rec.end - rec.start, r.step_time};
    }
    FAIL("no gradient send");
    return std::pair{Time::zero(), Time::zero()};
  };
  for (const bool full : {false, true}) {
    const auto [alone, step_alone] = gradient_send(Bytes(0), full);
    const auto [shared, step_shared] = gradient_send(Bytes(1e8), full);
    CHECK(std::abs((shared - alone - Time::from_ms(1)).ns()) <= 1);
    CHECK(step_shared > step_alone);
  }
  // Folded (one rank per stage, every replica's flows issued) and full agree: the plan is
  // symmetric and the fabric has one path between any two servers.
  CHECK(gradient_send(Bytes(1e8), false) == gradient_send(Bytes(1e8), true));
}

TEST_CASE("network: flows merged by path finish when the flows apart would") {
  // 16 channels of a 32-node ring on the MegaScale fabric: edges under one ToR take one path
  // for every channel and run as one weighted flow; edges between ToRs spread by ECMP.
  net::Topology topology{io::load_cluster(MEGASIM_SOURCE_DIR "/topologies/megascale-a100-12288.json")};
  const auto constants =
      io::read_collective_constants(MEGASIM_SOURCE_DIR "/calibrate/profiles/a100-sxm4-80gb.json");
  collective::CollectiveCall call;
  call.op = hw::CollectiveOp::kReduceScatter;
  call.bytes = Bytes(4e8);
  for (int node = 0; node < 64; node += 2) call.gpus.push_back(node * 8);
  Time done[2];
  std::uint64_t flows_solved[2] = {0, 0};
  for (const bool merge : {false, true}) {
    Simulator sim;
    net::FlowSolver solver(sim, topology, net::Routing::kEcmp);
    collective::CollectiveEngine engine(sim, topology, solver, constants);
    engine.merge_identical_flows(merge);
    engine.launch(call, [&] { done[merge] = sim.now(); });
    sim.run();
    flows_solved[merge] = solver.flows_solved();
  }
  CHECK(std::abs((done[1] - done[0]).ns()) <= 1);
  CHECK(flows_solved[1] < flows_solved[0]);
}

TEST_CASE("network: coflows give every replica's PP message the rates of separate flows on a symmetric plan") {
  // Four single-GPU servers under one ToR, PP 2, DP 2: replica d's stages on servers 2d and
  // 2d + 1, so the replicas' PP messages cross different NICs and each replica's flows are a
  // copy of replica 0's; 1F1B over four micro-batches keeps messages (1 ms each alone) in
  // flight together, and each stage's reduce-scatter crosses both replicas' NICs while they
  // are. Folded with coflows (on replica 0's links, net/link_fold.h), folded with every flow
  // apart, and full all give the same step.
  net::ClusterSpec spec = two_servers();
  spec.gpus = 4;
  spec.node.gpus = 1;
  Fabric f;
  net::Topology topology{spec};
  const auto sched = build_schedule(Schedule::kOneFOneB, 2, 1, 4);
  const auto costs = stages(2);
  StageTraffic t = reduce_scatter(Bytes(3e7));
  t.pp_on_network = true;
  t.pp_bytes = Bytes(1e7);
  auto run = [&](bool full, bool coflows) {
    ExecutorNetwork net{&topology, &f.constants, [](int s, int d, int) { return 2 * d + s; }, 1,
                        {t, t}};
    net.coflows = coflows;
    ExecutorConfig cfg;
    cfg.pp_overlap = true;
    cfg.dp_overlap = true;
    cfg.dp = 2;
    cfg.full = full;
    cfg.network = &net;
    return execute_step(sched, costs, cfg);
  };
  const auto together = run(false, true);
  const auto apart = run(false, false);
  const auto full = run(true, true);
  CHECK(together.network_flows_solved < apart.network_flows_solved);
  CHECK(std::abs((together.step_time - apart.step_time).ns()) <= 1);
  CHECK(std::abs((together.step_time - full.step_time).ns()) <= 1);
  for (std::size_t s = 0; s < 2; ++s) {
    CHECK(std::abs((together.stages[s].pp_exposed - apart.stages[s].pp_exposed).ns()) <= 2);
    CHECK(std::abs((together.stages[s].end - full.stages[s].end).ns()) <= 1);
  }
}

// Four single-GPU servers under one ToR, replica d's stages on servers 2d and 2d + 1, PP
// messages of 1e7 bytes: the executor's PP sends on their own solver, for tests that drive them.
struct ReplicaPairs {
  explicit ReplicaPairs(bool coflows) {
    net.coflows = coflows;
  }
  static net::ClusterSpec spec() {
    net::ClusterSpec c = two_servers();
    c.gpus = 4;
    c.node.gpus = 1;
    return c;
  }
  static StageTraffic traffic() {
    StageTraffic t;
    t.pp_on_network = true;
    t.pp_bytes = Bytes(1e7);
    return t;
  }
  Fabric f;
  net::Topology topology{spec()};
  ExecutorNetwork net{&topology, &f.constants, [](int s, int d, int) { return 2 * d + s; }, 1,
                      {traffic(), traffic()}};
  Simulator sim;
  net::FlowSolver solver{sim, topology, net::Routing::kEcmp};
  collective::CollectiveEngine engine{sim, topology, solver, f.constants};
  detail::PpSends sends{sim, engine, net, 2, 1, 2, nullptr};
};

TEST_CASE("network: a PP message's copies move in lockstep, and end when the slowest would") {
  // The fabric above, replica d's stages on servers 2d and 2d + 1. Both replicas send 1e7
  // bytes at 0 (alone 1e7 / 10 GB/s = 1 ms). At 0.5 ms a long flow leaves replica 1's stage-0
  // server (GPU 2) for GPU 0 and takes half of its NIC: replica 1's copy sends its last 5e6
  // bytes at 5 GB/s, to 1.5 ms. As one coflow both copies slow down (one flow in flight), as
  // flows apart replica 0's ends at 1 ms; the message is done at 1.5 ms plus the send latency
  // either way.
  for (const bool coflows : {true, false}) {
    ReplicaPairs p(coflows);
    Simulator& sim = p.sim;
    collective::CollectiveEngine& engine = p.engine;
    Time done;
    p.sends.send_all(0, 1, [&] { done = sim.now(); });
    std::size_t in_flight = 0;
    sim.at(Time::from_us(500), [&] {
      in_flight = p.solver.active_flows();
      engine.send(2, 0, Bytes(1e9), 7, [] {});
    });
    std::size_t at_1200us = 0;
    sim.at(Time::from_us(1200), [&] { at_1200us = p.solver.active_flows(); });
    sim.run_until(Time::from_ms(10));
    CHECK(in_flight == (coflows ? 1u : 2u));
    CHECK(at_1200us == 2u);  // the long flow and the copy (or coflow) still sending
    const Time latency = engine.send_latency(0, 1, Bytes(1e7));
    CHECK(std::abs((done - (Time::from_us(1500) + latency)).ns()) <= 1);
  }
}

TEST_CASE("network: full mode joins the replicas that send one message at one instant") {
  // The fabric above. Replicas 0 and 1 send stage 0's message at 0: one coflow over both
  // copies (one flow in flight). At 0.2 ms replica 1's stage 1 sends back (GPU 3 -> 2, the
  // other direction of the same links), alone: its own flow. Each message alone takes 1 ms at
  // 10 GB/s and none shares a link with another, so the joined copies end at 1 ms and the late
  // one at 1.2 ms, each plus its send latency.
  ReplicaPairs p(true);
  Simulator& sim = p.sim;
  collective::CollectiveEngine& engine = p.engine;
  Time done[3];
  p.sends.send_one(0, 0, 1, [&] { done[0] = sim.now(); });
  p.sends.send_one(1, 0, 1, [&] { done[1] = sim.now(); });
  std::size_t together = 0, then = 0;
  sim.at(Time::from_us(100), [&] { together = p.solver.active_flows(); });
  sim.at(Time::from_us(200), [&] { p.sends.send_one(1, 1, 0, [&] { done[2] = sim.now(); }); });
  sim.at(Time::from_us(300), [&] { then = p.solver.active_flows(); });
  sim.run();
  CHECK(together == 1u);
  CHECK(then == 2u);
  const Time latency = engine.send_latency(0, 1, Bytes(1e7));
  CHECK(std::abs((done[0] - (Time::from_ms(1) + latency)).ns()) <= 1);
  CHECK(done[1] == done[0]);
  const Time back = engine.send_latency(3, 2, Bytes(1e7));
  CHECK(std::abs((done[2] - (Time::from_us(1200) + back)).ns()) <= 1);
}

TEST_CASE("network: a PP message's copy across nodes does not pay the NVLink send factor of one inside") {
  // Three servers of two GPUs. Replica 0's stages share server 0 (GPU 0 -> 1, NVLink, where a
  // send puts p2p_nvlink_flow_scale times its bytes on the wire); replica 1's are on servers 1
  // and 2 (GPU 2 -> 4, through the 10 GB/s NICs). The copies run as one coflow: the one across
  // nodes moves its 1e7 bytes in 1 ms, not 1e7 times the factor, and the NVLink copy is far
  // faster, so the message ends at 1 ms plus the larger send latency.
  Fabric f;
  net::ClusterSpec spec = two_servers();
  spec.gpus = 6;
  net::Topology topology{spec};
  StageTraffic t;
  t.pp_on_network = true;
  t.pp_bytes = Bytes(1e7);
  ExecutorNetwork net{&topology, &f.constants,
                      [](int s, int d, int) { return d == 0 ? s : (s == 0 ? 2 : 4); }, 1, {t, t}};
  net.coflows = true;
  Simulator sim;
  net::FlowSolver solver{sim, topology, net::Routing::kEcmp};
  collective::CollectiveEngine engine{sim, topology, solver, f.constants};
  REQUIRE(engine.model().p2p_nvlink_flow_scale() > 1.05);  // the profile prices NVLink sends lower
  detail::PpSends sends{sim, engine, net, 2, 1, 2, nullptr};
  Time done;
  sends.send_all(0, 1, [&] { done = sim.now(); });
  sim.run();
  const Time latency = std::max(engine.send_latency(0, 1, Bytes(1e7)),
                                engine.send_latency(2, 4, Bytes(1e7)));
  CHECK(std::abs((done - (Time::from_ms(1) + latency)).ns()) <= 1);
}
