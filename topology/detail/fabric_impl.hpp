// Private: the representation behind topology::Fabric, shared by fabric.cpp (builder),
// fabric_names.cpp (names) and fabric_route.cpp (routing).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "topology/fabric.hpp"

namespace twinscale::topology {

struct Fabric::Impl {
  ClusterSpec spec;
  ClosShape shape;
  std::vector<Vertex> vertices;
  std::vector<Link> links;
  // First vertex id of each kind, and first link id of each kind.
  uint32_t v_nvswitch = 0, v_nic = 0, v_tor = 0, v_agg = 0, v_spine = 0;
  uint32_t l_pcie = 0, l_nic = 0, l_tor_up = 0, l_agg_up = 0;

  int64_t server_of(int64_t gpu) const { return shape.server_of(gpu); }
  int64_t nic_of(int64_t gpu) const {
    return server_of(gpu) * shape.nics_per_server + (gpu % shape.gpus_per_server) % shape.nics_per_server;
  }
  int64_t tor_of_nic(int64_t nic) const {
    const int64_t server = nic / shape.nics_per_server;
    const int64_t rail = (nic % shape.nics_per_server) % shape.rails;
    return (server / shape.servers_per_tor) * shape.rails + rail;
  }
  // 3 tiers: the pod of a ToR (block·rails + rail) and its position inside the pod.
  int64_t pod_of_tor(int64_t tor) const {
    const int64_t group = tor / shape.rails, rail = tor % shape.rails;
    return (group / shape.tors_per_pod) * shape.rails + rail;
  }
  int64_t pos_in_pod(int64_t tor) const { return (tor / shape.rails) % shape.tors_per_pod; }
  /// Spine plane of aggregation switch `agg` (3 tiers): its index in the pod, per rail
  /// when rail-only (pods of rail r are those with pod mod rails = r).
  int64_t spine_plane_of_agg(int64_t agg) const {
    const int64_t a = agg % shape.aggs_per_pod;
    return shape.rail_only ? ((agg / shape.aggs_per_pod) % shape.rails) * shape.aggs_per_pod + a : a;
  }

  // Routing's per-GPU and per-ToR coordinates, computed once (index_routing) so that a
  // route reads them instead of re-deriving them with a dozen integer divisions: each
  // GPU's server, NIC, ToR and IdealSpread port position under its ToR; each ToR's pod
  // and position in it (3 tiers).
  struct GpuEnd {
    uint32_t server, nic, tor, port;
  };
  struct TorPlace {
    uint32_t pod, pos;
  };
  std::vector<GpuEnd> gpu_end;
  std::vector<TorPlace> tor_place;

  // Links incident to each vertex (CSR: incident[offset[v] .. offset[v+1])).
  std::vector<uint32_t> incident_offset;
  std::vector<uint32_t> incident;

  void add_link(uint32_t a, uint32_t b, LinkKind kind, double bw, double lat) {
    links.push_back(Link{a, b, kind, bw, lat});
  }

  // The builder's stages after validation and shape (fabric.cpp); `c` names the cluster.
  void add_vertices(const std::string& c);
  void add_links();
  void index_incidence();
  void index_routing();
};

namespace detail {

inline void check(bool ok, const char* what) {
  if (!ok) throw std::logic_error(std::string("internal error in topology/fabric: ") + what);
}

inline void check_gpu(const Fabric& f, int64_t gpu) {
  if (gpu < 0 || gpu >= f.gpus())
    throw TopologyError("GPU " + std::to_string(gpu) + " does not exist: cluster '" + f.spec().name + "' has GPUs 0.." +
                        std::to_string(f.gpus() - 1));
}

} // namespace detail

} // namespace twinscale::topology
