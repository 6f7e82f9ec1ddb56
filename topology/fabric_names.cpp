// Names of the fabric's parts (vertices, links, servers, GPUs) and their inverse lookups.
#include <charconv>

#include "topology/detail/fabric_impl.hpp"

namespace twinscale::topology {

namespace {

bool parse_int(std::string_view s, int64_t& out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size() && out >= 0;
}

/// Consumes `prefix` followed by a decimal number from `s`.
bool take(std::string_view& s, std::string_view prefix, int64_t& out) {
  if (s.substr(0, prefix.size()) != prefix) return false;
  s.remove_prefix(prefix.size());
  size_t n = 0;
  while (n < s.size() && s[n] >= '0' && s[n] <= '9') ++n;
  if (n > 1 && s[0] == '0') return false; // canonical names have no leading zeros
  if (!parse_int(s.substr(0, n), out)) return false;
  s.remove_prefix(n);
  return true;
}

} // namespace

using detail::check;
using detail::check_gpu;

std::string Fabric::server_name(int64_t server) const { return "server" + std::to_string(server); }
std::string Fabric::gpu_name(int64_t gpu) const { return vertex_name(gpu_vertex(gpu)); }

std::string Fabric::vertex_name(uint32_t vertex) const {
  const Impl& m = *impl_;
  check(vertex < m.vertices.size(), "vertex id in range");
  const Vertex& x = m.vertices[vertex];
  const ClosShape& s = m.shape;
  switch (x.kind) {
  case VertexKind::Gpu:
    return server_name(x.index / s.gpus_per_server) + ".gpu" + std::to_string(x.index % s.gpus_per_server);
  case VertexKind::NvSwitch: return server_name(x.index) + ".nvswitch";
  case VertexKind::Nic:
    return server_name(x.index / s.nics_per_server) + ".nic" + std::to_string(x.index % s.nics_per_server);
  case VertexKind::Tor: return "tor" + std::to_string(x.index / s.rails) + ".r" + std::to_string(x.index % s.rails);
  case VertexKind::Aggregation: {
    const int64_t pod = x.index / s.aggs_per_pod;
    return "agg" + std::to_string(x.index % s.aggs_per_pod) + ".pod" + std::to_string(pod / s.rails) + ".r" +
           std::to_string(pod % s.rails);
  }
  case VertexKind::Spine: return "spine" + std::to_string(x.index);
  }
  return "?";
}

std::optional<int64_t> Fabric::find_server(std::string_view name) const {
  int64_t server = 0;
  if (!take(name, "server", server) || !name.empty() || server >= servers()) return std::nullopt;
  return server;
}

std::optional<uint32_t> Fabric::find_vertex(std::string_view name) const {
  const Impl& m = *impl_;
  const ClosShape& s = m.shape;
  int64_t a = 0, b = 0, c = 0;
  std::string_view rest = name;
  if (take(rest, "server", a)) {
    if (a >= s.servers) return std::nullopt;
    if (rest == ".nvswitch") return m.v_nvswitch + static_cast<uint32_t>(a);
    if (take(rest, ".gpu", b) && rest.empty() && b < s.gpus_per_server)
      return static_cast<uint32_t>(a * s.gpus_per_server + b);
    rest = name;
    take(rest, "server", a);
    if (take(rest, ".nic", b) && rest.empty() && b < s.nics_per_server)
      return m.v_nic + static_cast<uint32_t>(a * s.nics_per_server + b);
    return std::nullopt;
  }
  rest = name;
  if (take(rest, "tor", a) && take(rest, ".r", b) && rest.empty() && a < s.server_groups && b < s.rails)
    return m.v_tor + static_cast<uint32_t>(a * s.rails + b);
  rest = name;
  if (s.tiers == 3 && take(rest, "agg", a) && take(rest, ".pod", b) && take(rest, ".r", c) && rest.empty() &&
      a < s.aggs_per_pod && b < s.blocks && c < s.rails)
    return m.v_agg + static_cast<uint32_t>((b * s.rails + c) * s.aggs_per_pod + a);
  rest = name;
  if (take(rest, "spine", a) && rest.empty() && a < s.spines) return m.v_spine + static_cast<uint32_t>(a);
  return std::nullopt;
}

std::optional<int64_t> Fabric::find_gpu(std::string_view name) const {
  auto v = find_vertex(name);
  if (!v || impl_->vertices[*v].kind != VertexKind::Gpu) return std::nullopt;
  return static_cast<int64_t>(*v);
}

std::string Fabric::link_name(uint32_t link) const {
  const Impl& m = *impl_;
  check(link < m.links.size(), "link id in range");
  const Link& l = m.links[link];
  int64_t parallel = 0;
  if (l.kind == LinkKind::TorToAggregation)
    parallel = (link - m.l_tor_up) % m.shape.links_per_agg;
  else if (l.kind == LinkKind::AggregationToSpine)
    parallel = (link - m.l_agg_up) % m.shape.links_per_spine;
  else if (l.kind == LinkKind::TorToSpine)
    parallel = (link - m.l_tor_up) % m.shape.links_per_spine;
  return vertex_name(l.a) + "-" + vertex_name(l.b) + "#" + std::to_string(parallel);
}

std::optional<uint32_t> Fabric::find_link(std::string_view name) const {
  const Impl& m = *impl_;
  const ClosShape& s = m.shape;
  const size_t dash = name.find('-');
  if (dash == std::string_view::npos) return std::nullopt;
  std::string_view b_name = name.substr(dash + 1);
  int64_t parallel = 0;
  if (const size_t hash = b_name.find('#'); hash != std::string_view::npos) {
    if (!parse_int(b_name.substr(hash + 1), parallel)) return std::nullopt;
    b_name = b_name.substr(0, hash);
  }
  const auto a = find_vertex(name.substr(0, dash));
  const auto b = find_vertex(b_name);
  if (!a || !b) return std::nullopt;
  // The links whose lower end is `a` form one contiguous range per kind.
  const Vertex& va = m.vertices[*a];
  uint32_t first = 0, count = 0;
  switch (va.kind) {
  case VertexKind::Gpu:
    if (m.links[va.index].b == *b && parallel == 0) return static_cast<uint32_t>(va.index);
    if (m.links[m.l_pcie + va.index].b == *b && parallel == 0) return m.l_pcie + static_cast<uint32_t>(va.index);
    return std::nullopt;
  case VertexKind::Nic:
    first = m.l_nic + static_cast<uint32_t>(va.index);
    count = 1;
    break;
  case VertexKind::Tor:
    first = m.l_tor_up + static_cast<uint32_t>(va.index * s.tor_up_ports);
    count = static_cast<uint32_t>(s.tor_up_ports);
    break;
  case VertexKind::Aggregation:
    first = m.l_agg_up + static_cast<uint32_t>(va.index * s.agg_up_ports);
    count = static_cast<uint32_t>(s.agg_up_ports);
    break;
  default: return std::nullopt;
  }
  int64_t seen = 0;
  for (uint32_t id = first; id < first + count; ++id)
    if (m.links[id].b == *b && seen++ == parallel) return id;
  return std::nullopt;
}

} // namespace twinscale::topology
