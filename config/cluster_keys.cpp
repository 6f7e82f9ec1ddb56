#include "config/cluster_keys.hpp"

#include <stdexcept>
#include <string>

#include "config/hardware_catalogue.hpp"

namespace twinscale::config {

namespace {
using F = ClusterFile;
using C = topology::ClusterSpec;
using G = topology::GpuSpec;
using Sv = topology::ServerSpec;
using Nc = topology::NicSpec;
using Sw = topology::SwitchSpec;
using Fb = topology::FabricSpec;
using N = topology::NetworkCcSpec;
using Dq = topology::DcqcnSpec;
using Sf = topology::SwiftSpec;
using Hy = topology::HybridSpec;
using Pf = topology::PfcSpec;

/// The names of a catalogue section ("A100-SXM-80GB", …) and, when `custom`, "custom".
template <class Map>
std::vector<std::string> catalogue_names(const Map& entries, bool custom) {
  std::vector<std::string> out;
  for (const auto& [name, entry] : entries) out.push_back(name);
  if (custom) out.push_back("custom");
  return out;
}

/// A key naming a catalogue entry, kept in the member `model` string.
template <auto... Ms>
ClusterKey model_key(std::string key, std::vector<std::string> names) {
  ClusterKey f = member<F, Ms...>(std::move(key)).not_in_json().read_by_hand();
  f.type = KeyType::Name;
  f.names = std::move(names);
  return f;
}

/// A key of an array of tables ([[gpu_groups]]): no one member, read by hand.
ClusterKey array_key(std::string key, KeyType type) {
  ClusterKey f;
  f.key = std::move(key);
  f.type = type;
  return f.read_by_hand();
}

void top_and_gpu_keys(std::vector<ClusterKey>& k) {
  const HardwareCatalogue& hw = hardware_catalogue();
  k.push_back(member<F, &F::cluster, &C::name>("name")
                  .read_by_hand()
                  .default_is("the preset's name or the file's stem")
                  .says("the cluster's name in reports"));
  k.push_back(member<F, &F::cluster, &C::gpus>("gpus").range(0).says(
      "GPUs the fabric is built for; 0 = as many as the job uses"));
  k.push_back(model_key<&F::cluster, &C::gpu, &G::model>("gpu.model", catalogue_names(hw.gpus, true))
                  .says("a GPU of the hardware catalogue (presets/hardware/gpus.toml), which gives every figure; "
                        "\"custom\": this table gives every catalogue key"));
  k.push_back(member<F, &F::cluster, &C::gpu, &G::nvlink_bw_bytes_per_s>("gpu.nvlink_bw_bytes_per_s")
                  .range_number(kAboveZero, 1e300)
                  .in("bytes/s")
                  .read_by_hand()
                  .default_is("links × link bandwidth of the model's NVLink generation")
                  .says("NVLink bandwidth per GPU, per direction, into the NVSwitch"));
  k.push_back(member<F, &F::cluster, &C::gpu, &G::nvlink, &topology::NvlinkSpec::efficiency>("gpu.nvlink_efficiency")
                  .range_number(kAboveZero, 1)
                  .read_by_hand()
                  .default_is("the NVLink generation's")
                  .says("achieved / raw NVLink bandwidth (nccl-tests busbw inside a server)"));
  k.push_back(array_key("gpu_groups.servers", KeyType::String)
                  .must_be_given()
                  .values_are("a server index (\"12\") or an inclusive range (\"0-127\")")
                  .says("the servers holding this model; groups must not overlap and every index must exist"));
  k.push_back(array_key("gpu_groups.model", KeyType::Name)
                  .must_be_given()
                  .says("a GPU of the catalogue, as [gpu] model (not \"custom\"); any catalogue key written in "
                        "the group overrides it"));
  k.back().names = catalogue_names(hw.gpus, false);
}

void server_switch_keys(std::vector<ClusterKey>& k) {
  const HardwareCatalogue& hw = hardware_catalogue();
  k.push_back(member<F, &F::cluster, &C::server, &Sv::gpus>("server.gpus")
                  .range(1, 1024)
                  .says("GPUs per server (NVLink domain) on one non-blocking NVSwitch system: 8 for DGX/HGX, 72 "
                        "for GB200 NVL72"));
  k.push_back(member<F, &F::cluster, &C::server, &Sv::pcie_bw_bytes_per_s>("server.pcie_bw_bytes_per_s")
                  .range_number(kAboveZero, 1e300)
                  .in("bytes/s")
                  .read_by_hand()
                  .default_is("the [gpu] model's")
                  .says("GPU ↔ NIC, per direction"));
  k.push_back(member<F, &F::cluster, &C::server, &Sv::nics>("server.nics")
                  .range(1, 1024)
                  .says("NICs per server; GPU i uses NIC (i mod nics)"));
  k.push_back(model_key<&F::cluster, &C::server, &Sv::nic, &Nc::model>("server.nic", catalogue_names(hw.nics, true))
                  .says("a NIC of presets/hardware/nics.toml, giving line rate and achieved efficiency; "
                        "\"custom\" needs nic_gbit_per_s"));
  ClusterKey gbit = scaled<F, &F::cluster, &C::server, &Sv::nic_bw_bytes_per_s>("server.nic_gbit_per_s", kGbitPerS)
                        .range_number(kAboveZero, 1e300)
                        .read_by_hand()
                        .default_is("the NIC model's line rate; required with \"custom\"")
                        .says("line rate per NIC, per direction");
  gbit.set = [set = gbit.set](F& f, const KeyValue& v) {
    set(f, v);
    f.cluster.server.nic.bw_bytes_per_s = f.cluster.server.nic_bw_bytes_per_s;
  };
  k.push_back(std::move(gbit));
  k.push_back(member<F, &F::cluster, &C::server, &Sv::nic, &Nc::efficiency>("server.nic_efficiency")
                  .range_number(kAboveZero, 1)
                  .read_by_hand()
                  .default_is("the NIC model's; 1 with \"custom\"")
                  .says("achieved NCCL busbw per NIC / line rate"));
  k.push_back(member<F, &F::cluster, &C::server, &Sv::rails>("server.rails")
                  .range(1, 1024)
                  .read_by_hand()
                  .default_is("nics")
                  .says("NIC i is wired to the ToR of rail (i mod rails); ≤ nics"));
  k.push_back(model_key<&F::cluster, &C::switch_spec, &Sw::model>("switch.model", catalogue_names(hw.switches, true))
                  .says("a switch of presets/hardware/switches.toml; the keys below override it; \"custom\" needs "
                        "them all"));
  constexpr const char* kFromModel = "the switch model's; required with \"custom\"";
  k.push_back(member<F, &F::cluster, &C::switch_spec, &Sw::radix>("switch.radix")
                  .range(2, 4096)
                  .read_by_hand()
                  .default_is(kFromModel)
                  .says("ports at port_gbit_per_s"));
  k.push_back(scaled<F, &F::cluster, &C::switch_spec, &Sw::port_bw_bytes_per_s>("switch.port_gbit_per_s", kGbitPerS)
                  .range_number(kAboveZero, 1e300)
                  .read_by_hand()
                  .default_is(kFromModel)
                  .says("port speed, per direction"));
  k.push_back(scaled<F, &F::cluster, &C::switch_spec, &Sw::latency_s>("switch.latency_ns", kNanoseconds)
                  .range_number(0, 1e300)
                  .read_by_hand()
                  .default_is(kFromModel)
                  .says("per switch hop (cut-through)"));
}

void fabric_keys(std::vector<ClusterKey>& k) {
  k.push_back(member<F, &F::cluster, &C::fabric, &Fb::tiers>("fabric.tiers")
                  .range(2, 3)
                  .says("2 (ToR–spine) or 3 (ToR–aggregation–spine)"));
  k.push_back(array_key("fabric.oversubscription", KeyType::Number)
                  .values_are("array of numbers > 0, one per tier below the spine")
                  .default_is("1 per tier ([1, 1] with 3 tiers)")
                  .says("down:up bandwidth ratio at the ToR (and aggregation) tier; the radix must split into "
                        "whole down and up port counts"));
  k.push_back(member<F, &F::cluster, &C::fabric, &Fb::split_downlinks>("fabric.split_downlinks")
                  .says("one ToR port carries two NIC ports at half its speed"));
  k.push_back(member<F, &F::cluster, &C::fabric, &Fb::servers_per_tor>("fabric.servers_per_tor")
                  .range(1, 4096)
                  .must_be_given()
                  .says("servers in a group sharing one ToR per rail"));
  k.push_back(member<F, &F::cluster, &C::fabric, &Fb::tors_per_pod>("fabric.tors_per_pod")
                  .range(0, 4096)
                  .says("3 tiers: server groups per pod; 0 = the aggregation switch's down ports"));
  k.push_back(scaled<F, &F::cluster, &C::fabric, &Fb::cable_latency_s>("fabric.cable_latency_ns", kNanoseconds)
                  .range_number(0, 1e300)
                  .says("propagation per link"));
  k.push_back(member<F, &F::cluster, &C::fabric, &Fb::rail_only>("fabric.rail_only")
                  .says("every rail its own Clos, no switch across rails (Wang et al. 2023); cross-rail traffic "
                        "first crosses NVLink to the GPU on the destination's rail"));
}

void network_keys(std::vector<ClusterKey>& k) {
  k.push_back(
      choice<F, &F::network, &N::congestion_control>("network.congestion_control", topology::kCongestionControlNames)
          .says("the senders' congestion control; hybrid: MegaScale's RTT + ECN (docs/congestion.md)"));
  k.push_back(member<F, &F::network, &N::mtu_bytes>("network.mtu_bytes")
                  .range_number(64, 65536)
                  .in("bytes")
                  .says("packet size the controllers count in"));
  k.push_back(scaled<F, &F::network, &N::feedback_delay_s>("network.feedback_delay_us", kMicroseconds)
                  .range_number(0, 1e6)
                  .says("congestion signal → sender (one fabric RTT)"));
  k.push_back(member<F, &F::network, &N::buffer_bytes>("network.buffer_bytes")
                  .range_number(1, 1e300)
                  .in("bytes")
                  .says("per switch port, used when PFC is off (drop above)"));
}

void dcqcn_keys(std::vector<ClusterKey>& k) {
  const auto bytes = [](ClusterKey f) { return f.in("bytes"); };
  k.push_back(bytes(member<F, &F::network, &N::dcqcn, &Dq::kmin_bytes>("network.dcqcn.kmin_bytes")
                        .range_number(0, 1e300)
                        .says("RED: no ECN mark below")));
  k.push_back(bytes(member<F, &F::network, &N::dcqcn, &Dq::kmax_bytes>("network.dcqcn.kmax_bytes")
                        .range_number(1, 1e300)
                        .says("RED: pmax at kmax, every packet above; > kmin_bytes")));
  k.push_back(member<F, &F::network, &N::dcqcn, &Dq::pmax>("network.dcqcn.pmax")
                  .range_number(1e-9, 1)
                  .says("RED: marking probability at kmax"));
  k.push_back(
      member<F, &F::network, &N::dcqcn, &Dq::g>("network.dcqcn.g").range_number(1e-9, 1).says("α gain (1/256)"));
  k.push_back(scaled<F, &F::network, &N::dcqcn, &Dq::tau_s>("network.dcqcn.tau_us", kMicroseconds)
                  .range_number(1e-3, 1e6)
                  .says("CNP interval (a rate decrease at most once per τ)"));
  k.push_back(scaled<F, &F::network, &N::dcqcn, &Dq::tau_alpha_s>("network.dcqcn.tau_alpha_us", kMicroseconds)
                  .range_number(1e-3, 1e6)
                  .says("α update timer"));
  k.push_back(scaled<F, &F::network, &N::dcqcn, &Dq::timer_s>("network.dcqcn.timer_us", kMicroseconds)
                  .range_number(1e-3, 1e6)
                  .says("rate-increase timer T"));
  k.push_back(bytes(member<F, &F::network, &N::dcqcn, &Dq::byte_counter_bytes>("network.dcqcn.byte_counter_bytes")
                        .range_number(1, 1e300)
                        .says("rate-increase byte counter B")));
  k.push_back(scaled<F, &F::network, &N::dcqcn, &Dq::rai_bytes_per_s>("network.dcqcn.rai_mbit_per_s", kMbitPerS)
                  .range_number(1e-6, 1e300)
                  .says("additive increase R_AI"));
  k.push_back(member<F, &F::network, &N::dcqcn, &Dq::fast_recovery_steps>("network.dcqcn.fast_recovery_steps")
                  .range(0, 1000000)
                  .says("F: timer and byte-counter expirations before hyper increase"));
  k.push_back(scaled<F, &F::network, &N::dcqcn, &Dq::rhai_bytes_per_s>("network.dcqcn.rhai_mbit_per_s", kMbitPerS)
                  .range_number(0, 1e300)
                  .says("hyper increase step R_HAI (10 × R_AI as QCN); 0 = off"));
  k.push_back(
      scaled<F, &F::network, &N::dcqcn, &Dq::min_rate_bytes_per_s>("network.dcqcn.min_rate_mbit_per_s", kMbitPerS)
          .range_number(1e-6, 1e300)
          .says("the lowest sending rate"));
}

void swift_hybrid_pfc_keys(std::vector<ClusterKey>& k) {
  k.push_back(scaled<F, &F::network, &N::swift, &Sf::base_target_s>("network.swift.base_target_us", kMicroseconds)
                  .range_number(1e-3, 1e6)
                  .says("delay target before hop and flow scaling"));
  k.push_back(scaled<F, &F::network, &N::swift, &Sf::hop_scale_s>("network.swift.hop_scale_us", kMicroseconds)
                  .range_number(0, 1e6)
                  .says("added to the target per switch hop"));
  k.push_back(member<F, &F::network, &N::swift, &Sf::ai_packets>("network.swift.ai_packets")
                  .range_number(1e-6, 1e6)
                  .in("packets")
                  .says("additive increase per RTT"));
  k.push_back(member<F, &F::network, &N::swift, &Sf::beta>("network.swift.beta")
                  .range_number(1e-6, 1)
                  .says("multiplicative decrease gain"));
  k.push_back(member<F, &F::network, &N::swift, &Sf::max_mdf>("network.swift.max_mdf")
                  .range_number(1e-6, 0.999)
                  .says("largest decrease per RTT"));
  k.push_back(scaled<F, &F::network, &N::swift, &Sf::fs_range_s>("network.swift.fs_range_us", kMicroseconds)
                  .range_number(0, 1e6)
                  .says("flow-scaling range (5 × base target)"));
  k.push_back(member<F, &F::network, &N::swift, &Sf::fs_min_cwnd_packets>("network.swift.fs_min_cwnd_packets")
                  .range_number(1e-6, 1e300)
                  .in("packets")
                  .says("flow scaling: the window where the target is highest"));
  k.push_back(member<F, &F::network, &N::swift, &Sf::fs_max_cwnd_packets>("network.swift.fs_max_cwnd_packets")
                  .range_number(1e-6, 1e300)
                  .in("packets")
                  .says("flow scaling: the window where it adds nothing; > fs_min_cwnd_packets"));
  k.push_back(member<F, &F::network, &N::swift, &Sf::initial_cwnd_packets>("network.swift.initial_cwnd_packets")
                  .range_number(0, 1e300)
                  .in("packets")
                  .says("the first window; 0 = one bandwidth-delay product"));
  k.push_back(member<F, &F::network, &N::hybrid, &Hy::ecn_weight>("network.hybrid.ecn_weight")
                  .range_number(0, 2)
                  .says("scales the ECN cut α/2 per CNP interval; the RTT half is [network.swift]'s, the ECN half "
                        "[network.dcqcn]'s marking, α and τ"));
  k.push_back(member<F, &F::network, &N::pfc, &Pf::enabled>("network.pfc.enabled").says("priority flow control on"));
  k.push_back(member<F, &F::network, &N::pfc, &Pf::xoff_bytes>("network.pfc.xoff_bytes")
                  .range_number(1, 1e300)
                  .in("bytes")
                  .says("pause the upstream port when the ingress queue exceeds this"));
  k.push_back(member<F, &F::network, &N::pfc, &Pf::xon_bytes>("network.pfc.xon_bytes")
                  .range_number(0, 1e300)
                  .in("bytes")
                  .says("resume below; < xoff_bytes"));
}

std::vector<ClusterKey> build_keys() {
  std::vector<ClusterKey> k;
  top_and_gpu_keys(k);
  server_switch_keys(k);
  fabric_keys(k);
  network_keys(k);
  dcqcn_keys(k);
  swift_hybrid_pfc_keys(k);
  for (ClusterKey& f : k) f.json_key.clear(); // cluster files only: no JSON form
  return k;
}

} // namespace

const std::vector<ClusterKey>& cluster_keys() {
  static const std::vector<ClusterKey> keys = build_keys();
  return keys;
}

const std::vector<KeySection>& cluster_sections() {
  static const std::vector<KeySection> sections = {
      {"", "", false, false, "The cluster's name and size."},
      {"gpu", "", true, false,
       "The GPU model. Any key of the hardware catalogue (presets/hardware/gpus.toml: peak_flops, "
       "hbm_bw_bytes_per_s, memory_bytes, sms, nvlink, gemm_max_efficiency, …) written here overrides the "
       "model's figure; with model = \"custom\" every one must be given."},
      {"gpu_groups", "", false, false,
       "An array of tables ([[gpu_groups]]), optional: servers holding another GPU model. Their kernels' "
       "speed, NVLink bandwidth and efficiency and the memory check's HBM follow the group's model; PCIe "
       "and NICs are the server's."},
      {"server", "", true, false, "A server: GPUs, PCIe, NICs and rails."},
      {"switch", "", true, false, "The switch of every tier."},
      {"fabric", "", true, false,
       "The Clos built from the numbers above (rules in topology/fabric.cpp); values that do not fit together "
       "are refused when the fabric is built, naming the key and the arithmetic."},
      {"network", "", false, false,
       "Congestion control and PFC (models and sources of the defaults: docs/congestion.md)."},
      {"network.dcqcn", "", false, false, "DCQCN (Zhu et al. SIGCOMM'15; fluid form CoNEXT'16, Table 1)."},
      {"network.swift", "", false, false, "Swift (Kumar et al. SIGCOMM'20)."},
      {"network.hybrid", "", false, false, "MegaScale's hybrid: [network.swift]'s RTT AIMD plus DCQCN's ECN cut."},
      {"network.pfc", "", false, false, "Priority flow control (IEEE 802.1Qbb), per switch ingress port."},
  };
  return sections;
}

const ClusterKey* find_cluster_key(std::string_view key) {
  for (const ClusterKey& f : cluster_keys())
    if (f.key == key) return &f;
  return nullptr;
}

const ClusterKey& cluster_key(std::string_view key) {
  if (const ClusterKey* f = find_cluster_key(key)) return *f;
  throw std::logic_error("the cluster key table has no key '" + std::string(key) + "'");
}

ClusterFile cluster_file_defaults() {
  ClusterFile f;
  f.cluster.gpu.model = "custom";
  f.cluster.server.nic.model = "custom";
  f.cluster.switch_spec.model = "custom";
  f.cluster.fabric.split_downlinks = false;
  return f;
}

} // namespace twinscale::config
