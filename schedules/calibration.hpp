// The calibration table: measured kernel times and achieved communication bandwidths,
// written by `twinscale calibrate` from a real (backend/) trace and read by the
// simulator in place of its analytical device model. It sits below both executors.
//
// File format (JSON, versioned; docs/backend.md "Calibration table"):
//   { "format": "twinscale-calibration", "version": 1, "source": "cuda", "device": "...",
//     "kernels": [ {"kernel": "gemm", "op": "attn.qkv", "dtype": "bf16", "shape": [m, n, k, 0],
//                   "seconds": 1.2e-4, "samples": 12}, ... ],
//     "comms":   [ {"kind": "all_reduce", "group_size": 8, "bytes": 1048576,
//                   "seconds": 3.1e-5, "algbw_bytes_per_s": ..., "busbw_bytes_per_s": ...,
//                   "samples": 4}, ... ] }
// "seconds" is the median of the samples. "op" (version 2) is the schedule's op name, so a
// table never averages different work of one kernel and shape: forward and backward
// attention ("attn.core", "attn.core.bwd"), each LayerNorm pass ("attn.ln.mean", ".var",
// ".norm", ".bwd.*"); recomputation reuses its forward op's name, being the same work.
// Version 1 files (no "op") are still read; their entries match any op. Version 3 adds
// "shape_divisor" (default 1): the divisor the measured device applied to every shape and
// message (the CPU device runs the schedule scaled down). Version 4 adds a comm entry's
// "hosts" (how many hosts its group spanned: 1 = one host; absent = not known, any span).
// Entries are sorted (kernel, dtype, shape, op) and (kind, group_size, hosts, bytes), so
// equal inputs give byte-identical files.
#pragma once

#include <array>
#include <cstdint>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "schedules/op.hpp"

namespace twinscale::schedules {

inline constexpr int kCalibrationFormatVersion = 4;

struct KernelTiming {
  Kernel kernel = Kernel::Gemm;
  DType dtype = DType::BF16;
  std::array<int64_t, 4> shape{0, 0, 0, 0}; // as Op::shape
  std::string op;                           // the op's name ("" in version 1: any op)
  double seconds = 0;                       // median over samples
  int64_t samples = 0;
};

/// Achieved bandwidth of one communication kind at one group size and message size.
/// kind is a collective (AllReduce, AllGather, ReduceScatter, AllToAll, Broadcast) or
/// Send (a point-to-point link; group_size 2). bytes follows Op::bytes.
struct CommBandwidth {
  OpKind kind = OpKind::AllReduce;
  int64_t group_size = 0;
  double bytes = 0;
  double seconds = 0;           // median over samples
  double algbw_bytes_per_s = 0; // bytes / seconds
  double busbw_bytes_per_s = 0; // algbw × bus_factor(kind, group_size)
  int64_t samples = 0;
  int64_t hosts = 0; // hosts the measured group spanned (1: one host); 0: not known
};

/// Where a communication's group lies, for the span-aware lookup: on one host, across
/// hosts, or not known (every entry applies).
enum class CommSpan : uint8_t { Any, SameHost, CrossHost };

/// True when an entry measured on a group spanning `hosts` hosts (0: not known) may
/// stand for a communication of span `span`.
bool span_matches(int64_t hosts, CommSpan span);

struct CalibrationTable {
  int version = kCalibrationFormatVersion;
  std::string source; // "cuda", "cpu"
  std::string device; // free text, e.g. "NVIDIA H100 80GB HBM3"
  /// The measured device ran every shape and message divided by this (CPU device's
  /// --shape-divisor; 1 on CUDA devices). See the lookup rule below.
  int64_t shape_divisor = 1;
  std::vector<KernelTiming> kernels;
  std::vector<CommBandwidth> comms;

  /// Exact match on kernel, dtype, shape and op name (an entry without a name matches
  /// any op); nullptr when absent.
  const KernelTiming* find_kernel(Kernel kernel, DType dtype, const std::array<int64_t, 4>& shape,
                                  std::string_view op = {}) const;
  /// Exact match on kind, group size and bytes (of an entry matching `span`); nullptr
  /// when absent.
  const CommBandwidth* find_comm(OpKind kind, int64_t group_size, double bytes, CommSpan span = CommSpan::Any) const;
  /// Bus bandwidth for (kind, group_size) at `bytes`: exact entry, else linear
  /// interpolation in log(bytes) between the two neighbouring entries, clamped to the
  /// smallest/largest measured size. nullopt when no entry has this kind and group size.
  std::optional<double> busbw_bytes_per_s(OpKind kind, int64_t group_size, double bytes) const;

  // The lookup rule (docs/backend.md "Calibration table"): a table measured on the CPU
  // device (source "cpu") holds fp32 kernels at shapes divided by shape_divisor, because
  // that is what the CPU device executes for any schedule; so an op of the schedule is
  // looked up at (kernel, fp32, executed_shape(op, divisor), op name) and a message at
  // executed_bytes(op, divisor). The simulated time is that of the measured CPU machine
  // running the same schedule. Other sources are looked up at the scheduled dtype and
  // shape. Both return nullopt when the table has no entry: the model's figure applies.

  /// Measured seconds of compute op `op` (its name `name`) under the rule above: the
  /// entry at its shape; else the same op name measured at other shapes, log-log in the
  /// work (product of the shape's dimensions) between the two nearest, proportional to
  /// the work beyond them (an optimizer step or a GEMM of another pipeline split).
  std::optional<double> kernel_seconds(const Op& op, std::string_view name) const;
  /// Seconds of a communication of `kind` among `group_size` ranks moving `bytes` (the
  /// schedule's Op::bytes; Send for a point-to-point message, group_size 2), under the
  /// rule above: log-log interpolation of time against bytes between the measured sizes
  /// of that kind and group size; below the smallest, the smallest's time (latency
  /// bound); above the largest, the largest's bandwidth. A group size between two
  /// measured ones interpolates log-log in the group size; outside them, nullopt.
  /// Span-aware: only entries whose group spanned hosts as this one does (span_matches)
  /// are used — a table measured on one host never prices a transfer across hosts (and
  /// a cross-host one never an intra-host transfer); the model applies instead.
  std::optional<double> comm_seconds(OpKind kind, int64_t group_size, double bytes,
                                     CommSpan span = CommSpan::Any) const;
  /// True when this table was measured on the CPU device (the fp32, scaled-shape rule).
  bool scaled_cpu_rule() const { return source == "cpu"; }
};

/// What a device with shape divisor `divisor` executes for `op`: every positive
/// dimension divided by it, rounded up, at least 1 (the CPU device's --shape-divisor).
std::array<int64_t, 4> executed_shape(const Op& op, int64_t divisor);
/// The bytes it moves for a message of `bytes`: bytes / divisor rounded up, at least 4.
double executed_bytes(double bytes, int64_t divisor);
/// The largest single buffer an executor allocates for `op` at `divisor`, in bytes, with
/// `element_bytes` per element: a GEMM's largest operand (m·k, k·n or m·n), an attention's
/// score matrix or Q/K/V (s·s, s·d), an elementwise kernel's or optimizer's vector, a
/// message's payload. Computed in double: no product of input sizes can wrap.
double largest_buffer_bytes(const Op& op, int64_t divisor, double element_bytes);

/// nccl-tests' bus-bandwidth factor (hardware.md): all-reduce 2(n−1)/n; all-gather,
/// reduce-scatter, all-to-all (n−1)/n; broadcast, send/recv 1.
double bus_factor(OpKind kind, int64_t group_size);

/// Accumulates samples and produces a table of medians (deterministic order).
class CalibrationBuilder {
public:
  void add_kernel_sample(Kernel kernel, DType dtype, const std::array<int64_t, 4>& shape, double seconds,
                         std::string_view op = {});
  /// `hosts`: how many hosts the measured group spanned (0: not known).
  void add_comm_sample(OpKind kind, int64_t group_size, double bytes, double seconds, int64_t hosts = 0);
  CalibrationTable build(std::string source, std::string device) const;

private:
  using KernelKey = std::tuple<int, int, std::array<int64_t, 4>, std::string>;
  using CommKey = std::tuple<int, int64_t, int64_t, double>; // kind, group size, hosts, bytes
  std::map<KernelKey, std::vector<double>> kernel_samples_;
  std::map<CommKey, std::vector<double>> comm_samples_;
};

void write_calibration(const CalibrationTable& table, std::ostream& out);
/// Throws ScheduleError naming `path` and the offending entry (index and key) on
/// malformed input, an unknown kernel/kind name or an unsupported version.
CalibrationTable read_calibration(std::istream& in, const std::string& path);
CalibrationTable read_calibration_file(const std::string& path);

} // namespace twinscale::schedules
