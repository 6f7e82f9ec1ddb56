// Shared helpers for the topology tests.
#pragma once

#include <string>
#include <vector>

#include "config/cluster_file.hpp"
#include "topology/fabric.hpp"

namespace twinscale::topology::test {

inline Fabric preset_fabric(const std::string& name, int64_t gpus = 0) {
  ClusterSpec spec = config::load_cluster(name);
  if (gpus > 0) spec.gpus = gpus;
  return Fabric(spec);
}

/// Walks a path from src's vertex; returns the vertex it ends on, or UINT32_MAX if a hop
/// does not start where the previous one ended.
inline uint32_t walk(const Fabric& f, int64_t src_gpu, const std::vector<Hop>& path) {
  uint32_t at = f.gpu_vertex(src_gpu);
  for (const Hop& h : path) {
    const Link& l = f.links()[h.link];
    if (h.up) {
      if (l.a != at) return UINT32_MAX;
      at = l.b;
    } else {
      if (l.b != at) return UINT32_MAX;
      at = l.a;
    }
  }
  return at;
}

} // namespace twinscale::topology::test
