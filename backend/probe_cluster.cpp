// The cluster descriptions of a machine the probe measured (probe_device.hpp): a GPU
// machine (`probe --device cuda`) and the CPU host (`probe`, the CPU device).
#include <algorithm>
#include <cstdio>
#include <string>

#include "backend/probe_device.hpp"
#include "backend/probe_overlap.hpp"

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

/// The [gpu] keys that make the simulator's nccl_compute_slowdown the measured compute
/// slowdown `slowdown` while the rank communicates: no SMs taken, a share h of the
/// compute resource with h / (1 − h) = slowdown (DeviceModelParams::nccl_slowdown).
namespace {

std::string measured_slowdown_keys(const OverlapFacts& f) {
  const double s = f.compute_slowdown();
  char buf[768];
  std::snprintf(buf, sizeof buf,
                "# Compute while the rank communicates (measured: %s on the device's worker, %.1f us\n"
                "# beside an idle executor, %.1f us while %.0f-byte all-reduces over %lld ranks run):\n"
                "# slowdown %.4f. On the CPU device communication takes no SMs but core time (MPI\n"
                "# progress beside the worker); the simulator's nccl_compute_slowdown = share / (1 - share).\n"
                "nccl_sms_per_channel = 0\n"
                "nccl_hbm_share = %.6g\n",
                f.gemm.c_str(), f.gemm_worker_s * 1e6, f.gemm_during_comm_s * 1e6, f.comm_bytes,
                static_cast<long long>(f.group_size), s, s / (1 + s));
  return buf;
}

} // namespace

std::string cpu_cluster_toml(int world, double latency_s, double bandwidth, const std::string& host,
                             const OverlapFacts& overlap, double hand_off_s) {
  char gap[512] = "";
  if (hand_off_s > 0)
    std::snprintf(gap, sizeof gap,
                  "# Before each compute op the stream idles while the executor hands the ready op to\n"
                  "# its worker (measured in the probe's replay: median end-to-start gap between\n"
                  "# consecutive compute ops, mean over ranks).\n"
                  "op_issue_gap_s = %.6g\n",
                  hand_off_s);
  char buf[4096];
  std::snprintf(buf, sizeof buf,
                "# Measured by `twinscale probe` on %s: %d ranks on one host (the CPU device).\n"
                "# Point-to-point between ranks: one-way latency %.3g s (smallest message), bandwidth\n"
                "# %.4g B/s (the best of the sweep). The cluster format has no intra-server\n"
                "# latency key: the latency lives in the calibration table written with this file,\n"
                "# which also gives every kernel and collective time; simulate with both\n"
                "# (--cluster this --calibration table). The GPU model only fills figures the\n"
                "# table does not cover (its coverage line says how many).\n"
                "name = \"probed-cpu-host\"\n"
                "gpus = %d\n\n"
                "[gpu]\n"
                "model = \"A100-SXM-80GB\"\n"
                "nvlink_bw_bytes_per_s = %.6g # measured point-to-point bandwidth\n"
                "nvlink_efficiency = 1.0\n"
                "%s%s\n"
                "[server]\n"
                "gpus = %d\n"
                "nics = 1\n"
                "nic = \"custom\"\n"
                "nic_gbit_per_s = %.6g\n"
                "rails = 1\n\n"
                "[switch]\n"
                "model = \"custom\"\n"
                "radix = 8\n"
                "port_gbit_per_s = %.6g\n"
                "latency_ns = %.6g\n\n"
                "[fabric]\n"
                "tiers = 2\n"
                "oversubscription = [1]\n"
                "servers_per_tor = 1\n",
                host.c_str(), world, latency_s, bandwidth, world, bandwidth,
                overlap.group_size > 0 ? measured_slowdown_keys(overlap).c_str() : "", gap, world, bandwidth * 8 / 1e9,
                bandwidth * 8 / 1e9, latency_s * 1e9);
  return buf;
}

} // namespace twinscale::backend
