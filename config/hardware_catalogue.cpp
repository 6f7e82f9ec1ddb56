#include "config/hardware_catalogue.hpp"

#include <vector>

#include "config/presets.hpp"

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
  return t.get_double(key, base, 1e-300, max);
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
  out.nccl_ring_step_s = per_protocol_us(t, "nccl_ring_step_us");
  out.nccl_tree_step_s = per_protocol_us(t, "nccl_tree_step_us");
  t.finish();
}

void read_nic(TableReader& t, topology::NicSpec& out) {
  out.bw_bytes_per_s = pos(t, "gbit_per_s", std::nullopt) * 1e9 / 8;
  out.efficiency = pos(t, "efficiency", std::nullopt, 1.0);
  out.nccl_ring_step_s = per_protocol_us(t, "nccl_ring_step_us");
  out.nccl_tree_step_s = per_protocol_us(t, "nccl_tree_step_us");
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

void read_gpu_keys(TableReader& t, const topology::GpuSpec* base, const HardwareCatalogue* catalogue,
                   topology::GpuSpec& g) {
  const auto b = [&](auto v) { return base ? std::optional<decltype(v)>(v) : std::nullopt; };
  if (base) g = *base;
  g.peak_flops = pos(t, "peak_flops", b(g.peak_flops));
  g.fp8_peak_flops = t.get_double("fp8_peak_flops", base ? g.fp8_peak_flops : 0.0, 0); // optional: 0 = no FP8
  g.hbm_bw_bytes_per_s = pos(t, "hbm_bw_bytes_per_s", b(g.hbm_bw_bytes_per_s));
  g.memory_bytes = pos(t, "memory_bytes", b(g.memory_bytes));
  g.pcie_bw_bytes_per_s = pos(t, "pcie_bw_bytes_per_s", b(g.pcie_bw_bytes_per_s));
  g.sms = t.get_int("sms", b(g.sms), 1, 100000);
  // NVLink: a generation of the catalogue, per-GPU bandwidth and efficiency overridable.
  const std::string gen = t.get_string("nvlink", b(g.nvlink.generation));
  if (!base || gen != base->nvlink.generation) {
    const topology::NvlinkSpec* nv = catalogue ? catalogue->nvlink(gen) : nullptr;
    if (nv == nullptr)
      t.fail("nvlink", "is \"" + gen + "\"; valid values: " +
                           (catalogue ? catalogue->nvlink_names() : std::string("(no catalogue)")));
    g.nvlink = *nv;
    g.nvlink.generation = gen;
    g.nvlink_bw_bytes_per_s = static_cast<double>(nv->links) * nv->link_bw_bytes_per_s;
  }
  g.nvlink_bw_bytes_per_s = pos(t, "nvlink_bw_bytes_per_s", g.nvlink_bw_bytes_per_s);
  g.nvlink.efficiency = pos(t, "nvlink_efficiency", g.nvlink.efficiency, 1.0);
  auto& k = g.kernels;
  k.sustained_clock_ratio = pos(t, "sustained_clock_ratio", b(k.sustained_clock_ratio), 1.0);
  k.gemm_max_efficiency = pos(t, "gemm_max_efficiency", b(k.gemm_max_efficiency), 1.0);
  // optional: 0 = FP8 GEMMs reach the BF16 fraction of their own peak
  k.fp8_gemm_max_efficiency = t.get_double("fp8_gemm_max_efficiency", base ? k.fp8_gemm_max_efficiency : 0.0, 0, 1.0);
  k.gemm_half_dim = t.get_double("gemm_half_dim", b(k.gemm_half_dim), 0);
  k.gemm_tile_m = t.get_int("gemm_tile_m", b(k.gemm_tile_m), 1, 4096);
  k.gemm_tile_n = t.get_int("gemm_tile_n", b(k.gemm_tile_n), 1, 4096);
  k.flash_fwd_efficiency = pos(t, "flash_fwd_efficiency", b(k.flash_fwd_efficiency), 1.0);
  k.flash_bwd_efficiency = pos(t, "flash_bwd_efficiency", b(k.flash_bwd_efficiency), 1.0);
  k.vector_flop_efficiency = pos(t, "vector_flop_efficiency", b(k.vector_flop_efficiency), 1.0);
  k.hbm_efficiency = pos(t, "hbm_efficiency", b(k.hbm_efficiency), 1.0);
  k.kernel_launch_s = t.get_double("kernel_launch_s", b(k.kernel_launch_s), 0, 1.0);
  // optional: 0 = none (a GPU's launch cost is in kernel_launch_s; a probed CPU host's hand-off)
  k.op_issue_gap_s = t.get_double("op_issue_gap_s", base ? k.op_issue_gap_s : 0.0, 0, 1.0);
  k.nccl_sms_per_channel = t.get_double("nccl_sms_per_channel", b(k.nccl_sms_per_channel), 0, 1e6);
  k.nccl_hbm_share = t.get_double("nccl_hbm_share", b(k.nccl_hbm_share), 0, 1.0);
  k.speed_sigma = t.get_double("speed_sigma", b(k.speed_sigma), 0, 0.2);
}

HardwareCatalogue parse_hardware_catalogue(std::string_view gpus_text, std::string_view nvlink_text,
                                           std::string_view nics_text, std::string_view switches_text,
                                           const std::string& gpus_file, const std::string& nvlink_file,
                                           const std::string& nics_file, const std::string& switches_file) {
  HardwareCatalogue c;
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
