// Cluster file format (TOML). Every key, its unit and default:
//
//   name = "megascale-ampere"   # optional; default: the preset name or the file's stem
//   gpus = 12288                # GPUs the fabric is built for; 0 = taken from the job
//
//   [gpu]
//   model = "A100-SXM-80GB"     # an entry of the hardware catalogue (presets/hardware/gpus.toml:
//                               # A100-SXM-80GB, A100-SXM-40GB, H100-SXM, H200-SXM, B200, GB200) or
//                               # "custom"; a named model fills every figure from the
//                               # catalogue, and any catalogue key written here overrides it
//                               # (peak_flops, hbm_bw_bytes_per_s, memory_bytes, sms, nvlink,
//                               # gemm_max_efficiency, … — documented in gpus.toml). "custom"
//                               # needs every catalogue key.
//   nvlink_bw_bytes_per_s = 300e9   # per GPU, per direction; default links × link bandwidth of
//                               # the NVLink generation (presets/hardware/nvlink.toml)
//   nvlink_efficiency = 0.77    # achieved / raw NVLink; default from the generation
//
//   [server]
//   gpus = 8                    # GPUs per server (NVLink domain), on one non-blocking NVSwitch
//                               # system: 8 for DGX/HGX, 72 for GB200 NVL72
//   pcie_bw_bytes_per_s = 32e9  # GPU ↔ NIC, per direction (default: the GPU's catalogue entry)
//   nics = 8                    # NICs per server; GPU i uses NIC (i mod nics)
//   nic = "ConnectX-6"          # an entry of presets/hardware/nics.toml (ConnectX-6, -7, -8)
//                               # giving line rate and achieved efficiency; "custom" (default)
//                               # needs nic_gbit_per_s and takes efficiency 1 unless given
//   nic_gbit_per_s = 200        # per NIC, per direction; overrides the NIC model's line rate
//   nic_efficiency = 0.96       # achieved NCCL busbw per NIC / line rate; overrides the model's
//   rails = 8                   # NIC i is wired to the ToR of rail (i mod rails); ≤ nics
//
//   [switch]
//   model = "tomahawk4"         # an entry of presets/hardware/switches.toml (tomahawk4,
//                               # tomahawk5, qm8790) or custom; explicit keys below override it
//   radix = 64                  # ports at port_gbit_per_s
//   port_gbit_per_s = 400
//   latency_ns = 600            # per switch hop (cut-through)
//
//   [fabric]
//   tiers = 3                   # 2 (ToR–spine) or 3 (ToR–aggregation–spine)
//   oversubscription = [1, 1]   # down:up bandwidth ratio at the ToR (and aggregation)
//                               # tier, one entry per tier below the spine; the radix
//                               # must split into whole down and up port counts
//   split_downlinks = true      # one ToR port carries two NIC ports at half its speed (M10)
//   servers_per_tor = 64        # servers in a group sharing one ToR per rail
//   tors_per_pod = 0            # 3 tiers: server groups per pod (0 = aggregation down ports)
//   rail_only = false           # true: every rail its own Clos, no switch across rails
//                               # (Wang et al. 2023); cross-rail traffic is forwarded over
//                               # NVLink to the GPU on the destination's rail first
//   cable_latency_ns = 0        # propagation per link
//
//   [[gpu_groups]]              # optional, repeatable: servers holding another GPU model
//   servers = "0-127"           # a server index or an inclusive range "first-last"; groups
//                               # must not overlap; every index must exist in the fabric
//   model = "A100-SXM-40GB"     # a catalogue entry, as [gpu] model (not "custom"); any
//                               # catalogue key written here overrides it. The kernels' speed,
//                               # the NVLink bandwidth (nvlink_bw_bytes_per_s) and efficiency,
//                               # and the HBM capacity of the memory check follow the group's
//                               # model; PCIe and NICs are the server's. Mixed models turn the
//                               # symmetric shortcut off (every rank runs its own GPU's model).
//
//   [network]                   # congestion control and PFC: keys in network_section.cpp
//   congestion_control = "none" # none | dcqcn | swift | hybrid
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

#include "config/hardware_catalogue.hpp"
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

} // namespace

topology::ClusterSpec parse_cluster(TableReader& t, const std::string& default_name, topology::NetworkCcSpec* network) {
  topology::ClusterSpec c;
  c.name = t.get_string("name", default_name);
  c.gpus = t.get_int("gpus", 0, 0);

  const HardwareCatalogue& hw = hardware_catalogue();
  {
    TableReader g = t.table("gpu", true);
    const std::string model = g.get_string("model", std::string("custom"));
    const topology::GpuSpec* entry = hw.gpu(model);
    if (entry == nullptr && model != "custom")
      g.fail("model", "is \"" + model + "\"; valid values: " + hw.gpu_names() + ", custom");
    read_gpu_keys(g, entry, &hw, c.gpu);
    c.gpu.model = model;
    g.finish();
  }
  {
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
      const std::string model = g.get_string("model");
      const topology::GpuSpec* entry = hw.gpu(model);
      if (entry == nullptr) g.fail("model", "is \"" + model + "\"; valid values: " + hw.gpu_names());
      read_gpu_keys(g, entry, &hw, group.gpu);
      group.gpu.model = model;
      g.finish();
      c.gpu_groups.push_back(std::move(group));
    }
  }
  {
    TableReader s = t.table("server", true);
    c.server.gpus = s.get_int("gpus", 8, 1, 1024);
    c.server.pcie_bw_bytes_per_s = s.get_double("pcie_bw_bytes_per_s", c.gpu.pcie_bw_bytes_per_s, 1e-300);
    c.server.nics = s.get_int("nics", 8, 1, 1024);
    const std::string nic = s.get_string("nic", std::string("custom"));
    const topology::NicSpec* nic_entry = hw.nic(nic);
    if (nic_entry == nullptr && nic != "custom")
      s.fail("nic", "is \"" + nic + "\"; valid values: " + hw.nic_names() + ", custom");
    if (nic_entry != nullptr) c.server.nic = *nic_entry;
    c.server.nic.model = nic;
    const auto nic_gbit = nic_entry ? std::optional<double>(nic_entry->bw_bytes_per_s * 8 / 1e9) : std::nullopt;
    c.server.nic_bw_bytes_per_s = s.get_double("nic_gbit_per_s", nic_gbit, 1e-300) * 1e9 / 8;
    c.server.nic.bw_bytes_per_s = c.server.nic_bw_bytes_per_s;
    c.server.nic.efficiency = s.get_double("nic_efficiency", nic_entry ? nic_entry->efficiency : 1.0, 1e-300, 1.0);
    c.server.rails = s.get_int("rails", c.server.nics, 1, 1024);
    s.finish();
  }
  {
    TableReader s = t.table("switch", true);
    const std::string model = s.get_string("model", std::string("custom"));
    const bool named = switch_model_spec(model, c.switch_spec);
    if (!named && model != "custom")
      s.fail("model", "is \"" + model + "\"; valid values: " + hw.switch_names() + ", custom");
    if (!named) c.switch_spec.model = model; // "custom": every figure from this table
    const auto opt = [&](auto v) { return named ? std::optional(v) : std::nullopt; };
    c.switch_spec.radix = s.get_int("radix", opt(c.switch_spec.radix), 2, 4096);
    c.switch_spec.port_bw_bytes_per_s =
        s.get_double("port_gbit_per_s", opt(c.switch_spec.port_bw_bytes_per_s * 8 / 1e9), 1e-300) * 1e9 / 8;
    c.switch_spec.latency_s = s.get_double("latency_ns", opt(c.switch_spec.latency_s * 1e9), 0) * 1e-9;
    s.finish();
  }
  {
    TableReader f = t.table("fabric", true);
    c.fabric.tiers = f.get_int("tiers", 3, 2, 3);
    const std::vector<double> dflt(static_cast<size_t>(c.fabric.tiers - 1), 1.0);
    c.fabric.oversubscription = f.get_double_array("oversubscription", dflt);
    if (static_cast<int64_t>(c.fabric.oversubscription.size()) != c.fabric.tiers - 1)
      f.fail("oversubscription",
             "has " + std::to_string(c.fabric.oversubscription.size()) + " entries; " + std::to_string(c.fabric.tiers) +
                 " tiers need " + std::to_string(c.fabric.tiers - 1) +
                 (c.fabric.tiers == 3 ? " ([ToR, aggregation] down:up ratios)" : " ([ToR] down:up ratio)"));
    for (size_t i = 0; i < c.fabric.oversubscription.size(); ++i)
      if (!(c.fabric.oversubscription[i] > 0))
        f.fail("oversubscription", "[" + std::to_string(i) + "] must be a down:up ratio > 0 (1 = 1:1)");
    c.fabric.split_downlinks = f.get_bool("split_downlinks", false);
    c.fabric.servers_per_tor = f.get_int("servers_per_tor", std::nullopt, 1, 4096);
    c.fabric.tors_per_pod = f.get_int("tors_per_pod", 0, 0, 4096);
    c.fabric.cable_latency_s = f.get_double("cable_latency_ns", 0, 0) * 1e-9;
    c.fabric.rail_only = f.get_bool("rail_only", false);
    f.finish();
  }
  const topology::NetworkCcSpec net = parse_network(t);
  if (network != nullptr) *network = net;
  t.finish();
  return c;
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

ClusterFile load_cluster_file(std::string_view name_or_path, const std::vector<KeyOverride>& edits) {
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
