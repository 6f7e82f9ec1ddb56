// The fabric graph built from a ClusterSpec: GPUs, NVSwitches, NICs, ToR, aggregation and
// spine switches, with links that carry a bandwidth per direction and a latency.
// Routing is computed per flow on demand (no all-pairs tables): see route().
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "topology/cluster.hpp"

namespace twinscale::topology {

/// A cluster that cannot be built (does not fit the radix or tiers…): the message gives
/// the key and the arithmetic that failed.
class TopologyError : public std::runtime_error {
public:
  explicit TopologyError(const std::string& what) : std::runtime_error(what) {}
};

enum class VertexKind : uint8_t { Gpu, NvSwitch, Nic, Tor, Aggregation, Spine };
enum class LinkKind : uint8_t { NvLink, Pcie, NicToTor, TorToAggregation, AggregationToSpine, TorToSpine };

struct Vertex {
  VertexKind kind = VertexKind::Gpu;
  int64_t index = 0;                   // index among vertices of its kind
};

/// A full-duplex link; bandwidth is per direction. `a` is the end nearer the GPUs.
struct Link {
  uint32_t a = 0;                      // vertex ids
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

enum class EcmpPolicy : uint8_t {
  Hash,        // hash of (src, dst, flow id, seed) over equal-cost next hops, as switches do
  IdealSpread, // perfect spreading (round-robin by flow), the bound to compare against
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

  /// The links a flow from `src_gpu` to `dst_gpu` crosses. Inside a server: GPU →
  /// NVSwitch → GPU. Between servers: GPU → its rail NIC → ToR → … → NIC → GPU, the
  /// up-path chosen per flow by `policy` (O(1) per hop, nothing precomputed per pair).
  void route(int64_t src_gpu, int64_t dst_gpu, uint64_t flow_id, uint64_t seed,
             EcmpPolicy policy, std::vector<Hop>& out) const;

private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

} // namespace twinscale::topology
