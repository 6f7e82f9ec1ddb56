// The fabric graph built from a ClusterSpec: GPUs, NVSwitches, NICs, ToR, aggregation and
// spine switches, with links that carry a bandwidth per direction and a latency.
// Routing is computed per flow on demand (no all-pairs tables): see route().
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"
#include "topology/cluster.hpp"

namespace twinscale::topology {

/// A cluster that cannot be built (does not fit the radix or tiers…): the message gives
/// the key and the arithmetic that failed.
class TopologyError : public Error {
public:
  explicit TopologyError(const std::string& what) : Error(what) {}
};

enum class VertexKind : uint8_t { Gpu, NvSwitch, Nic, Tor, Aggregation, Spine };
enum class LinkKind : uint8_t { NvLink, Pcie, NicToTor, TorToAggregation, AggregationToSpine, TorToSpine };

struct Vertex {
  VertexKind kind = VertexKind::Gpu;
  int64_t index = 0; // index among vertices of its kind
};

/// A full-duplex link; bandwidth is per direction. `a` is the end nearer the GPUs.
struct Link {
  uint32_t a = 0; // vertex ids
  uint32_t b = 0;
  LinkKind kind = LinkKind::NvLink;
  double bw_bytes_per_s = 0;
  double latency_s = 0;
};

/// One hop of a path: a link, crossed from a to b (up) or from b to a (down).
struct Hop {
  uint32_t link = 0;
  bool up = true;
};

/// A hop carrying a fraction of a flow (fluid spreading over equal-cost paths).
struct WeightedHop {
  uint32_t link = 0;
  bool up = true;
  double fraction = 1;
};

enum class EcmpPolicy : uint8_t {
  Hash,        // hash of (src, dst, flow id, seed) over equal-cost next hops, as switches do
  IdealSpread, // round-robin at each up-hop by flow id + the source NIC's port position
               // under its ToR (a ToR's flows with one id take distinct uplinks); one
               // path per flow, so not a bound: spread() is the fluid bound
};

/// The Clos arithmetic derived from a ClusterSpec when a Fabric is built (all counts are
/// of what exists in the built fabric; see fabric.cpp for how each is derived).
struct ClosShape {
  int64_t tiers = 3;
  int64_t gpus = 0;
  int64_t servers = 0;
  int64_t gpus_per_server = 0;
  int64_t nics_per_server = 0;
  int64_t rails = 0;
  int64_t nics_per_server_per_tor = 0; // nics / rails: a server's NIC ports on one ToR
  int64_t servers_per_tor = 0;
  int64_t server_groups = 0; // servers sharing one ToR per rail
  bool split_downlinks = false;
  double nic_link_bw_bytes_per_s = 0; // NIC ↔ ToR link, per direction
  int64_t radix = 0;
  int64_t tor_down_ports = 0; // radix ports (at port_bw) facing servers
  int64_t tor_up_ports = 0;
  int64_t tor_down_ports_used = 0; // by servers_per_tor full server groups
  int64_t tors = 0;                // server_groups × rails
  // 3 tiers: a pod is one rail's ToRs from tors_per_pod consecutive server groups, wired
  // to aggs_per_pod aggregation switches with links_per_agg parallel links per ToR–agg
  // pair (aggs_per_pod · links_per_agg = tor_up_ports).
  int64_t tors_per_pod = 0;
  int64_t blocks = 0; // server groups / tors_per_pod, rounded up
  int64_t pods = 0;   // blocks × rails
  int64_t aggs_per_pod = 0;
  int64_t links_per_agg = 0; // parallel links from a ToR to each agg of its pod
  int64_t agg_down_ports = 0;
  int64_t agg_up_ports = 0;
  int64_t aggs = 0;
  // Spines: plane p holds the spines wired to aggregation switch p of every pod (3 tiers),
  // or the single plane every ToR reaches (2 tiers). Each lower switch has
  // links_per_spine parallel links to each spine of its plane.
  int64_t spine_planes = 0;
  int64_t spines_per_plane = 0;
  int64_t spines = 0;
  int64_t links_per_spine = 0;
  // Rail-only: spine plane p of rail r serves only rail r (planes = rails × the planes
  // above); no path between rails exists in the network.
  bool rail_only = false;

  /// A GPU's server and rail (the arithmetic behind Fabric::server_of_gpu and
  /// rail_of_gpu, for a GPU index already checked: 0 ≤ gpu < gpus).
  int64_t server_of(int64_t gpu) const { return gpu / gpus_per_server; }
  int64_t rail_of(int64_t gpu) const { return gpu % gpus_per_server % nics_per_server % rails; }
};

class Fabric {
public:
  explicit Fabric(const ClusterSpec& spec); // throws TopologyError

  const ClusterSpec& spec() const;
  const std::vector<Vertex>& vertices() const;
  const std::vector<Link>& links() const;
  int64_t gpus() const;
  int64_t servers() const;
  int64_t server_of_gpu(int64_t gpu) const;
  uint32_t gpu_vertex(int64_t gpu) const;
  const ClosShape& shape() const;

  // Wiring of one GPU (GPU i of a server uses NIC i mod nics, on rail nic mod rails).
  int64_t local_index_of_gpu(int64_t gpu) const;
  int64_t nic_of_gpu(int64_t gpu) const; // global NIC index (server·nics + nic)
  int64_t rail_of_gpu(int64_t gpu) const;
  int64_t tor_of_gpu(int64_t gpu) const; // global ToR index (group·rails + rail)
  int64_t group_of_server(int64_t server) const;
  uint32_t nic_vertex(int64_t nic) const;
  uint32_t tor_vertex(int64_t tor) const;
  /// The links incident to a vertex, in id order (e.g. every link a failed switch takes down).
  std::span<const uint32_t> links_of_vertex(uint32_t vertex) const;
  /// Zero-load latency of a path from `src_gpu`: the links' latencies plus the switch
  /// latency for every ToR, aggregation and spine switch crossed (NVSwitch and NIC
  /// latencies are not modelled here).
  double path_latency_s(int64_t src_gpu, const std::vector<Hop>& path) const;

  // Names (for fault plans, traces and reports). Vertices: "server12.gpu3",
  // "server12.nvswitch", "server12.nic3", "tor5.r3" (server group 5, rail 3),
  // "agg2.pod1.r3" (aggregation switch 2 of block 1's pod on rail 3), "spine17".
  // Links: "<a>-<b>#k", a the end nearer the GPUs, k the index among parallel links
  // between the same two switches (0 when single); "#0" may be omitted in find_link.
  std::string vertex_name(uint32_t vertex) const;
  std::optional<uint32_t> find_vertex(std::string_view name) const;
  std::string link_name(uint32_t link) const;
  std::optional<uint32_t> find_link(std::string_view name) const;
  std::string server_name(int64_t server) const; // "server12"
  std::optional<int64_t> find_server(std::string_view name) const;
  std::string gpu_name(int64_t gpu) const; // "server12.gpu3"
  std::optional<int64_t> find_gpu(std::string_view name) const;

  /// The links a flow from `src_gpu` to `dst_gpu` crosses (replaces `out`). Inside a
  /// server: GPU → NVSwitch → GPU. Between servers: GPU → its NIC (PCIe) → ToR → … →
  /// NIC → GPU. Same-rail traffic of one block stays in the rail's ToR/aggregation plane;
  /// other traffic crosses a spine. Every equal-cost choice (uplink at a ToR and at an
  /// aggregation switch, parallel link down from a spine or an aggregation switch) is
  /// made per flow by `policy` at that switch: O(1) per hop, no per-pair tables. A flow
  /// keeps its path for a given (src, dst, flow_id, seed). src == dst gives an empty
  /// path; a GPU id out of range throws TopologyError. Rail-only fabric, servers apart
  /// and rails different: GPU → NVSwitch → the GPU of the source's server with the
  /// destination's local index (on its rail), then that GPU's path (PXN-like).
  /// The relay GPU of such a transfer (src itself when no NVLink hop is needed).
  int64_t rail_relay(int64_t src_gpu, int64_t dst_gpu) const;
  void route(int64_t src_gpu, int64_t dst_gpu, uint64_t flow_id, uint64_t seed, EcmpPolicy policy,
             std::vector<Hop>& out) const;

  /// Fluid ECMP: every link the flow's equal-cost paths cross, with the fraction of the
  /// flow it carries when split evenly at every up-hop (the ideal-spreading bound).
  /// O(ToR up ports + aggs per pod × agg up ports) per flow.
  void spread(int64_t src_gpu, int64_t dst_gpu, std::vector<WeightedHop>& out) const;

private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

} // namespace twinscale::topology
