// The cluster description of a GPU machine measured by `probe --device cuda`
// (probe_device.hpp).
#include <algorithm>
#include <cstdio>
#include <string>

#include "backend/probe_device.hpp"

namespace twinscale::backend {

std::string catalogue_gpu_model(const std::string& gpu_name) {
  auto has = [&](const char* s) { return gpu_name.find(s) != std::string::npos; };
  if (has("GB200")) return "GB200";
  if (has("B200")) return "B200";
  if (has("H200")) return "H200-SXM";
  if (has("H100")) return "H100-SXM";
  if (has("A100")) return has("40GB") ? "A100-SXM-40GB" : "A100-SXM-80GB";
  return "";
}

std::string gpu_cluster_toml(const MeasuredMachine& m, const std::string& gpu_name) {
  const std::string model = catalogue_gpu_model(gpu_name);
  const int per_host = std::max(1, m.ranks_per_host);
  const int servers = std::max(1, m.hosts);
  const bool across = servers > 1 && m.cross_host_busbw > 0;
  char buf[4096];
  std::snprintf(buf, sizeof buf, "nvlink_bw_bytes_per_s = %.6g # measured\nnvlink_efficiency = 1.0\n", m.p2p_bandwidth);
  // one rank measures no link: the catalogue's NVLink figure stays
  const std::string nvlink = m.p2p_bandwidth > 0 ? buf : "# nvlink_bw_bytes_per_s: not measured (one rank)\n";
  std::snprintf(buf, sizeof buf,
                "# Measured by `twinscale probe --device cuda` on %s: %d ranks (%s), %d host(s), %d per host.\n"
                "# [gpu] model: the catalogue entry for this GPU%s; its compute figures apply where the\n"
                "# calibration table written with this file has no entry (simulate with both:\n"
                "# --cluster this --calibration table; the coverage line says how much is measured).\n"
                "# nvlink_bw_bytes_per_s: the best same-host point-to-point bandwidth of the sweep\n"
                "# (NCCL send/recv, one way): NVLink or PCIe, whatever joins this host's GPUs. One-way\n"
                "# latency of the smallest message: %.3g s (in the table; the format has no key for it).\n"
                "%s"
                "name = \"probed-cuda\"\n"
                "gpus = %d\n\n"
                "[gpu]\n"
                "model = \"%s\"\n"
                "%s\n"
                "[server]\n"
                "gpus = %d\n"
                "nics = %d\n",
                m.host.c_str(), m.world, gpu_name.c_str(), servers, per_host,
                model.empty() ? " (not in the catalogue: the nearest, A100-SXM-80GB, stands in)" : "", m.p2p_latency_s,
                across ? "# NIC: one per GPU on its own rail, at the best bus bandwidth of a collective that\n"
                         "# spanned hosts (measured).\n"
                       : "# NIC: not measured (every rank on one host): the catalogue's ConnectX-7.\n",
                servers * per_host, model.empty() ? "A100-SXM-80GB" : model.c_str(), nvlink.c_str(), per_host,
                per_host);
  std::string out = buf;
  if (across)
    std::snprintf(buf, sizeof buf, "nic = \"custom\"\nnic_gbit_per_s = %.6g # measured\n",
                  m.cross_host_busbw * 8 / 1e9);
  else
    std::snprintf(buf, sizeof buf, "nic = \"ConnectX-7\" # not measured\n");
  out += buf;
  // One ToR per rail holds every server: radix for the servers below and as many up.
  std::snprintf(buf, sizeof buf,
                "rails = %d\n\n"
                "[switch]\n"
                "model = \"custom\"\n"
                "radix = %d\n"
                "port_gbit_per_s = %.6g\n"
                "latency_ns = 600 # not measured: the catalogue switches' assumed hop\n\n"
                "[fabric]\n"
                "tiers = 2\n"
                "oversubscription = [1]\n"
                "servers_per_tor = %d\n",
                per_host, std::max(8, 2 * servers), across ? m.cross_host_busbw * 8 / 1e9 : 400.0, servers);
  out += buf;
  return out;
}

} // namespace twinscale::backend
