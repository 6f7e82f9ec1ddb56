// What the probe's one driver (backend/probe.cpp: which ops and messages, warm-up and
// repetitions, medians over occurrences and ranks, the sweeps, the table, the cluster
// description) asks of the device it measures. Two devices implement it: the CPU
// device's in detail/cpu_probe_device.cpp (fp32 Eigen kernels, MPI transfers timed by the host clock) and
// the CUDA device's in backend/cuda/cuda_probe.cpp (the run's cuBLAS/cuBLASLt and CUDA
// kernels, NCCL transfers, both timed by CUDA events on the op's stream).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "schedules/schedule.hpp"

namespace twinscale::backend {

/// What the sweeps measured, for the device's cluster description.
struct MeasuredMachine {
  int world = 1;
  int hosts = 1;                // distinct host names among the ranks
  int ranks_per_host = 1;       // the most ranks on one host
  std::string host;             // rank 0's host name
  double p2p_latency_s = 0;     // smallest point-to-point message, one way (same host)
  double p2p_bandwidth = 0;     // best point-to-point bandwidth, B/s (same host)
  double cross_host_busbw = 0;  // best bus bandwidth of a collective spanning hosts, B/s (0: none)
  int64_t cross_host_group = 0; // its group size
};

class ProbeDevice {
public:
  virtual ~ProbeDevice() = default;
  /// The calibration table's source ("cpu", "cuda") and device tag.
  virtual std::string source() const = 0;
  virtual std::string device_tag(int world) const = 0;
  /// The dtype a compute op's measured time is keyed under (the CPU device computes in
  /// fp32; the CUDA device in the op's own dtype).
  virtual schedules::DType dtype(const schedules::Op& op) const = 0;
  /// The sweeps' element type as nccl-tests names it ("float", "bfloat16") and its size.
  virtual const char* element_type() const = 0;
  virtual double element_bytes() const = 0;
  /// The largest message the device's memory allows; the default sweep stops there.
  virtual double message_limit() const { return 1e300; }

  /// One repetition: this rank's compute ops in program order, each timed alone;
  /// seconds per op (indexed as program.ops), negative for communication ops.
  virtual std::vector<double> replay(const schedules::Program& program) = 0;

  /// Before any transfer (collective over the world): groups of n consecutive ranks for
  /// every n in `sizes` (ranks past the last whole group are in none).
  virtual void open_groups(const std::set<int64_t>& sizes) = 0;
  struct Transfer {
    double device_s = -1; // the device's own time of it; negative: the driver's host clock times it
    int64_t wrong = 0;    // elements that arrived wrong, when the device counts them inside transfer()
  };
  /// One transfer of `kind` moving `bytes` (as Op::bytes; Send: half a ping-pong between
  /// members 0 and 1) on this rank's group of n; nothing when this rank is in none.
  virtual Transfer transfer(schedules::OpKind kind, int64_t n, double bytes) = 0;
  /// Before a transfer's timed region (and before the barrier that starts it): leaves the
  /// buffers of the next transfer(kind, n, bytes) as the run's device finds its own when
  /// it posts one. Default: nothing (the CUDA device's NCCL buffers are the run's).
  virtual void prepare_transfer(schedules::OpKind /*kind*/, int64_t /*n*/, double /*bytes*/) {}
  /// True when a transfer progresses only while each member's host thread tests it
  /// between idle waits (the CPU device): its time then depends on which member arrives
  /// last, and the driver rotates the late member over the repetitions.
  virtual bool host_progressed() const { return false; }
  /// The elements of this rank's last transfer() that arrived wrong, when the device
  /// counts them afterwards: the driver calls it after the transfer's timed region, as the
  /// run's device verifies an op after stamping its end (a full check of 8.4 MB inside
  /// the time made the CPU probe's all-reduce 2–3× slower than the run's: docs/backend.md).
  virtual int64_t check_transfer() { return 0; }
  virtual void close_groups() = 0;

  /// The GPU measured (cudaDeviceProp::name; empty on the CPU device): the driver writes
  /// the cluster description with gpu_cluster_toml, else the CPU host's.
  virtual std::string gpu_name() const { return {}; }
};

/// The cluster description of a GPU machine the probe measured (backend/probe_cluster.cpp;
/// without CUDA, so that it is tested everywhere): `gpu_name` (cudaDeviceProp::name)
/// picks the catalogue's GPU model (its compute figures; the calibration table gives the
/// measured times); the NVLink bandwidth per GPU is the best same-host point-to-point
/// bandwidth (NVLink or PCIe, whatever joins the GPUs); across hosts, one NIC per GPU on
/// its own rail at the best bus bandwidth of a collective that spanned hosts; one host:
/// the catalogue's NIC, marked as not measured.
std::string gpu_cluster_toml(const MeasuredMachine& m, const std::string& gpu_name);
struct OverlapFacts;
/// The cluster description of the CPU host the probe measured (probe_cluster.cpp): one
/// host of `world` "GPUs" whose links are the measured point-to-point bandwidth (the
/// latency is in the calibration table), and whose compute slowdown while a rank
/// communicates is `overlap`'s measured one, and whose stream idles `hand_off_s` before
/// each compute op (`op_issue_gap_s`: the device's hand-off; 0 writes none)
/// (docs/backend.md "Probe").
std::string cpu_cluster_toml(int world, double latency_s, double bandwidth, const std::string& host,
                             const OverlapFacts& overlap, double hand_off_s = 0);
/// The catalogue's GPU model for a CUDA device name ("NVIDIA H200" → "H200-SXM"); empty
/// when none matches.
std::string catalogue_gpu_model(const std::string& gpu_name);

} // namespace twinscale::backend
