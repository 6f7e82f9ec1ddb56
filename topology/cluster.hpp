// The cluster description: GPUs, servers, NICs and rails, switches and the Clos fabric.
// Plain structs; parsing from TOML lives in config/cluster_file.cpp (keys documented there).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace twinscale::topology {

struct GpuSpec {
  std::string model;                   // "A100-SXM-80GB", "H100-SXM", "H200-SXM"
  double peak_flops = 0;               // dense BF16 FLOP/s
  double hbm_bw_bytes_per_s = 0;
  double memory_bytes = 0;
  double nvlink_bw_bytes_per_s = 0;    // per GPU, per direction, into the NVSwitch
};

struct ServerSpec {
  int64_t gpus = 8;
  double pcie_bw_bytes_per_s = 0;      // GPU ↔ host/NIC, per direction
  int64_t nics = 8;
  double nic_bw_bytes_per_s = 0;       // per NIC, per direction
  int64_t rails = 8;                   // NIC i goes to the ToR of rail (i mod rails)
};

struct SwitchSpec {
  std::string model;                   // "tomahawk4"
  int64_t radix = 64;                  // ports at port_bw
  double port_bw_bytes_per_s = 0;
  double latency_s = 0;                // per hop, cut-through
};

struct FabricSpec {
  int64_t tiers = 3;                   // 2 (ToR–spine) or 3 (ToR–aggregation–spine)
  std::vector<double> oversubscription{1.0, 1.0}; // down:up at ToR, aggregation (≥ 1)
  bool split_downlinks = true;         // one 400G ToR port as two 200G server ports (M10)
  int64_t servers_per_tor = 64;        // ≤ 64 in MegaScale
  int64_t tors_per_pod = 0;            // 0 = derived from the radix
  double cable_latency_s = 0;          // per link propagation
};

struct ClusterSpec {
  std::string name;
  GpuSpec gpu;
  ServerSpec server;
  SwitchSpec switch_spec;
  FabricSpec fabric;
  int64_t gpus = 0;                    // GPUs the fabric is built for (0 = from the job)
};

} // namespace twinscale::topology
