// Every cluster the project ships (presets/clusters/*.toml and the clusters of
// experiments/) and a test cluster using every reader path ([[gpu_groups]], custom NIC
// and switch, catalogue overrides, [network]) loads to the same ClusterSpec and [network]
// as recorded in tests/config/data/shipped_clusters.txt: a dump of every field, numbers
// to 17 digits. The reader may change; what a valid file means may not.
//
// The record is written by the reader it guards; after an intended change of meaning,
// rewrite it with TWINSCALE_WRITE_CLUSTER_DUMP=PATH build/tests/test_config "[shipped-clusters]".
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "config/cluster_file.hpp"
#include "tests/config/record_file.hpp"

using namespace twinscale;
namespace fs = std::filesystem;
using twinscale::test::Dump;

namespace {

void dump_nccl(Dump& d, const std::string& n, const topology::NcclTuningSpec& t) {
  d.add(n + "generation", t.generation);
  d.add(n + "min_compute_capability", t.min_compute_capability);
  d.add(n + "nccl_release", t.nccl_release);
  for (size_t i = 0; i < t.enabled.size(); ++i) d.add(n + "enabled[" + std::to_string(i) + "]", t.enabled[i]);
  d.add(n + "ring_base_latency_s", t.ring_base_latency_s);
  d.add(n + "tree_base_latency_s", t.tree_base_latency_s);
  d.add(n + "nvlink_ring_step_s", t.nvlink_ring_step_s);
  d.add(n + "nvlink_tree_step_s", t.nvlink_tree_step_s);
  d.add(n + "net_ring_step_s", t.net_ring_step_s);
  d.add(n + "net_tree_step_s", t.net_tree_step_s);
  d.add(n + "ll_nvlink_step_multi_server_factor", t.ll_nvlink_step_multi_server_factor);
  d.add(n + "net_overhead_s", t.net_overhead_s);
  d.add(n + "all_reduce_extra_net_steps", t.all_reduce_extra_net_steps);
  d.add(n + "ring_simple_plateau_factor", t.ring_simple_plateau_factor);
  d.add(n + "ring_simple_plateau_bytes_per_rank", t.ring_simple_plateau_bytes_per_rank);
  d.add(n + "ring_simple_plateau_bytes_per_rank_channel", t.ring_simple_plateau_bytes_per_rank_channel);
  d.add(n + "ll_fraction_all_reduce_or_multi_server", t.ll_fraction_all_reduce_or_multi_server);
  d.add(n + "ll_fraction_other", t.ll_fraction_other);
  d.add(n + "ll_max_busbw_bytes_per_s", t.ll_max_busbw_bytes_per_s);
  d.add(n + "ll128_fraction", t.ll128_fraction);
  d.add(n + "ll128_fraction_one_gpu_per_server", t.ll128_fraction_one_gpu_per_server);
  d.add(n + "ll128_max_bw_per_channel_all_reduce", t.ll128_max_bw_per_channel_all_reduce);
  d.add(n + "ll128_max_bw_per_channel_all_gather", t.ll128_max_bw_per_channel_all_gather);
  d.add(n + "ll128_max_bw_per_channel_reduce_scatter", t.ll128_max_bw_per_channel_reduce_scatter);
  d.add(n + "ll128_max_bw_per_channel_broadcast", t.ll128_max_bw_per_channel_broadcast);
  d.add(n + "tree_fraction", t.tree_fraction);
  d.add(n + "tree_ll_fraction", t.tree_ll_fraction);
  d.add(n + "tree_ll128_fraction", t.tree_ll128_fraction);
  d.add(n + "tree_ll128_fraction_one_server", t.tree_ll128_fraction_one_server);
  d.add(n + "tree_max_bw_per_channel", t.tree_max_bw_per_channel);
  d.add(n + "tree_ll128_max_bw_per_channel", t.tree_ll128_max_bw_per_channel);
}

void dump_gpu(Dump& d, const std::string& at, const topology::GpuSpec& g) {
  d.add(at + ".model", g.model);
  d.add(at + ".peak_flops", g.peak_flops);
  d.add(at + ".fp8_peak_flops", g.fp8_peak_flops);
  d.add(at + ".hbm_bw_bytes_per_s", g.hbm_bw_bytes_per_s);
  d.add(at + ".memory_bytes", g.memory_bytes);
  d.add(at + ".nvlink_bw_bytes_per_s", g.nvlink_bw_bytes_per_s);
  d.add(at + ".pcie_bw_bytes_per_s", g.pcie_bw_bytes_per_s);
  d.add(at + ".sms", g.sms);
  d.add(at + ".nvlink.generation", g.nvlink.generation);
  d.add(at + ".nvlink.links", g.nvlink.links);
  d.add(at + ".nvlink.link_bw_bytes_per_s", g.nvlink.link_bw_bytes_per_s);
  d.add(at + ".nvlink.efficiency", g.nvlink.efficiency);
  d.add(at + ".compute_capability", g.compute_capability);
  dump_nccl(d, at + ".nccl.", g.nccl);
  const topology::KernelFigures& k = g.kernels;
  const std::string kk = at + ".kernels.";
  d.add(kk + "sustained_clock_ratio", k.sustained_clock_ratio);
  d.add(kk + "gemm_max_efficiency", k.gemm_max_efficiency);
  d.add(kk + "fp8_gemm_max_efficiency", k.fp8_gemm_max_efficiency);
  d.add(kk + "gemm_half_dim", k.gemm_half_dim);
  d.add(kk + "gemm_tile_m", k.gemm_tile_m);
  d.add(kk + "gemm_tile_n", k.gemm_tile_n);
  for (const auto& [prefix, a] : {std::pair{"flash_", &k.flash}, std::pair{"cudnn_attention_", &k.cudnn}}) {
    d.add(kk + prefix + "fwd_efficiency", a->fwd_efficiency);
    d.add(kk + prefix + "bwd_efficiency", a->bwd_efficiency);
    d.add(kk + prefix + "keys_half", a->keys_half);
    d.add(kk + prefix + "unmasked_ratio", a->unmasked_ratio);
  }
  d.add(kk + "vector_flop_efficiency", k.vector_flop_efficiency);
  d.add(kk + "hbm_efficiency", k.hbm_efficiency);
  d.add(kk + "kernel_launch_s", k.kernel_launch_s);
  d.add(kk + "op_issue_gap_s", k.op_issue_gap_s);
  d.add(kk + "nccl_sms_per_channel", k.nccl_sms_per_channel);
  d.add(kk + "nccl_hbm_share", k.nccl_hbm_share);
  d.add(kk + "speed_sigma", k.speed_sigma);
}

void dump_network(Dump& d, const topology::NetworkCcSpec& n) {
  d.add("network.congestion_control", static_cast<int64_t>(n.congestion_control));
  d.add("network.mtu_bytes", n.mtu_bytes);
  d.add("network.feedback_delay_s", n.feedback_delay_s);
  d.add("network.buffer_bytes", n.buffer_bytes);
  const topology::DcqcnSpec& q = n.dcqcn;
  for (const auto& [k, v] :
       std::vector<std::pair<const char*, double>>{{"kmin_bytes", q.kmin_bytes},
                                                   {"kmax_bytes", q.kmax_bytes},
                                                   {"pmax", q.pmax},
                                                   {"g", q.g},
                                                   {"tau_s", q.tau_s},
                                                   {"tau_alpha_s", q.tau_alpha_s},
                                                   {"timer_s", q.timer_s},
                                                   {"byte_counter_bytes", q.byte_counter_bytes},
                                                   {"rai_bytes_per_s", q.rai_bytes_per_s},
                                                   {"rhai_bytes_per_s", q.rhai_bytes_per_s},
                                                   {"min_rate_bytes_per_s", q.min_rate_bytes_per_s}})
    d.add(std::string("network.dcqcn.") + k, v);
  d.add("network.dcqcn.fast_recovery_steps", q.fast_recovery_steps);
  const topology::SwiftSpec& w = n.swift;
  for (const auto& [k, v] :
       std::vector<std::pair<const char*, double>>{{"base_target_s", w.base_target_s},
                                                   {"hop_scale_s", w.hop_scale_s},
                                                   {"ai_packets", w.ai_packets},
                                                   {"beta", w.beta},
                                                   {"max_mdf", w.max_mdf},
                                                   {"fs_range_s", w.fs_range_s},
                                                   {"fs_min_cwnd_packets", w.fs_min_cwnd_packets},
                                                   {"fs_max_cwnd_packets", w.fs_max_cwnd_packets},
                                                   {"initial_cwnd_packets", w.initial_cwnd_packets}})
    d.add(std::string("network.swift.") + k, v);
  d.add("network.hybrid.ecn_weight", n.hybrid.ecn_weight);
  d.add("network.pfc.enabled", n.pfc.enabled);
  d.add("network.pfc.xoff_bytes", n.pfc.xoff_bytes);
  d.add("network.pfc.xon_bytes", n.pfc.xon_bytes);
}

std::string dump(const config::ClusterFile& f) {
  const topology::ClusterSpec& c = f.cluster;
  Dump d;
  d.add("name", c.name);
  d.add("gpus", c.gpus);
  dump_gpu(d, "gpu", c.gpu);
  d.add("server.gpus", c.server.gpus);
  d.add("server.pcie_bw_bytes_per_s", c.server.pcie_bw_bytes_per_s);
  d.add("server.nics", c.server.nics);
  d.add("server.nic_bw_bytes_per_s", c.server.nic_bw_bytes_per_s);
  d.add("server.rails", c.server.rails);
  d.add("server.nic.model", c.server.nic.model);
  d.add("server.nic.bw_bytes_per_s", c.server.nic.bw_bytes_per_s);
  d.add("server.nic.efficiency", c.server.nic.efficiency);
  d.add("switch.model", c.switch_spec.model);
  d.add("switch.radix", c.switch_spec.radix);
  d.add("switch.port_bw_bytes_per_s", c.switch_spec.port_bw_bytes_per_s);
  d.add("switch.latency_s", c.switch_spec.latency_s);
  d.add("fabric.tiers", c.fabric.tiers);
  for (size_t i = 0; i < c.fabric.oversubscription.size(); ++i)
    d.add("fabric.oversubscription[" + std::to_string(i) + "]", c.fabric.oversubscription[i]);
  d.add("fabric.split_downlinks", c.fabric.split_downlinks);
  d.add("fabric.servers_per_tor", c.fabric.servers_per_tor);
  d.add("fabric.tors_per_pod", c.fabric.tors_per_pod);
  d.add("fabric.cable_latency_s", c.fabric.cable_latency_s);
  d.add("fabric.rail_only", c.fabric.rail_only);
  for (size_t g = 0; g < c.gpu_groups.size(); ++g) {
    const std::string at = "gpu_groups[" + std::to_string(g) + "]";
    d.add(at + ".first_server", c.gpu_groups[g].first_server);
    d.add(at + ".last_server", c.gpu_groups[g].last_server);
    dump_gpu(d, at + ".gpu", c.gpu_groups[g].gpu);
  }
  dump_network(d, f.network);
  return d.out;
}

/// Cluster files the project ships: presets and every experiment TOML with a [fabric] table.
std::vector<std::string> shipped_clusters() {
  const fs::path root(TWINSCALE_SOURCE_DIR);
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(root / "presets/clusters"))
    if (e.path().extension() == ".toml") out.push_back(fs::relative(e.path(), root).string());
  for (const auto& e : fs::recursive_directory_iterator(root / "experiments")) {
    if (e.path().extension() != ".toml") continue;
    std::ifstream in(e.path());
    std::string line;
    while (std::getline(in, line))
      if (line == "[fabric]") {
        out.push_back(fs::relative(e.path(), root).string());
        break;
      }
  }
  out.push_back("tests/config/data/every_path_cluster.toml");
  std::sort(out.begin(), out.end());
  return out;
}

} // namespace

TEST_CASE("every shipped cluster loads to the recorded ClusterSpec and network", "[config][shipped-clusters]") {
  const fs::path root(TWINSCALE_SOURCE_DIR);
  const std::vector<std::string> files = shipped_clusters();
  REQUIRE(files.size() >= 20);
  std::map<std::string, std::string> now;
  for (const std::string& f : files) now[f] = dump(config::load_cluster_file((root / f).string()));
  REQUIRE(now.size() == files.size());
  test::check_against_record(now, root / "tests/config/data/shipped_clusters.txt", "TWINSCALE_WRITE_CLUSTER_DUMP");
}
