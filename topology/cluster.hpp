// The cluster description: GPUs, servers, NICs and rails, switches and the Clos fabric.
// Plain structs; read from TOML by config/cluster_file.cpp (keys: config/cluster_keys.cpp).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace twinscale::topology {

/// A fused-attention kernel's figures on a GPU (FlashAttention-2's, cuDNN's): its achieved
/// fractions of peak over 4,096 causal keys per query, scaled by L/(L + keys_half) over L
/// keys, × unmasked_ratio for a block without a causal mask (sim/device_model.hpp).
struct AttentionFigures {
  double fwd_efficiency = 0; // forward, fraction of peak (0: no figure)
  double bwd_efficiency = 0; // backward
  double keys_half = 0;      // keys per query that halve the rate (0: the same at every length)
  double unmasked_ratio = 1; // rate of a block with no causal mask / a causal one
  bool given() const { return fwd_efficiency > 0 && bwd_efficiency > 0; }
};

/// Achieved fractions and per-kernel figures of a GPU model, read from the hardware
/// catalogue (presets/hardware/gpus.toml, where each key is documented with its source).
struct KernelFigures {
  double sustained_clock_ratio = 1;   // tensor clock under the power limit / boost clock
  double gemm_max_efficiency = 0;     // large GEMM whose tiles fill whole waves
  double fp8_gemm_max_efficiency = 0; // the same for FP8 GEMMs, fraction of the FP8 peak (0: as BF16)
  double gemm_half_dim = 0;           // a dimension this small halves GEMM efficiency
  int64_t gemm_tile_m = 0;            // thread-block output tile (wave quantisation)
  int64_t gemm_tile_n = 0;
  AttentionFigures flash;            // FlashAttention-2 (keys flash_*)
  AttentionFigures cudnn;            // cuDNN's fused attention (keys cudnn_attention_*)
  double vector_flop_efficiency = 0; // FLOP rate of memory-bound kernels / peak
  double hbm_efficiency = 0;         // achieved / nominal HBM bandwidth
  double kernel_launch_s = 0;        // per kernel
  double op_issue_gap_s = 0;         // idle stream time before each compute op: the host's hand-off
                                     // of a ready op (the probe measures it on the CPU device)
  double nccl_sms_per_channel = 0;   // SMs one NCCL channel occupies
  double nccl_hbm_share = 0;         // HBM fraction a running communication kernel takes
  double speed_sigma = 0;            // per-GPU speed variation (std. dev. of time multiplier)
};

/// An NVLink generation (presets/hardware/nvlink.toml).
struct NvlinkSpec {
  std::string generation; // "NVLink3"
  int64_t links = 0;
  double link_bw_bytes_per_s = 0; // per link, per direction
  double efficiency = 1;          // achieved / raw (nccl-tests busbw inside a server)
};

/// A NIC model (presets/hardware/nics.toml).
struct NicSpec {
  std::string model;         // "ConnectX-6"
  double bw_bytes_per_s = 0; // line rate, per direction
  double efficiency = 1;     // achieved NCCL busbw per NIC / line rate
};

/// NCCL's tuner figures for one GPU generation (presets/hardware/nccl.toml, each figure
/// with the NCCL release and table it comes from). Per-protocol arrays are indexed LL,
/// LL128, Simple; "by servers" arrays by the communicator's servers: 1, 2, 3 or more.
/// A ceiling of 0 is none. sim/nccl_model.hpp says how each figure is used.
struct NcclTuningSpec {
  std::string generation;             // "Ampere"
  int64_t min_compute_capability = 0; // GPUs of this compute capability or above (to the next set)
  std::string nccl_release;           // where the figures come from, e.g. "2.21.5"
  std::array<bool, 3> enabled{true, true, true};
  std::array<double, 3> ring_base_latency_s{};
  std::array<double, 3> tree_base_latency_s{};
  std::array<double, 3> nvlink_ring_step_s{};
  std::array<double, 3> nvlink_tree_step_s{};
  std::array<double, 3> net_ring_step_s{};
  std::array<double, 3> net_tree_step_s{};
  double ll_nvlink_step_multi_server_factor = 1;
  std::array<double, 3> net_overhead_s{};
  int64_t all_reduce_extra_net_steps = 0;
  double ring_simple_plateau_factor = 1;
  double ring_simple_plateau_bytes_per_rank = 0;
  double ring_simple_plateau_bytes_per_rank_channel = 0;
  double ll_fraction_all_reduce_or_multi_server = 0;
  double ll_fraction_other = 0;
  std::array<double, 3> ll_max_busbw_bytes_per_s{};
  double ll128_fraction = 0;
  double ll128_fraction_one_gpu_per_server = 0;
  double ll128_max_bw_per_channel_all_reduce = 0;
  double ll128_max_bw_per_channel_all_gather = 0;
  double ll128_max_bw_per_channel_reduce_scatter = 0;
  double ll128_max_bw_per_channel_broadcast = 0;
  double tree_fraction = 0;
  double tree_ll_fraction = 0;
  double tree_ll128_fraction = 0;
  double tree_ll128_fraction_one_server = 0;
  std::array<double, 3> tree_max_bw_per_channel{};
  std::array<double, 3> tree_ll128_max_bw_per_channel{};
};

struct GpuSpec {
  std::string model;         // "A100-SXM-80GB", "H100-SXM", "H200-SXM", "B200"
  double peak_flops = 0;     // dense BF16 FLOP/s at the boost clock
  double fp8_peak_flops = 0; // dense FP8 tensor FLOP/s at the boost clock; 0 = no FP8 (pre-Hopper)
  double hbm_bw_bytes_per_s = 0;
  double memory_bytes = 0;
  double nvlink_bw_bytes_per_s = 0; // per GPU, per direction, into the NVSwitch
  double pcie_bw_bytes_per_s = 0;   // host interface, per direction (server default)
  int64_t sms = 0;                  // streaming multiprocessors
  int64_t compute_capability = 0;   // 80 (A100), 90 (H100, H200), 100 (B200, GB200)
  NvlinkSpec nvlink;
  KernelFigures kernels;
  NcclTuningSpec nccl; // the NCCL tuner set of its compute capability
};

struct ServerSpec {
  int64_t gpus = 8;
  double pcie_bw_bytes_per_s = 0; // GPU ↔ host/NIC, per direction
  int64_t nics = 8;
  double nic_bw_bytes_per_s = 0; // per NIC, per direction
  int64_t rails = 8;             // NIC i goes to the ToR of rail (i mod rails)
  NicSpec nic;                   // the NIC model (efficiency of network links)
};

struct SwitchSpec {
  std::string model;  // "tomahawk4"
  int64_t radix = 64; // ports at port_bw
  double port_bw_bytes_per_s = 0;
  double latency_s = 0; // per hop, cut-through
};

struct FabricSpec {
  int64_t tiers = 3;                              // 2 (ToR–spine) or 3 (ToR–aggregation–spine)
  std::vector<double> oversubscription{1.0, 1.0}; // down:up at ToR, aggregation (≥ 1)
  bool split_downlinks = true;                    // one 400G ToR port as two 200G server ports (M10)
  int64_t servers_per_tor = 64;                   // ≤ 64 in MegaScale
  int64_t tors_per_pod = 0;                       // 0 = derived from the radix
  double cable_latency_s = 0;                     // per link propagation
  // Rail-only (Wang et al., "How to Build Low-cost Networks for Large Language Models"):
  // each rail is its own Clos and no switch connects rails; traffic between servers on
  // different rails first crosses NVLink to the GPU of the destination's rail.
  bool rail_only = false;
};

/// Servers first_server..last_server (inclusive) hold GPUs of another model than the
/// cluster's [gpu] (a cluster file's [[gpu_groups]]): their kernels run at that model's
/// speed, their NVLink (into the server's NVSwitch) has that model's bandwidth, and the
/// memory check uses that model's HBM capacity. PCIe and NICs stay the server's.
struct GpuGroup {
  int64_t first_server = 0;
  int64_t last_server = 0;
  GpuSpec gpu;
};

struct ClusterSpec {
  std::string name;
  GpuSpec gpu;
  ServerSpec server;
  SwitchSpec switch_spec;
  FabricSpec fabric;
  int64_t gpus = 0;                 // GPUs the fabric is built for (0 = from the job)
  std::vector<GpuGroup> gpu_groups; // servers with another GPU model (none: every GPU is `gpu`)
};

/// Which GPU model server `server` holds: 0 for the cluster's [gpu], g + 1 for
/// gpu_groups[g].
inline size_t gpu_model_of_server(const ClusterSpec& c, int64_t server) {
  for (size_t g = 0; g < c.gpu_groups.size(); ++g)
    if (server >= c.gpu_groups[g].first_server && server <= c.gpu_groups[g].last_server) return g + 1;
  return 0;
}

/// The GPU model server `server` holds (gpu_model_of_server).
inline const GpuSpec& gpu_of_server(const ClusterSpec& c, int64_t server) {
  const size_t g = gpu_model_of_server(c, server);
  return g == 0 ? c.gpu : c.gpu_groups[g - 1].gpu;
}

} // namespace twinscale::topology
