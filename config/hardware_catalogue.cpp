#include "config/hardware_catalogue.hpp"

#include <vector>

#include "common/key_schema.hpp"
#include "config/gpu_keys.hpp"
#include "config/presets.hpp"
#include "schedules/error.hpp"

namespace twinscale::config {

namespace {

template <class M>
std::string names_of(const M& m) {
  std::string out;
  for (const auto& [name, v] : m) out += (out.empty() ? "" : ", ") + name;
  return out.empty() ? std::string("(none)") : out;
}

template <class M>
const typename M::mapped_type* find_in(const M& m, std::string_view key) {
  auto it = m.find(key);
  return it == m.end() ? nullptr : &it->second;
}

/// The names of the sub-tables of a catalogue file, in file order; anything else is an error.
std::vector<std::string> entry_names(const toml::table& root, const std::string& file) {
  std::vector<std::string> out;
  for (const auto& [k, v] : root) {
    if (!v.is_table())
      throw ConfigError(file + ": key '" + std::string(k.str()) +
                        "' must be a table [NAME] of figures (one entry per model)");
    out.emplace_back(k.str());
  }
  if (out.empty()) throw ConfigError(file + ": no entries; expected [NAME] tables");
  return out;
}

double pos(TableReader& t, std::string_view key, std::optional<double> base, double max = 1e300) {
  return t.get_double(key, base, kAboveZero, max);
}

/// `key` = [LL, LL128, Simple] in microseconds → seconds.
std::array<double, 3> per_protocol_us(TableReader& t, std::string_view key) {
  const std::vector<double> v = t.get_double_array(key);
  if (v.size() != 3)
    t.fail(key, "must have 3 entries [LL, LL128, Simple] (microseconds), got " + std::to_string(v.size()));
  for (double x : v)
    if (!(x >= 0)) t.fail(key, "entries must be ≥ 0 microseconds");
  return {v[0] * 1e-6, v[1] * 1e-6, v[2] * 1e-6};
}

void read_nvlink(TableReader& t, topology::NvlinkSpec& out) {
  out.links = t.get_int("links", std::nullopt, 1, 1024);
  out.link_bw_bytes_per_s = pos(t, "link_bw_bytes_per_s", std::nullopt);
  out.efficiency = pos(t, "efficiency", std::nullopt, 1.0);
  t.finish();
}

void read_nic(TableReader& t, topology::NicSpec& out) {
  out.bw_bytes_per_s = pos(t, "gbit_per_s", std::nullopt) * 1e9 / 8;
  out.efficiency = pos(t, "efficiency", std::nullopt, 1.0);
  t.finish();
}

/// `key` = [LL, LL128, Simple] in seconds.
std::array<double, 3> per_protocol_s(TableReader& t, std::string_view key) {
  const std::vector<double> v = t.get_double_array(key);
  if (v.size() != 3) t.fail(key, "must have 3 entries [LL, LL128, Simple] (seconds), got " + std::to_string(v.size()));
  for (double x : v)
    if (!(x >= 0)) t.fail(key, "entries must be ≥ 0 seconds");
  return {v[0], v[1], v[2]};
}

/// `key` = [1 server, 2 servers, 3 or more] in GB/s → bytes/s; 0 = no ceiling.
std::array<double, 3> by_servers_gbps(TableReader& t, std::string_view key) {
  const std::vector<double> v = t.get_double_array(key);
  if (v.size() != 3)
    t.fail(key,
           "must have 3 entries [1 server, 2 servers, 3 or more] (GB/s, 0 = none), got " + std::to_string(v.size()));
  for (double x : v)
    if (!(x >= 0)) t.fail(key, "entries must be ≥ 0 GB/s (0 = no ceiling)");
  return {v[0] * 1e9, v[1] * 1e9, v[2] * 1e9};
}

void read_nccl_latencies(TableReader& t, topology::NcclTuningSpec& out) {
  out.ring_base_latency_s = per_protocol_s(t, "ring_base_latency_s");
  out.tree_base_latency_s = per_protocol_s(t, "tree_base_latency_s");
  out.nvlink_ring_step_s = per_protocol_us(t, "nvlink_ring_step_us");
  out.nvlink_tree_step_s = per_protocol_us(t, "nvlink_tree_step_us");
  out.net_ring_step_s = per_protocol_us(t, "net_ring_step_us");
  out.net_tree_step_s = per_protocol_us(t, "net_tree_step_us");
  out.ll_nvlink_step_multi_server_factor = t.get_double("ll_nvlink_step_multi_server_factor", std::nullopt, 1, 100);
  out.net_overhead_s = per_protocol_us(t, "net_overhead_us");
  out.all_reduce_extra_net_steps = t.get_int("all_reduce_extra_net_steps", std::nullopt, 0, 2);
  out.ring_simple_plateau_factor = t.get_double("ring_simple_plateau_factor", std::nullopt, 1, 100);
  out.ring_simple_plateau_bytes_per_rank = t.get_double("ring_simple_plateau_bytes_per_rank", std::nullopt, 0);
  out.ring_simple_plateau_bytes_per_rank_channel =
      t.get_double("ring_simple_plateau_bytes_per_rank_channel", std::nullopt, 0);
}

void read_nccl(TableReader& t, topology::NcclTuningSpec& out) {
  out.min_compute_capability = t.get_int("min_compute_capability", std::nullopt, 10, 1000);
  out.nccl_release = t.get_string("nccl_release");
  out.enabled = {true, t.get_bool("ll128"), true};
  read_nccl_latencies(t, out);
  const auto frac = [&](std::string_view key) { return pos(t, key, std::nullopt, 1.0); };
  const auto gbps = [&](std::string_view key) { return pos(t, key, std::nullopt) * 1e9; };
  out.ll_fraction_all_reduce_or_multi_server = frac("ll_fraction_all_reduce_or_multi_server");
  out.ll_fraction_other = frac("ll_fraction_other");
  out.ll_max_busbw_bytes_per_s = by_servers_gbps(t, "ll_max_busbw_gbps");
  out.ll128_fraction = frac("ll128_fraction");
  out.ll128_fraction_one_gpu_per_server = frac("ll128_fraction_one_gpu_per_server");
  out.ll128_max_bw_per_channel_all_reduce = gbps("ll128_max_gbps_per_channel_all_reduce");
  out.ll128_max_bw_per_channel_all_gather = gbps("ll128_max_gbps_per_channel_all_gather");
  out.ll128_max_bw_per_channel_reduce_scatter = gbps("ll128_max_gbps_per_channel_reduce_scatter");
  out.ll128_max_bw_per_channel_broadcast = gbps("ll128_max_gbps_per_channel_broadcast");
  out.tree_fraction = frac("tree_fraction");
  out.tree_ll_fraction = frac("tree_ll_fraction");
  out.tree_ll128_fraction = frac("tree_ll128_fraction");
  out.tree_ll128_fraction_one_server = frac("tree_ll128_fraction_one_server");
  out.tree_max_bw_per_channel = by_servers_gbps(t, "tree_max_gbps_per_channel");
  out.tree_ll128_max_bw_per_channel = by_servers_gbps(t, "tree_ll128_max_gbps_per_channel");
  t.finish();
}

void read_switch(TableReader& t, topology::SwitchSpec& out) {
  out.radix = t.get_int("radix", std::nullopt, 2, 4096);
  out.port_bw_bytes_per_s = pos(t, "port_gbit_per_s", std::nullopt) * 1e9 / 8;
  out.latency_s = t.get_double("latency_ns", std::nullopt, 0) * 1e-9;
  t.finish();
}

template <class Spec, class Read>
std::map<std::string, Spec, std::less<>> parse_section(std::string_view text, const std::string& file, Read read) {
  const toml::table root = parse_toml(text, file);
  std::map<std::string, Spec, std::less<>> out;
  for (const auto& name : entry_names(root, file)) {
    TableReader top(root, file);
    TableReader t = top.table(name, true);
    Spec s;
    read(name, t, s);
    out.emplace(name, std::move(s));
  }
  return out;
}

} // namespace

const topology::GpuSpec* HardwareCatalogue::gpu(std::string_view m) const { return find_in(gpus, m); }
const topology::NvlinkSpec* HardwareCatalogue::nvlink(std::string_view g) const { return find_in(nvlinks, g); }
const topology::NicSpec* HardwareCatalogue::nic(std::string_view m) const { return find_in(nics, m); }
const topology::SwitchSpec* HardwareCatalogue::switch_model(std::string_view m) const { return find_in(switches, m); }
std::string HardwareCatalogue::gpu_names() const { return names_of(gpus); }
std::string HardwareCatalogue::nvlink_names() const { return names_of(nvlinks); }
std::string HardwareCatalogue::nic_names() const { return names_of(nics); }
std::string HardwareCatalogue::switch_names() const { return names_of(switches); }

const topology::NcclTuningSpec* HardwareCatalogue::nccl_for(int64_t compute_capability) const {
  const topology::NcclTuningSpec* best = nullptr;
  for (const auto& [name, n] : nccl)
    if (n.min_compute_capability <= compute_capability &&
        (best == nullptr || n.min_compute_capability > best->min_compute_capability))
      best = &n;
  return best;
}

std::string HardwareCatalogue::nccl_names() const {
  std::string out;
  for (const auto& [name, n] : nccl)
    out += (out.empty() ? "" : ", ") + name + " (≥ " + std::to_string(n.min_compute_capability) + ")";
  return out.empty() ? std::string("(none)") : out;
}

namespace {

/// One key of the GPU key table read over `g` (its current value is the fallback where
/// `has_base` or the key is optional).
void read_gpu_key(TableReader& t, const GpuKey& f, bool has_base, topology::GpuSpec& g) {
  const KeyValue now = f.get(g);
  const bool fallback = has_base || !f.required;
  switch (f.type) {
  case KeyType::Integer: {
    const auto fb = fallback ? std::optional<int64_t>(std::get<int64_t>(now)) : std::nullopt;
    f.set(g, t.get_int(f.key, fb, f.int_min, f.int_max));
    break;
  }
  case KeyType::Number: {
    const auto fb = fallback ? std::optional<double>(std::get<double>(now)) : std::nullopt;
    f.set(g, t.get_double(f.key, fb, f.num_min, f.num_max));
    break;
  }
  default: TWINSCALE_ASSERT(false, "GPU key '" + f.key + "' of a type read by hand");
  }
}

/// nvlink: a generation of the catalogue; its bandwidth unless nvlink_bw_bytes_per_s says.
void read_nvlink_generation(TableReader& t, const topology::GpuSpec* base, const HardwareCatalogue* catalogue,
                            topology::GpuSpec& g) {
  const std::string gen = t.get_string("nvlink", base ? std::optional<std::string>(g.nvlink.generation) : std::nullopt);
  if (base && gen == base->nvlink.generation) return;
  const topology::NvlinkSpec* nv = catalogue ? catalogue->nvlink(gen) : nullptr;
  if (nv == nullptr)
    t.fail("nvlink", "is \"" + gen + "\"; valid values: " +
                         (catalogue ? catalogue->nvlink_names() : std::string("(no catalogue)")));
  g.nvlink = *nv;
  g.nvlink.generation = gen;
  g.nvlink_bw_bytes_per_s = static_cast<double>(nv->links) * nv->link_bw_bytes_per_s;
}

/// compute_capability, and with it NCCL's tuner set of the generation.
void read_compute_capability(TableReader& t, const GpuKey& f, const topology::GpuSpec* base,
                             const HardwareCatalogue* catalogue, topology::GpuSpec& g) {
  g.compute_capability =
      t.get_int(f.key, base ? std::optional<int64_t>(g.compute_capability) : std::nullopt, f.int_min, f.int_max);
  if (base && g.compute_capability == base->compute_capability) return;
  const topology::NcclTuningSpec* n = catalogue ? catalogue->nccl_for(g.compute_capability) : nullptr;
  if (n == nullptr)
    t.fail(f.key, "is " + std::to_string(g.compute_capability) + ", below every NCCL tuner set of the catalogue: " +
                      (catalogue ? catalogue->nccl_names() : std::string("(no catalogue)")));
  g.nccl = *n;
}

} // namespace

void read_gpu_keys(TableReader& t, const topology::GpuSpec* base, const HardwareCatalogue* catalogue,
                   topology::GpuSpec& g) {
  if (base) g = *base;
  for (const GpuKey& f : gpu_keys()) {
    if (f.key == "nvlink")
      read_nvlink_generation(t, base, catalogue, g);
    else if (f.key == "compute_capability")
      read_compute_capability(t, f, base, catalogue, g);
    else // nvlink_bw_bytes_per_s included: its fallback is the generation's, set just before
      read_gpu_key(t, f, base != nullptr || f.by_hand, g);
  }
}

HardwareCatalogue parse_hardware_catalogue(std::string_view gpus_text, std::string_view nvlink_text,
                                           std::string_view nics_text, std::string_view switches_text,
                                           const std::string& gpus_file, const std::string& nvlink_file,
                                           const std::string& nics_file, const std::string& switches_file,
                                           std::string_view nccl_text, const std::string& nccl_file) {
  HardwareCatalogue c;
  c.nccl = parse_section<topology::NcclTuningSpec>(
      nccl_text.empty() ? preset_text("hardware", "nccl") : nccl_text, nccl_file,
      [](const std::string& n, TableReader& t, topology::NcclTuningSpec& s) {
        s.generation = n;
        read_nccl(t, s);
      });
  c.nvlinks = parse_section<topology::NvlinkSpec>(nvlink_text, nvlink_file,
                                                  [](const std::string& n, TableReader& t, topology::NvlinkSpec& s) {
                                                    s.generation = n;
                                                    read_nvlink(t, s);
                                                  });
  c.nics = parse_section<topology::NicSpec>(nics_text, nics_file,
                                            [](const std::string& n, TableReader& t, topology::NicSpec& s) {
                                              s.model = n;
                                              read_nic(t, s);
                                            });
  c.switches = parse_section<topology::SwitchSpec>(switches_text, switches_file,
                                                   [](const std::string& n, TableReader& t, topology::SwitchSpec& s) {
                                                     s.model = n;
                                                     read_switch(t, s);
                                                   });
  c.gpus = parse_section<topology::GpuSpec>(gpus_text, gpus_file,
                                            [&c](const std::string& n, TableReader& t, topology::GpuSpec& g) {
                                              read_gpu_keys(t, nullptr, &c, g);
                                              g.model = n;
                                              t.finish();
                                            });
  return c;
}

const HardwareCatalogue& hardware_catalogue() {
  static const HardwareCatalogue c =
      parse_hardware_catalogue(preset_text("hardware", "gpus"), preset_text("hardware", "nvlink"),
                               preset_text("hardware", "nics"), preset_text("hardware", "switches"));
  return c;
}

} // namespace twinscale::config
