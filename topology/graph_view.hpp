// A Boost.Graph view of a Fabric, for generic graph algorithms (BFS, components).
//
// Why a view and not an adjacency_list underneath: the fabric is a Clos whose structure
// is arithmetic, so route() computes link ids directly (O(1) per hop, no tables) from a
// compact vertex/link array (~24 B per link). An adjacency_list would cost several
// allocations per vertex and is not needed on the hot path; analyses that want a real
// graph build this CSR view on demand (two directed edges per full-duplex link).
#pragma once

#include <cstdint>

#include <boost/graph/compressed_sparse_row_graph.hpp>

#include "topology/fabric.hpp"

namespace twinscale::topology {

struct GraphEdge {
  uint32_t link = 0; // the Fabric link id
  bool up = true;    // crossed from its a end to its b end
};

using FabricGraph = boost::compressed_sparse_row_graph<boost::directedS, boost::no_property, GraphEdge,
                                                       boost::no_property, uint32_t, uint32_t>;

/// Vertex v of the graph is Fabric vertex v; each link l gives edges a→b and b→a.
FabricGraph make_graph_view(const Fabric& fabric);

} // namespace twinscale::topology
