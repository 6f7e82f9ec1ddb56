// Static analysis of a fabric: switch counts per tier, links by kind, bandwidth per
// tier and bisection, distances, and per-rail connectivity.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "topology/fabric.hpp"

namespace twinscale::topology {

struct TierSummary {
  std::string tier;             // "server", "tor", "aggregation", "spine"
  int64_t switches = 0;         // NICs for the server tier
  int64_t up_links = 0;         // links from this tier to the next one up
  double up_bw_bytes_per_s = 0; // their total, per direction
  double oversubscription = 0;  // bandwidth arriving from below ÷ up bandwidth
};

struct LinkKindSummary {
  LinkKind kind = LinkKind::NvLink;
  int64_t links = 0;
  double bw_bytes_per_s = 0; // per link, per direction
};

/// Path length classes of route(): links crossed and switches traversed.
struct DistanceClass {
  std::string between; // "same server", "same ToR", "same pod", "via spine"
  int64_t links = 0;
  int64_t switch_hops = 0; // NVSwitch counts as one
  bool exists = false;     // whether this fabric has such pairs
};

struct RailSummary {
  int64_t rail = 0;
  int64_t nics = 0;
  int64_t tors = 0;
  int64_t aggs = 0;
  int64_t plane_components = 0; // components of this rail's NICs over this rail's
                                // ToRs and aggs: 1 = same-rail traffic never
                                // needs a spine
};

struct FabricAnalysis {
  std::string name;
  int64_t gpus = 0, servers = 0, nics = 0, rails = 0, tiers = 0;
  std::vector<TierSummary> tiers_summary; // server (NIC), tor, [aggregation]
  int64_t tors = 0, aggs = 0, spines = 0, switches = 0;
  std::vector<LinkKindSummary> links_by_kind;
  int64_t links = 0;
  double bisection_bw_bytes_per_s = 0; // half the smallest tier capacity (Clos bound)
  std::string bisection_limited_by;    // tier whose capacity sets it
  int64_t diameter_links = 0;          // longest shortest path between GPUs (graph BFS)
  int64_t route_diameter_links = 0;    // longest route() path
  std::vector<DistanceClass> distances;
  std::vector<RailSummary> rails_summary;
};

FabricAnalysis analyze(const Fabric& fabric);

const char* to_string(LinkKind kind);
const char* to_string(VertexKind kind);

} // namespace twinscale::topology
