// Cluster files (TOML) → topology::ClusterSpec and [network]. Every key, its unit, range
// and default is described once, in the key table config/cluster_keys.cpp (rendered in
// docs/keys.md); this file reads the tables through it, and by hand only what spans keys:
// catalogue models ([gpu] model, [server] nic, [switch] model) whose entries give other
// keys' defaults, [[gpu_groups]], rails (default: nics) and the oversubscription array.
//
// How the Clos is built from these numbers (full rules at the top of topology/fabric.cpp),
// worked for megascale-ampere at 12,288 GPUs:
//   servers   = 12288 GPUs / 8                         = 1,536
//   ToR ports : radix 64 at 1:1 → 32 down + 32 up; split → 32 × 2 = 64 NIC ports;
//               8 NICs on 8 rails = 1 NIC port per server per ToR → 64 servers per ToR
//   groups    = 1536 / 64 = 24;  ToRs = 24 groups × 8 rails      = 192
//   pods      : one rail's ToRs of ≤ 32 groups (aggregation down ports) → 1 block,
//               8 pods (one per rail) × 32 aggs (one per ToR uplink) = 256 aggs
//   spines    : 32 planes (aggregation index); a plane's 8 pods × 32 uplinks = 256
//               links on 64-port spines → 4 spines per plane, 8 links agg→spine = 128
//   capacity  : NICs 12288 × 200G = ToR up 192 × 32 × 400G = 2,457.6 Tb/s,
//               bisection half of it = 1,228.8 Tb/s; diameter 8 links (5 switches)
//   limit     : a spine reaches ≤ 64 pods → ⌊64/8⌋ = 8 blocks × 32 groups × 64 servers
//               × 8 GPUs = 131,072 GPUs.
// Values that are each well formed but do not fit together (servers over the radix, more
// GPUs than the Clos holds, rails > NICs, ports left unused by the oversubscription, …)
// are rejected when the fabric is built, with a TopologyError naming key and arithmetic.
//
// Every hardware figure (and its source) is in the catalogue under presets/hardware/.
#include "config/cluster_file.hpp"

#include <filesystem>

#include "config/cluster_keys.hpp"
#include "config/hardware_catalogue.hpp"
#include "config/key_table_reader.hpp"
#include "config/network_section.hpp"
#include "config/presets.hpp"

namespace twinscale::config {

bool gpu_model_spec(std::string_view model, topology::GpuSpec& g) {
  const topology::GpuSpec* e = hardware_catalogue().gpu(model);
  if (e == nullptr) return false;
  g = *e;
  return true;
}

bool switch_model_spec(std::string_view model, topology::SwitchSpec& s) {
  const topology::SwitchSpec* e = hardware_catalogue().switch_model(model);
  if (e == nullptr) return false;
  s = *e;
  return true;
}

namespace {

/// "first-last" (inclusive) or one index, each a non-negative integer, first ≤ last.
void parse_server_range(TableReader& t, const std::string& text, int64_t& first, int64_t& last) {
  const auto number = [&](const std::string& part) {
    if (part.empty() || part.size() > 12 || part.find_first_not_of("0123456789") != std::string::npos)
      t.fail("servers", "is \"" + text + "\"; valid: a server index (\"12\") or an inclusive range (\"0-127\")");
    return std::stoll(part);
  };
  const auto dash = text.find('-');
  first = number(text.substr(0, dash));
  last = dash == std::string::npos ? first : number(text.substr(dash + 1));
  if (last < first) t.fail("servers", "is \"" + text + "\": the range ends before it starts");
}

/// A key naming a catalogue entry: one of the table's names, else an error listing them.
std::string read_model(TableReader& t, const ClusterKey& f, std::optional<std::string> fallback) {
  const std::string_view leaf = key_leaf(f.key);
  const std::string got = t.get_string(leaf, std::move(fallback));
  std::string valid;
  for (const std::string& n : f.names) {
    if (n == got) return got;
    valid += (valid.empty() ? "" : ", ") + n;
  }
  t.fail(leaf, "is \"" + got + "\"; valid values: " + valid);
}

void read_gpu(TableReader& t, ClusterFile& out) {
  TableReader g = t.table("gpu", true);
  const std::string model = read_model(g, cluster_key("gpu.model"), std::string("custom"));
  const HardwareCatalogue& hw = hardware_catalogue();
  read_gpu_keys(g, hw.gpu(model), &hw, out.cluster.gpu);
  out.cluster.gpu.model = model;
  g.finish();
}

void read_gpu_groups(TableReader& t, ClusterFile& out) {
  topology::ClusterSpec& c = out.cluster;
  const HardwareCatalogue& hw = hardware_catalogue();
  std::vector<TableReader> groups = t.table_array("gpu_groups");
  for (TableReader& g : groups) {
    topology::GpuGroup group;
    const std::string range = g.get_string("servers");
    parse_server_range(g, range, group.first_server, group.last_server);
    for (size_t i = 0; i < c.gpu_groups.size(); ++i)
      if (group.first_server <= c.gpu_groups[i].last_server && c.gpu_groups[i].first_server <= group.last_server)
        g.fail("servers", "\"" + range + "\" overlaps gpu_groups[" + std::to_string(i) + "] (servers " +
                              std::to_string(c.gpu_groups[i].first_server) + "-" +
                              std::to_string(c.gpu_groups[i].last_server) + "): a server holds one GPU model");
    const std::string model = read_model(g, cluster_key("gpu_groups.model"), std::nullopt);
    read_gpu_keys(g, hw.gpu(model), &hw, group.gpu);
    group.gpu.model = model;
    g.finish();
    c.gpu_groups.push_back(std::move(group));
  }
}

void read_server(TableReader& t, ClusterFile& out) {
  topology::ServerSpec& server = out.cluster.server;
  TableReader s = t.table("server", true);
  read_keys(s, "server", cluster_keys(), out); // those no other key decides
  server.pcie_bw_bytes_per_s = out.cluster.gpu.pcie_bw_bytes_per_s;
  read_key(s, cluster_key("server.pcie_bw_bytes_per_s"), out);
  const std::string nic = read_model(s, cluster_key("server.nic"), std::string("custom"));
  const topology::NicSpec* entry = hardware_catalogue().nic(nic);
  if (entry != nullptr) server.nic = *entry;
  server.nic.model = nic;
  server.nic_bw_bytes_per_s = server.nic.bw_bytes_per_s;
  read_key(s, cluster_key("server.nic_gbit_per_s"), out,
           /*required=*/entry == nullptr);
  read_key(s, cluster_key("server.nic_efficiency"), out);
  server.rails = server.nics;
  read_key(s, cluster_key("server.rails"), out);
  s.finish();
}

void read_switch(TableReader& t, ClusterFile& out) {
  TableReader s = t.table("switch", true);
  const std::string model = read_model(s, cluster_key("switch.model"), std::string("custom"));
  const bool named = switch_model_spec(model, out.cluster.switch_spec);
  if (!named) out.cluster.switch_spec.model = model; // "custom": every figure from this table
  for (const char* key : {"switch.radix", "switch.port_gbit_per_s", "switch.latency_ns"})
    read_key(s, cluster_key(key), out, /*required=*/!named);
  s.finish();
}

void read_fabric(TableReader& t, ClusterFile& out) {
  topology::FabricSpec& fabric = out.cluster.fabric;
  TableReader f = t.table("fabric", true);
  read_keys(f, "fabric", cluster_keys(), out);
  const std::vector<double> dflt(static_cast<size_t>(fabric.tiers - 1), 1.0);
  fabric.oversubscription = f.get_double_array("oversubscription", dflt);
  if (static_cast<int64_t>(fabric.oversubscription.size()) != fabric.tiers - 1)
    f.fail("oversubscription",
           "has " + std::to_string(fabric.oversubscription.size()) + " entries; " + std::to_string(fabric.tiers) +
               " tiers need " + std::to_string(fabric.tiers - 1) +
               (fabric.tiers == 3 ? " ([ToR, aggregation] down:up ratios)" : " ([ToR] down:up ratio)"));
  for (size_t i = 0; i < fabric.oversubscription.size(); ++i)
    if (!(fabric.oversubscription[i] > 0))
      f.fail("oversubscription", "[" + std::to_string(i) + "] must be a down:up ratio > 0 (1 = 1:1)");
  f.finish();
}

} // namespace

topology::ClusterSpec parse_cluster(TableReader& t, const std::string& default_name, topology::NetworkCcSpec* network) {
  ClusterFile out = cluster_file_defaults();
  out.cluster.name = t.get_string("name", default_name);
  read_keys(t, "", cluster_keys(), out);
  read_gpu(t, out);
  read_gpu_groups(t, out);
  read_server(t, out);
  read_switch(t, out);
  read_fabric(t, out);
  const topology::NetworkCcSpec net = parse_network(t);
  if (network != nullptr) *network = net;
  t.finish();
  return out.cluster;
}

GpuMemoryLimit tightest_gpu_memory(const topology::ClusterSpec& cluster) {
  GpuMemoryLimit out;
  if (cluster.gpu.memory_bytes > 0) out = {cluster.gpu.memory_bytes, "[gpu] (" + cluster.gpu.model + ")"};
  for (size_t g = 0; g < cluster.gpu_groups.size(); ++g) {
    const topology::GpuGroup& group = cluster.gpu_groups[g];
    if (!(group.gpu.memory_bytes > 0) || (out.bytes > 0 && group.gpu.memory_bytes >= out.bytes)) continue;
    out = {group.gpu.memory_bytes, "gpu_groups[" + std::to_string(g) + "] (" + group.gpu.model + ", servers " +
                                       std::to_string(group.first_server) + "-" + std::to_string(group.last_server) +
                                       ")"};
  }
  return out;
}

topology::ClusterSpec load_cluster(std::string_view name_or_path, const std::vector<KeyOverride>& edits) {
  return load_cluster_file(name_or_path, edits).cluster;
}

topology::NetworkCcSpec load_cluster_network(std::string_view name_or_path, const std::vector<KeyOverride>& edits) {
  return load_cluster_file(name_or_path, edits).network;
}

ClusterFile load_cluster_file(std::string_view name_or_path, const std::vector<KeyOverride>& set) {
  // A key that takes text (a name, a model) reads a bare VALUE as text (server.nic=ConnectX-7).
  std::vector<KeyOverride> edits = set;
  for (KeyOverride& o : edits)
    if (const ClusterKey* f = find_cluster_key(o.key()))
      o.takes_text = f->type == KeyType::String || f->type == KeyType::Name;
  ClusterFile out;
  const std::string arg(name_or_path);
  const std::string note = overrides_note(edits, "--set");
  const bool looks_like_path = arg.find('/') != std::string::npos || arg.ends_with(".toml");
  if (!looks_like_path) {
    for (const auto& n : preset_names("clusters"))
      if (n == arg) {
        toml::table tbl = parse_toml(preset_text("clusters", arg), "preset " + arg);
        apply_key_overrides(tbl, edits, "--set");
        TableReader r(tbl, "preset " + arg + note);
        out.cluster = parse_cluster(r, arg, &out.network);
        return out;
      }
    if (!std::filesystem::exists(arg)) {
      std::string valid;
      for (const auto& n : preset_names("clusters")) valid += (valid.empty() ? "" : ", ") + n;
      throw ConfigError("cluster '" + arg + "' is neither a preset nor a file; presets: " + valid);
    }
  }
  toml::table tbl = parse_toml_file(arg);
  apply_key_overrides(tbl, edits, "--set");
  TableReader r(tbl, arg + note);
  out.cluster = parse_cluster(r, std::filesystem::path(arg).stem().string(), &out.network);
  return out;
}

} // namespace twinscale::config
