// What a cluster is made of, as the cluster file (topologies/*.json) states it: the node (GPUs,
// NVLink/NVSwitch, NICs, PCIe) and the fabric (a 2- or 3-tier Clos of identical switches, port
// splitting, rail or ToR wiring, oversubscription per tier, per-hop latency). Plain values; the
// strict loader is io/cluster_loader.h, the graph built from it is net/topology.h.
//
// Link rates here are raw line rates; each medium carries an efficiency (payload over wire
// bytes: encoding, headers) and the topology's link capacities are raw rate x efficiency, so
// the flow solver shares payload goodput.
#pragma once

#include <cstdint>
#include <string>

#include "engine/time.h"
#include "engine/units.h"

namespace megasim::net {

struct NodeSpec {
  int gpus = 8;
  std::string gpu;                  // device profile name
  BytesPerSec nvlink_per_gpu;       // per direction, raw
  double nvlink_efficiency = 1.0;   // payload / raw
  Time nvlink_latency;              // GPU -> NVSwitch (one hop)
  int nics = 8;
  BytesPerSec nic;                  // per direction, raw
  double nic_efficiency = 1.0;
  BytesPerSec pcie;                 // GPU <-> NIC, per direction
  Time pcie_latency;

  // What a NIC's traffic moves at: its payload rate, or its GPU's PCIe link where that is slower
  // (NCCL's path search takes the slowest link between GPU and NIC; the NIC's rate alone until
  // 2026-12-06, which no shipped node's PCIe limits).
  BytesPerSec nic_path() const {
    const BytesPerSec payload = nic * nic_efficiency;
    return pcie < payload ? pcie : payload;
  }
};

// How NICs reach the first switch tier: kRail puts NIC i of every server of a group on rail
// i's ToR (MegaScale's multi-rail, NVIDIA's rail-optimised SuperPOD); kTor puts every NIC of a
// server (rack) on the same ToR.
enum class Wiring { kRail, kTor };

struct FabricSpec {
  int tiers = 0;                    // 0: no fabric (single node); else 2 or 3
  Wiring wiring = Wiring::kRail;
  int radix = 64;                   // ToR ports (physical)
  int agg_radix = 64;               // aggregation and spine switch ports
  BytesPerSec port;                 // physical port rate
  int port_split = 1;               // a downlink port split into this many NIC ports
  int tor_down_ports = 32;          // physical ToR ports facing NICs
  int pod_tors = 32;                // ToRs under one set of aggregation switches
  double tor_oversubscription = 1.0;  // ToR down : up capacity
  double agg_oversubscription = 1.0;  // aggregation down : up capacity (3 tiers)
  double link_efficiency = 1.0;     // switch-to-switch links
  Time hop_latency;                 // per fabric link a path crosses (NIC-ToR links included)
};

struct ClusterSpec {
  std::string name;
  int gpus = 0;
  NodeSpec node;
  FabricSpec fabric;
};

// How a fabric's ToRs are laid out for a cluster: what Topology builds, and what the cluster
// loader checks against the ports before it is built. Counts only; no checks.
struct FabricLayout {
  std::int64_t nic_ports = 0;        // NIC-facing ports of a ToR: down ports × port_split
  std::int64_t servers_per_tor = 0;  // servers of a ToR group (rail: one NIC each per ToR)
  std::int64_t nodes = 0, tors = 0;
  std::int64_t uplinks = 0;  // a ToR's uplink ports (radix less its down ports)
  // Of them, those cabled, one to each aggregation switch of its pod: as many as carry the
  // ToR's down capacity over its oversubscription at the port's rate, at least one (an
  // oversubscribed ToR leaves ports empty; until 2026-12-06 it cabled them all at a fraction
  // of their rate, and the power model counted an aggregation switch for each).
  std::int64_t cabled = 0;
  std::int64_t attached = 0;  // NIC ports that carry a NIC (ToR wiring: whole servers only)
};
FabricLayout fabric_layout(const FabricSpec& f, const NodeSpec& n, std::int64_t gpus);

}  // namespace megasim::net
