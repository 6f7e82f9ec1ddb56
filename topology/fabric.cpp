// Builds the fabric graph from a ClusterSpec, names its parts, and routes flows.
//
// Clos arithmetic (R = switch radix in ports at port_bw, o = down:up oversubscription):
//  * A tier's switch has down = R·o/(1+o) ports facing the tier below and up = R − down
//    facing the tier above; both must be whole numbers (else TopologyError).
//  * Servers: gpus / server.gpus (must divide). NIC i of a server goes to the ToR of rail
//    (i mod rails), so a server has nics/rails NIC ports on each of its `rails` ToRs.
//  * A server group is servers_per_tor consecutive servers; it owns one ToR per rail
//    (tors = groups × rails). With split_downlinks one 400G ToR port carries two 200G
//    NIC ports (NIC bw ≤ port_bw/2), else one NIC per port (NIC bw ≤ port_bw); the NIC
//    ports of a group on one ToR must fit its down ports.
//  * 2 tiers: every ToR has `up` links spread evenly over S spines (m = up/S parallel
//    links to each); S is the smallest divisor of `up` with tors·m ≤ R.
//  * 3 tiers: a pod is one rail's ToRs from tors_per_pod consecutive server groups
//    (default and maximum: the aggregation down ports); same-rail traffic between
//    servers of one block so stays in that rail's plane. pods = blocks × rails. A ToR's
//    `up` links go to the A aggregation switches of its pod, up/A parallel links to
//    each; A is the smallest divisor of `up` with (ToRs in the fullest pod)·(up/A) ≤
//    agg down, so the tier is sized to what is populated (A = up when pods are full).
//    Aggregation switch p of every pod belongs to spine plane p; each plane has S
//    spines, S the smallest divisor of agg up with pods·(agg up / S) ≤ R (all spine
//    ports face down). A 3-tier fabric therefore holds at most ⌊R/rails⌋ blocks.
//  * Rail-only (fabric.rail_only, Wang et al. 2023): the same tiers, but every spine
//    plane serves one rail (2 tiers: plane r holds the spines of rail r's ToRs; 3 tiers:
//    plane (r, p) those of aggregation switch p of rail r's pods), so S is sized for one
//    rail's ToRs or pods and a 3-tier fabric holds up to R blocks. No switch connects two
//    rails: route() forwards cross-rail traffic over NVLink first (rail_relay()).
#include "topology/fabric.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "topology/detail/fabric_impl.hpp"

namespace twinscale::topology {

using detail::check;
using detail::check_gpu;

namespace {

std::string num(double v) {
  std::ostringstream os;
  os.precision(6);
  os << v;
  return os.str();
}

std::string gbit(double bytes_per_s) { return num(bytes_per_s * 8 / 1e9) + " Gb/s"; }

[[noreturn]] void fail(const std::string& cluster, const std::string& key, const std::string& why) {
  throw TopologyError("cluster '" + cluster + "': " + key + ": " + why);
}

/// Splits `radix` into (down, up) by down:up = o; throws if that leaves ports unused.
std::pair<int64_t, int64_t> split_ports(const std::string& cluster, const std::string& key, int64_t radix, double o) {
  if (!(o > 0) || !std::isfinite(o)) fail(cluster, key, "oversubscription " + num(o) + " must be > 0");
  const double down = static_cast<double>(radix) * o / (1 + o);
  const int64_t down_i = std::llround(down);
  if (std::fabs(down - static_cast<double>(down_i)) > 1e-6 || down_i < 1 || down_i >= radix)
    fail(cluster, key,
         "oversubscription " + num(o) + ":1 splits the radix " + std::to_string(radix) + " into " + num(down) +
             " down + " + num(static_cast<double>(radix) - down) +
             " up ports; both must be whole numbers ≥ 1 (e.g. 1:1 → " + std::to_string(radix / 2) + "+" +
             std::to_string(radix - radix / 2) + ", 3:1 → " + std::to_string(radix * 3 / 4) + "+" +
             std::to_string(radix - radix * 3 / 4) + ")");
  return {down_i, radix - down_i};
}

/// Smallest divisor S of `up` such that `lower` switches with up/S links each fit R ports
/// (the number of upper switches `up` links are spread over evenly); 0 if none.
int64_t spines_per_plane(int64_t up, int64_t lower, int64_t radix) {
  for (int64_t s = 1; s <= up; ++s)
    if (up % s == 0 && lower * (up / s) <= radix) return s;
  return 0;
}

/// Every key of the cluster that the shape derivation relies on, checked with a message
/// that names the key and says what would be valid. `c` names the cluster.
void validate(const ClusterSpec& spec, const std::string& c) {
  const ServerSpec& sv = spec.server;
  const SwitchSpec& sw = spec.switch_spec;
  const FabricSpec& fs = spec.fabric;
  if (spec.gpus <= 0)
    fail(c, "gpus",
         "is " + std::to_string(spec.gpus) +
             "; the fabric needs a GPU count ≥ 1 (set gpus in the cluster or pass --gpus)");
  if (sv.gpus <= 0) fail(c, "server.gpus", "is " + std::to_string(sv.gpus) + "; must be ≥ 1");
  if (spec.gpus % sv.gpus != 0)
    fail(c, "gpus",
         std::to_string(spec.gpus) + " GPUs is not a whole number of " + std::to_string(sv.gpus) + "-GPU servers (" +
             std::to_string(spec.gpus) + " mod " + std::to_string(sv.gpus) + " = " +
             std::to_string(spec.gpus % sv.gpus) + ")");
  if (sv.nics <= 0) fail(c, "server.nics", "is " + std::to_string(sv.nics) + "; must be ≥ 1");
  if (sv.rails <= 0) fail(c, "server.rails", "is " + std::to_string(sv.rails) + "; must be ≥ 1");
  if (sv.rails > sv.nics)
    fail(c, "server.rails",
         std::to_string(sv.rails) + " rails > " + std::to_string(sv.nics) +
             " NICs per server; each rail needs at least one NIC (rails ≤ nics)");
  if (sv.nics % sv.rails != 0)
    fail(c, "server.rails",
         std::to_string(sv.nics) + " NICs do not spread evenly over " + std::to_string(sv.rails) +
             " rails (nics mod rails = " + std::to_string(sv.nics % sv.rails) + "); use a divisor of nics");
  if (!(sv.nic_bw_bytes_per_s > 0)) fail(c, "server.nic_gbit_per_s", "must be > 0");
  if (!(sv.pcie_bw_bytes_per_s > 0)) fail(c, "server.pcie_bw_bytes_per_s", "must be > 0");
  if (!(spec.gpu.nvlink_bw_bytes_per_s > 0)) fail(c, "gpu.nvlink_bw_bytes_per_s", "must be > 0");
  if (sw.radix < 2) fail(c, "switch.radix", "is " + std::to_string(sw.radix) + "; must be ≥ 2");
  if (!(sw.port_bw_bytes_per_s > 0)) fail(c, "switch.port_gbit_per_s", "must be > 0");
  if (fs.tiers != 2 && fs.tiers != 3)
    fail(c, "fabric.tiers", "is " + std::to_string(fs.tiers) + "; valid: 2 (ToR–spine) or 3 (ToR–aggregation–spine)");
  if (static_cast<int64_t>(fs.oversubscription.size()) < fs.tiers - 1)
    fail(c, "fabric.oversubscription",
         "has " + std::to_string(fs.oversubscription.size()) + " entries; " + std::to_string(fs.tiers) +
             " tiers need " + std::to_string(fs.tiers - 1) + " (down:up at ToR" +
             (fs.tiers == 3 ? ", aggregation)" : ")"));
  if (fs.servers_per_tor <= 0) fail(c, "fabric.servers_per_tor", "must be ≥ 1");
  if (fs.split_downlinks && sv.nic_bw_bytes_per_s > sw.port_bw_bytes_per_s / 2 * (1 + 1e-9))
    fail(c, "fabric.split_downlinks",
         "a split " + gbit(sw.port_bw_bytes_per_s) + " port gives two " + gbit(sw.port_bw_bytes_per_s / 2) +
             " ports, slower than the " + gbit(sv.nic_bw_bytes_per_s) + " NICs; set split_downlinks = false");
  if (!fs.split_downlinks && sv.nic_bw_bytes_per_s > sw.port_bw_bytes_per_s * (1 + 1e-9))
    fail(c, "server.nic_gbit_per_s",
         gbit(sv.nic_bw_bytes_per_s) + " NICs are faster than the " + gbit(sw.port_bw_bytes_per_s) + " switch ports");
}

/// The switch tiers above the ToRs: spines (2 tiers) or pods of aggregation switches and
/// spine planes (3 tiers). Fails with the arithmetic when the radix cannot hold the job.
void derive_upper_tiers(const ClusterSpec& spec, const std::string& c, ClosShape& s) {
  const SwitchSpec& sw = spec.switch_spec;
  const FabricSpec& fs = spec.fabric;
  if (s.tiers == 2) {
    // rail-only: one spine plane per rail, reaching only that rail's ToRs
    s.spine_planes = s.rail_only ? s.rails : 1;
    const int64_t tors_per_plane = s.rail_only ? s.server_groups : s.tors;
    s.spines_per_plane = spines_per_plane(s.tor_up_ports, tors_per_plane, sw.radix);
    if (s.spines_per_plane == 0)
      fail(c, "gpus",
           std::to_string(spec.gpus) + " GPUs need " + std::to_string(tors_per_plane) + " ToRs" +
               (s.rail_only ? " per rail" : "") + " (" + std::to_string(s.server_groups) + " groups of " +
               std::to_string(s.servers_per_tor) + " servers" +
               (s.rail_only ? "" : " × " + std::to_string(s.rails) + " rails") + "), but a 2-tier Clos of radix " +
               std::to_string(sw.radix) + " connects at most " + std::to_string(sw.radix) + " ToRs (" +
               std::to_string(sw.radix / (s.rail_only ? 1 : s.rails) * s.servers_per_tor * s.gpus_per_server) +
               " GPUs); use fabric.tiers = 3");
    s.spines = s.spine_planes * s.spines_per_plane;
    s.links_per_spine = s.tor_up_ports / s.spines_per_plane;
  } else {
    std::tie(s.agg_down_ports, s.agg_up_ports) =
        split_ports(c, "fabric.oversubscription[1] (aggregation)", sw.radix, fs.oversubscription[1]);
    s.tors_per_pod = fs.tors_per_pod == 0 ? s.agg_down_ports : fs.tors_per_pod;
    if (s.tors_per_pod < 0 || s.tors_per_pod > s.agg_down_ports)
      fail(c, "fabric.tors_per_pod",
           "is " + std::to_string(s.tors_per_pod) + "; an aggregation switch has " + std::to_string(s.agg_down_ports) +
               " down ports (radix " + std::to_string(sw.radix) + " at " + num(fs.oversubscription[1]) +
               ":1), one per ToR of its pod: valid 1.." + std::to_string(s.agg_down_ports) +
               " (0 = " + std::to_string(s.agg_down_ports) + ")");
    const int64_t fullest_pod = std::min(s.tors_per_pod, s.server_groups);
    s.aggs_per_pod = spines_per_plane(s.tor_up_ports, fullest_pod, s.agg_down_ports);
    check(s.aggs_per_pod > 0, "one link per ToR–agg pair always fits (tors_per_pod ≤ agg down)");
    s.links_per_agg = s.tor_up_ports / s.aggs_per_pod;
    s.blocks = (s.server_groups + s.tors_per_pod - 1) / s.tors_per_pod;
    s.pods = s.blocks * s.rails;
    s.aggs = s.pods * s.aggs_per_pod;
    // rail-only: planes per rail (aggregation switch p of every pod of rail r)
    s.spine_planes = s.aggs_per_pod * (s.rail_only ? s.rails : 1);
    s.spines_per_plane = spines_per_plane(s.agg_up_ports, s.rail_only ? s.blocks : s.pods, sw.radix);
    if (s.spines_per_plane == 0) {
      const int64_t max_blocks = s.rail_only ? sw.radix : sw.radix / s.rails;
      fail(c, "gpus",
           std::to_string(spec.gpus) + " GPUs need " + std::to_string(s.pods) + " pods (" + std::to_string(s.blocks) +
               " blocks × " + std::to_string(s.rails) + " rails), but a spine of radix " + std::to_string(sw.radix) +
               " reaches at most " + std::to_string(sw.radix) + " pods: this 3-tier Clos holds at most " +
               std::to_string(max_blocks) + " blocks × " + std::to_string(s.tors_per_pod) + " groups × " +
               std::to_string(s.servers_per_tor) + " servers × " + std::to_string(s.gpus_per_server) + " GPUs = " +
               std::to_string(max_blocks * s.tors_per_pod * s.servers_per_tor * s.gpus_per_server) + " GPUs");
    }
    s.spines = s.spine_planes * s.spines_per_plane;
    s.links_per_spine = s.agg_up_ports / s.spines_per_plane;
  }
}

/// The Clos shape of a validated cluster: servers, rails, ToR groups and the tiers above.
ClosShape derive_shape(const ClusterSpec& spec, const std::string& c) {
  ClosShape s;
  const ServerSpec& sv = spec.server;
  const SwitchSpec& sw = spec.switch_spec;
  const FabricSpec& fs = spec.fabric;
  s.tiers = fs.tiers;
  s.gpus = spec.gpus;
  s.gpus_per_server = sv.gpus;
  s.servers = spec.gpus / sv.gpus;
  s.nics_per_server = sv.nics;
  s.rails = sv.rails;
  s.nics_per_server_per_tor = sv.nics / sv.rails;
  s.servers_per_tor = fs.servers_per_tor;
  s.split_downlinks = fs.split_downlinks;
  s.rail_only = fs.rail_only;
  s.nic_link_bw_bytes_per_s = sv.nic_bw_bytes_per_s;
  s.radix = sw.radix;
  std::tie(s.tor_down_ports, s.tor_up_ports) =
      split_ports(c, "fabric.oversubscription[0] (ToR)", sw.radix, fs.oversubscription[0]);
  const int64_t nic_ports = s.servers_per_tor * s.nics_per_server_per_tor;
  s.tor_down_ports_used = s.split_downlinks ? (nic_ports + 1) / 2 : nic_ports;
  if (s.tor_down_ports_used > s.tor_down_ports)
    fail(c, "fabric.servers_per_tor",
         std::to_string(s.servers_per_tor) + " servers × " + std::to_string(s.nics_per_server_per_tor) +
             " NIC(s) per rail = " + std::to_string(nic_ports) + " NIC ports need " +
             std::to_string(s.tor_down_ports_used) + " ToR ports" + (s.split_downlinks ? " (two per split port)" : "") +
             ", but a ToR has " + std::to_string(s.tor_down_ports) + " down ports (radix " + std::to_string(sw.radix) +
             " at " + num(fs.oversubscription[0]) + ":1); at most " +
             std::to_string(s.tor_down_ports * (s.split_downlinks ? 2 : 1) / s.nics_per_server_per_tor) +
             " servers per ToR fit");
  s.server_groups = (s.servers + s.servers_per_tor - 1) / s.servers_per_tor;
  s.tors = s.server_groups * s.rails;
  derive_upper_tiers(spec, c, s);
  return s;
}

} // namespace

/// Vertices of every kind, GPUs first (gpu_vertex(g) = g).
void Fabric::Impl::add_vertices(const std::string& c) {
  const ClosShape& s = shape;
  auto& v = vertices;
  // Vertices: GPUs first (gpu_vertex(g) = g), then NVSwitches, NICs, ToRs, aggs, spines.
  const int64_t total_vertices = s.gpus + s.servers + s.servers * s.nics_per_server + s.tors + s.aggs + s.spines;
  if (total_vertices >= (int64_t{1} << 31))
    fail(c, "gpus",
         std::to_string(spec.gpus) + " GPUs give " + std::to_string(total_vertices) +
             " vertices, over the 2^31 the fabric indexes");
  v.reserve(static_cast<size_t>(total_vertices));
  auto add_kind = [&](VertexKind k, int64_t n) {
    const auto first = static_cast<uint32_t>(v.size());
    for (int64_t i = 0; i < n; ++i) v.push_back(Vertex{k, i});
    return first;
  };
  add_kind(VertexKind::Gpu, s.gpus);
  v_nvswitch = add_kind(VertexKind::NvSwitch, s.servers);
  v_nic = add_kind(VertexKind::Nic, s.servers * s.nics_per_server);
  v_tor = add_kind(VertexKind::Tor, s.tors);
  v_agg = add_kind(VertexKind::Aggregation, s.aggs);
  v_spine = add_kind(VertexKind::Spine, s.spines);
}

/// Links in blocks whose ids route() computes arithmetically (NVLink, PCIe, NIC–ToR, then
/// the tiers above); sets the shape's NIC link bandwidth (halved by split downlinks).
void Fabric::Impl::add_links() {
  ClosShape& s = shape;
  auto& L = links;
  const ServerSpec& sv = spec.server;
  const SwitchSpec& sw = spec.switch_spec;
  const FabricSpec& fs = spec.fabric;
  const double port_bw = sw.port_bw_bytes_per_s;
  const double nic_link_bw = std::min(sv.nic_bw_bytes_per_s, fs.split_downlinks ? port_bw / 2 : port_bw);
  s.nic_link_bw_bytes_per_s = nic_link_bw;
  const double lat = fs.cable_latency_s;
  const int64_t tor_up_links = s.tors * s.tor_up_ports;
  L.reserve(static_cast<size_t>(2 * s.gpus + s.servers * s.nics_per_server + tor_up_links + s.aggs * s.agg_up_ports));
  for (int64_t g = 0; g < s.gpus; ++g)
    add_link(static_cast<uint32_t>(g), v_nvswitch + static_cast<uint32_t>(server_of(g)), LinkKind::NvLink,
             gpu_of_server(spec, server_of(g)).nvlink_bw_bytes_per_s, 0); // each server its model's NVLink
  l_pcie = static_cast<uint32_t>(L.size());
  for (int64_t g = 0; g < s.gpus; ++g)
    add_link(static_cast<uint32_t>(g), v_nic + static_cast<uint32_t>(nic_of(g)), LinkKind::Pcie, sv.pcie_bw_bytes_per_s,
             0);
  l_nic = static_cast<uint32_t>(L.size());
  for (int64_t n = 0; n < s.servers * s.nics_per_server; ++n)
    add_link(v_nic + static_cast<uint32_t>(n), v_tor + static_cast<uint32_t>(tor_of_nic(n)), LinkKind::NicToTor,
             nic_link_bw, lat);
  l_tor_up = static_cast<uint32_t>(L.size());
  if (s.tiers == 3) {
    for (int64_t t = 0; t < s.tors; ++t)
      for (int64_t a = 0; a < s.aggs_per_pod; ++a)
        for (int64_t l = 0; l < s.links_per_agg; ++l)
          add_link(v_tor + static_cast<uint32_t>(t), v_agg + static_cast<uint32_t>(pod_of_tor(t) * s.aggs_per_pod + a),
                   LinkKind::TorToAggregation, port_bw, lat);
    l_agg_up = static_cast<uint32_t>(L.size());
    for (int64_t x = 0; x < s.aggs; ++x) {
      const int64_t plane = spine_plane_of_agg(x);
      for (int64_t j = 0; j < s.spines_per_plane; ++j)
        for (int64_t l = 0; l < s.links_per_spine; ++l)
          add_link(v_agg + static_cast<uint32_t>(x), v_spine + static_cast<uint32_t>(plane * s.spines_per_plane + j),
                   LinkKind::AggregationToSpine, port_bw, lat);
    }
  } else {
    for (int64_t t = 0; t < s.tors; ++t) {
      const int64_t plane = s.rail_only ? t % s.rails : 0; // ToR t serves rail t mod rails
      for (int64_t j = 0; j < s.spines_per_plane; ++j)
        for (int64_t l = 0; l < s.links_per_spine; ++l)
          add_link(v_tor + static_cast<uint32_t>(t), v_spine + static_cast<uint32_t>(plane * s.spines_per_plane + j),
                   LinkKind::TorToSpine, port_bw, lat);
    }
    l_agg_up = static_cast<uint32_t>(L.size());
  }
  check(L.size() < (size_t{1} << 32), "link count fits uint32");
}

/// Incidence lists (CSR), links in id order for every vertex.
void Fabric::Impl::index_incidence() {
  const auto& L = links;
  auto& off = incident_offset;
  off.assign(vertices.size() + 1, 0);
  for (const Link& l : L) {
    ++off[l.a + 1];
    ++off[l.b + 1];
  }
  for (size_t i = 1; i < off.size(); ++i) off[i] += off[i - 1];
  incident.resize(2 * L.size());
  std::vector<uint32_t> fill(off.begin(), off.end() - 1);
  for (uint32_t id = 0; id < L.size(); ++id) {
    incident[fill[L[id].a]++] = id;
    incident[fill[L[id].b]++] = id;
  }
}

void Fabric::Impl::index_routing() {
  const ClosShape& s = shape;
  gpu_end.resize(static_cast<size_t>(s.gpus));
  for (int64_t g = 0; g < s.gpus; ++g) {
    const int64_t nic = nic_of(g), tor = tor_of_nic(nic);
    const int64_t port =
        (server_of(g) % s.servers_per_tor) * s.nics_per_server_per_tor + (nic % s.nics_per_server) / s.rails;
    gpu_end[static_cast<size_t>(g)] = {static_cast<uint32_t>(server_of(g)), static_cast<uint32_t>(nic),
                                       static_cast<uint32_t>(tor), static_cast<uint32_t>(port)};
  }
  if (s.tiers == 3) {
    tor_place.resize(static_cast<size_t>(s.tors));
    for (int64_t t = 0; t < s.tors; ++t)
      tor_place[static_cast<size_t>(t)] = {static_cast<uint32_t>(pod_of_tor(t)), static_cast<uint32_t>(pos_in_pod(t))};
  }
}

Fabric::Fabric(const ClusterSpec& spec) {
  const std::string c = spec.name.empty() ? std::string("(unnamed)") : spec.name;
  validate(spec, c);
  auto impl = std::make_shared<Impl>();
  impl->spec = spec;
  impl->shape = derive_shape(spec, c);
  impl->add_vertices(c);
  impl->add_links();
  impl->index_incidence();
  impl->index_routing();
  impl_ = std::move(impl);
}

const ClusterSpec& Fabric::spec() const { return impl_->spec; }
const ClosShape& Fabric::shape() const { return impl_->shape; }
const std::vector<Vertex>& Fabric::vertices() const { return impl_->vertices; }
const std::vector<Link>& Fabric::links() const { return impl_->links; }
int64_t Fabric::gpus() const { return impl_->shape.gpus; }
int64_t Fabric::servers() const { return impl_->shape.servers; }

int64_t Fabric::server_of_gpu(int64_t gpu) const {
  check_gpu(*this, gpu);
  return impl_->server_of(gpu);
}
uint32_t Fabric::gpu_vertex(int64_t gpu) const {
  check_gpu(*this, gpu);
  return static_cast<uint32_t>(gpu);
}
int64_t Fabric::local_index_of_gpu(int64_t gpu) const {
  check_gpu(*this, gpu);
  return gpu % impl_->shape.gpus_per_server;
}
int64_t Fabric::nic_of_gpu(int64_t gpu) const {
  check_gpu(*this, gpu);
  return impl_->nic_of(gpu);
}
int64_t Fabric::rail_of_gpu(int64_t gpu) const {
  check_gpu(*this, gpu);
  return impl_->shape.rail_of(gpu);
}
int64_t Fabric::tor_of_gpu(int64_t gpu) const {
  check_gpu(*this, gpu);
  return impl_->tor_of_nic(impl_->nic_of(gpu));
}
int64_t Fabric::group_of_server(int64_t server) const {
  if (server < 0 || server >= servers())
    throw TopologyError("server " + std::to_string(server) + " does not exist: cluster '" + spec().name +
                        "' has servers 0.." + std::to_string(servers() - 1));
  return server / impl_->shape.servers_per_tor;
}
uint32_t Fabric::nic_vertex(int64_t nic) const {
  check(nic >= 0 && nic < servers() * impl_->shape.nics_per_server, "NIC index in range");
  return impl_->v_nic + static_cast<uint32_t>(nic);
}
std::span<const uint32_t> Fabric::links_of_vertex(uint32_t vertex) const {
  check(vertex < impl_->vertices.size(), "vertex id in range");
  const uint32_t* first = impl_->incident.data() + impl_->incident_offset[vertex];
  return {first, impl_->incident_offset[vertex + 1] - impl_->incident_offset[vertex]};
}

double Fabric::path_latency_s(int64_t src_gpu, const std::vector<Hop>& path) const {
  uint32_t at = gpu_vertex(src_gpu);
  double latency = 0;
  for (size_t i = 0; i < path.size(); ++i) {
    const Link& l = impl_->links[path[i].link];
    check(at == (path[i].up ? l.a : l.b), "path hops are contiguous");
    at = path[i].up ? l.b : l.a;
    latency += l.latency_s;
    const VertexKind k = impl_->vertices[at].kind;
    if (i + 1 < path.size() && (k == VertexKind::Tor || k == VertexKind::Aggregation || k == VertexKind::Spine))
      latency += impl_->spec.switch_spec.latency_s;
  }
  return latency;
}

int64_t Fabric::rail_relay(int64_t src_gpu, int64_t dst_gpu) const {
  check_gpu(*this, src_gpu);
  check_gpu(*this, dst_gpu);
  const Impl& m = *impl_;
  if (!m.shape.rail_only || m.server_of(src_gpu) == m.server_of(dst_gpu) ||
      rail_of_gpu(src_gpu) == rail_of_gpu(dst_gpu))
    return src_gpu;
  // the GPU of the source's server with the destination's local index: same NIC index,
  // hence the destination's rail
  return m.server_of(src_gpu) * m.shape.gpus_per_server + dst_gpu % m.shape.gpus_per_server;
}

uint32_t Fabric::tor_vertex(int64_t tor) const {
  check(tor >= 0 && tor < impl_->shape.tors, "ToR index in range");
  return impl_->v_tor + static_cast<uint32_t>(tor);
}

} // namespace twinscale::topology
