#include "topology/analysis.hpp"

#include <algorithm>
#include <numeric>

#include <boost/graph/breadth_first_search.hpp>
#include <boost/graph/visitors.hpp>

#include "topology/graph_view.hpp"

namespace twinscale::topology {

const char* to_string(LinkKind kind) {
  switch (kind) {
  case LinkKind::NvLink: return "nvlink";
  case LinkKind::Pcie: return "pcie";
  case LinkKind::NicToTor: return "nic-tor";
  case LinkKind::TorToAggregation: return "tor-aggregation";
  case LinkKind::AggregationToSpine: return "aggregation-spine";
  case LinkKind::TorToSpine: return "tor-spine";
  }
  return "?";
}

const char* to_string(VertexKind kind) {
  switch (kind) {
  case VertexKind::Gpu: return "gpu";
  case VertexKind::NvSwitch: return "nvswitch";
  case VertexKind::Nic: return "nic";
  case VertexKind::Tor: return "tor";
  case VertexKind::Aggregation: return "aggregation";
  case VertexKind::Spine: return "spine";
  }
  return "?";
}

namespace {

/// Longest shortest path (in links) from any of `sources` to any GPU.
int64_t gpu_eccentricity(const Fabric& f, const FabricGraph& g, const std::vector<int64_t>& sources) {
  const size_t n = f.vertices().size();
  std::vector<uint32_t> dist(n);
  int64_t worst = 0;
  for (int64_t src : sources) {
    std::fill(dist.begin(), dist.end(), UINT32_MAX);
    const uint32_t s = f.gpu_vertex(src);
    dist[s] = 0;
    boost::breadth_first_search(
        g, s, boost::visitor(boost::make_bfs_visitor(boost::record_distances(dist.data(), boost::on_tree_edge()))));
    for (int64_t gpu = 0; gpu < f.gpus(); ++gpu) {
      const uint32_t d = dist[static_cast<size_t>(f.gpu_vertex(gpu))];
      if (d != UINT32_MAX) worst = std::max<int64_t>(worst, d);
    }
  }
  return worst;
}

struct UnionFind {
  std::vector<uint32_t> parent;
  explicit UnionFind(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0u); }
  uint32_t find(uint32_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  }
  void unite(uint32_t a, uint32_t b) { parent[find(a)] = find(b); }
};

/// Capacity of each tier (per direction), the ToR and aggregation oversubscription, and
/// the bisection bandwidth with the tier that limits it.
void summarise_tiers(const Fabric& f, FabricAnalysis& r) {
  const ClosShape& s = f.shape();
  const ClusterSpec& spec = f.spec();
  // Tier capacities (per direction).
  const double port_bw = spec.switch_spec.port_bw_bytes_per_s;
  const double nic_total = static_cast<double>(r.nics) * s.nic_link_bw_bytes_per_s;
  const int64_t tor_up_links = s.tors * s.tor_up_ports;
  const double tor_up_total = static_cast<double>(tor_up_links) * port_bw;
  r.tiers_summary.push_back(TierSummary{"server", r.nics, r.nics, nic_total, 0});
  // Bandwidth from below per ToR (full groups) against its uplinks.
  const double tor_down_bw =
      static_cast<double>(s.servers_per_tor * s.nics_per_server_per_tor) * s.nic_link_bw_bytes_per_s;
  const double tor_up_bw = static_cast<double>(s.tor_up_ports) * port_bw;
  r.tiers_summary.push_back(TierSummary{"tor", s.tors, tor_up_links, tor_up_total, tor_down_bw / tor_up_bw});
  double smallest = std::min(nic_total, tor_up_total);
  r.bisection_limited_by = nic_total <= tor_up_total ? "server NICs" : "ToR uplinks";
  if (s.tiers == 3) {
    const int64_t agg_up_links = s.aggs * s.agg_up_ports;
    const double agg_up_total = static_cast<double>(agg_up_links) * port_bw;
    const int64_t tors_in_full_pod = std::min(s.tors_per_pod, s.server_groups);
    r.tiers_summary.push_back(
        TierSummary{"aggregation", s.aggs, agg_up_links, agg_up_total,
                    static_cast<double>(tors_in_full_pod * s.links_per_agg) / static_cast<double>(s.agg_up_ports)});
    if (agg_up_total < smallest) {
      smallest = agg_up_total;
      r.bisection_limited_by = "aggregation uplinks";
    }
  }
  r.bisection_bw_bytes_per_s = smallest / 2;
}

/// The distance classes route() produces, and the longest of them.
void classify_distances(const Fabric& f, FabricAnalysis& r) {
  const ClosShape& s = f.shape();
  // Distance classes of route() (links; switches = NVSwitch or network switches crossed).
  const bool several_servers = s.servers > 1;
  const bool same_tor_pairs = s.servers_per_tor > 1 && several_servers;
  r.distances.push_back(DistanceClass{"same server", 2, 1, s.gpus_per_server > 1});
  r.distances.push_back(DistanceClass{"same ToR", 4, 1, same_tor_pairs});
  // rail-only: spines reach one rail's ToRs or pods only
  const int64_t spine_reach =
      s.tiers == 3 ? (s.rail_only ? s.blocks : s.pods) : (s.rail_only ? s.server_groups : s.tors);
  if (s.tiers == 3) {
    r.distances.push_back(DistanceClass{"same pod", 6, 3, s.server_groups > 1});
    r.distances.push_back(DistanceClass{"via spine", 8, 5, spine_reach > 1});
  } else {
    r.distances.push_back(DistanceClass{"via spine", 6, 3, spine_reach > 1});
  }
  if (s.rail_only) { // another rail: NVLink to the relay GPU first (two more links, the NVSwitch)
    int64_t longest = 4, switches = 1;
    for (const auto& d : r.distances)
      if (d.exists && d.between != "same server" && d.links > longest) longest = d.links, switches = d.switch_hops;
    r.distances.push_back(
        DistanceClass{"other rail (NVLink first)", longest + 2, switches + 1, several_servers && s.rails > 1});
  }
  for (const auto& d : r.distances)
    if (d.exists) r.route_diameter_links = std::max(r.route_diameter_links, d.links);
}

/// Graph diameter of the fabric between GPUs.
void measure_diameter(const Fabric& f, FabricAnalysis& r) {
  const ClosShape& s = f.shape();
  // Graph diameter by BFS. Every server sees the same distances in a Clos (up to the
  // partial population of the last group/pod), so small fabrics are searched from every
  // GPU and large ones from the GPUs of the first and the last server.
  const FabricGraph g = make_graph_view(f);
  std::vector<int64_t> sources;
  if (s.gpus <= 512) {
    sources.resize(static_cast<size_t>(s.gpus));
    std::iota(sources.begin(), sources.end(), int64_t{0});
  } else {
    for (int64_t i = 0; i < s.gpus_per_server; ++i) {
      sources.push_back(i);
      sources.push_back(s.gpus - s.gpus_per_server + i);
    }
  }
  r.diameter_links = gpu_eccentricity(f, g, sources);
}

/// Per-rail planes: NICs, ToRs and aggregation switches of each rail and how many
/// connected components they form.
void summarise_rails(const Fabric& f, FabricAnalysis& r) {
  const ClosShape& s = f.shape();
  // Per-rail planes: union NICs, ToRs and aggs of one rail over the links among them.
  const auto& V = f.vertices();
  const auto rail_of = [&](uint32_t v) -> int64_t {
    const Vertex& x = V[v];
    switch (x.kind) {
    case VertexKind::Nic: return (x.index % s.nics_per_server) % s.rails;
    case VertexKind::Tor: return x.index % s.rails;
    case VertexKind::Aggregation: return (x.index / s.aggs_per_pod) % s.rails;
    default: return -1;
    }
  };
  UnionFind uf(V.size());
  for (const Link& l : f.links()) {
    const int64_t ra = rail_of(l.a), rb = rail_of(l.b);
    if (ra >= 0 && ra == rb) uf.unite(l.a, l.b);
  }
  r.rails_summary.resize(static_cast<size_t>(s.rails));
  std::vector<std::vector<uint32_t>> roots(static_cast<size_t>(s.rails));
  for (uint32_t v = 0; v < V.size(); ++v) {
    const int64_t rail = rail_of(v);
    if (rail < 0) continue;
    RailSummary& rs = r.rails_summary[static_cast<size_t>(rail)];
    rs.rail = rail;
    switch (V[v].kind) {
    case VertexKind::Nic:
      ++rs.nics;
      roots[static_cast<size_t>(rail)].push_back(uf.find(v));
      break;
    case VertexKind::Tor: ++rs.tors; break;
    default: ++rs.aggs; break;
    }
  }
  for (int64_t rail = 0; rail < s.rails; ++rail) {
    auto& rt = roots[static_cast<size_t>(rail)];
    std::sort(rt.begin(), rt.end());
    r.rails_summary[static_cast<size_t>(rail)].plane_components =
        static_cast<int64_t>(std::unique(rt.begin(), rt.end()) - rt.begin());
  }
}

} // namespace

FabricAnalysis analyze(const Fabric& f) {
  const ClosShape& s = f.shape();
  const ClusterSpec& spec = f.spec();
  FabricAnalysis r;
  r.name = spec.name;
  r.gpus = s.gpus;
  r.servers = s.servers;
  r.nics = s.servers * s.nics_per_server;
  r.rails = s.rails;
  r.tiers = s.tiers;
  r.tors = s.tors;
  r.aggs = s.aggs;
  r.spines = s.spines;
  r.switches = s.tors + s.aggs + s.spines;
  r.links = static_cast<int64_t>(f.links().size());

  // Links by kind, in LinkKind order.
  for (uint8_t k = 0; k <= static_cast<uint8_t>(LinkKind::TorToSpine); ++k) {
    LinkKindSummary ks{static_cast<LinkKind>(k), 0, 0};
    for (const Link& l : f.links())
      if (l.kind == ks.kind) {
        ++ks.links;
        ks.bw_bytes_per_s = l.bw_bytes_per_s;
      }
    if (ks.links > 0) r.links_by_kind.push_back(ks);
  }

  summarise_tiers(f, r);
  classify_distances(f, r);
  measure_diameter(f, r);
  summarise_rails(f, r);
  return r;
}

} // namespace twinscale::topology
