#include "topology/graph_view.hpp"

#include <utility>
#include <vector>

namespace twinscale::topology {

FabricGraph make_graph_view(const Fabric& fabric) {
  const auto& links = fabric.links();
  std::vector<std::pair<uint32_t, uint32_t>> edges;
  std::vector<GraphEdge> props;
  edges.reserve(2 * links.size());
  props.reserve(2 * links.size());
  for (uint32_t l = 0; l < links.size(); ++l) {
    edges.emplace_back(links[l].a, links[l].b);
    props.push_back(GraphEdge{l, true});
    edges.emplace_back(links[l].b, links[l].a);
    props.push_back(GraphEdge{l, false});
  }
  return FabricGraph(boost::edges_are_unsorted_multi_pass, edges.begin(), edges.end(), props.begin(),
                     static_cast<uint32_t>(fabric.vertices().size()));
}

} // namespace twinscale::topology
