// Helpers for the simulator tests: hand-built schedules whose op durations are exact
// (memory-bound ops with launch overhead off, so seconds = bytes / HBM bandwidth).
#pragma once

#include <algorithm>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "config/cluster_file.hpp"
#include "config/job_file.hpp"
#include "schedules/schedule.hpp"
#include "sim/simulate.hpp"
#include "topology/fabric.hpp"
#include "topology/placement.hpp"

namespace twinscale::sim::test {

using schedules::GroupKind;
using schedules::Op;
using schedules::OpKind;
using schedules::Phase;
using schedules::Stream;

/// Options whose device model makes an Elementwise op of `bytes` take bytes / HBM peak.
inline SimOptions exact_options(SimMode mode) {
  SimOptions o;
  o.mode = mode;
  o.device.kernel_launch_s = 0;
  o.device.hbm_efficiency = 1.0;
  o.device.nccl_compute_slowdown = 0;
  o.channels = 1;
  o.nccl.model_protocols = false; // idealised collectives: fabric latencies and bandwidths only
  return o;
}

class ProgramBuilder {
public:
  uint32_t add(Op op, std::initializer_list<uint32_t> deps = {}) {
    op.dep_begin = static_cast<uint32_t>(p_.deps.size());
    op.dep_count = static_cast<uint32_t>(deps.size());
    for (uint32_t d : deps) p_.deps.push_back(d);
    p_.ops.push_back(op);
    return static_cast<uint32_t>(p_.ops.size() - 1);
  }
  uint32_t add_deps(Op op, const std::vector<uint32_t>& deps) {
    op.dep_begin = static_cast<uint32_t>(p_.deps.size());
    op.dep_count = static_cast<uint32_t>(deps.size());
    for (uint32_t d : deps) p_.deps.push_back(d);
    p_.ops.push_back(op);
    return static_cast<uint32_t>(p_.ops.size() - 1);
  }
  schedules::Program take() { return std::move(p_); }

private:
  schedules::Program p_;
};

/// A compute op taking `seconds` on a GPU with `hbm_bw` under exact_options().
inline Op compute(double seconds, double hbm_bw, Phase phase = Phase::Forward, int32_t mb = -1) {
  Op op;
  op.kind = OpKind::Elementwise;
  op.kernel = schedules::Kernel::ResidualAdd;
  op.stream = Stream::Compute;
  op.bytes = seconds * hbm_bw;
  op.labels.phase = phase;
  op.labels.micro_batch = mb;
  return op;
}

inline Op collective(OpKind kind, GroupKind group, double bytes, Stream stream) {
  Op op;
  op.kind = kind;
  op.group = group;
  op.bytes = bytes;
  op.stream = stream;
  return op;
}

inline Op p2p(OpKind kind, int32_t peer, double bytes, Stream stream) {
  Op op;
  op.kind = kind;
  op.group = GroupKind::Pp;
  op.peer = peer;
  op.bytes = bytes;
  op.stream = stream;
  return op;
}

/// A schedule where every rank runs program_of(rank) of `programs`.
inline schedules::Schedule make_schedule(schedules::Layout layout, std::vector<schedules::Program> programs,
                                         std::vector<uint32_t> program_of_rank) {
  schedules::Schedule s;
  s.layout = layout;
  s.job.parallel.tp = layout.tp;
  s.job.parallel.dp = layout.dp;
  s.job.parallel.pp = layout.pp;
  s.job.parallel.global_batch = layout.dp;
  s.job.model.seq_len = 1024;
  s.programs = std::move(programs);
  s.program_of_rank = std::move(program_of_rank);
  s.memory_by_stage.resize(static_cast<size_t>(layout.pp));
  return s;
}

inline topology::ClusterSpec tiny_cluster() { return config::load_cluster("tiny-2tier"); }

/// A job lowered for a fabric of `spec` (its GPUs' memory as the lowering's target), its
/// ranks placed linearly.
struct Lowered {
  std::unique_ptr<topology::Fabric> fabric;
  schedules::Schedule schedule;
  std::vector<int64_t> gpus;
};
inline Lowered lower_on(const schedules::JobSpec& job, const topology::ClusterSpec& spec) {
  Lowered l;
  l.fabric = std::make_unique<topology::Fabric>(spec);
  schedules::LoweringTarget target;
  target.gpu_memory_bytes = spec.gpu.memory_bytes;
  l.schedule = schedules::lower(job, target);
  const auto& L = l.schedule.layout; // dp counts dp · cp coordinates
  l.gpus = topology::place(*l.fabric, {L.tp, L.dp, L.pp}, topology::PlacementPolicy::Linear, 1);
  return l;
}

/// Job preset `preset` (one iteration) on the 32 GPUs of tiny-2tier, global batch 64.
inline Lowered lower_tiny_preset(const char* preset) {
  auto job = config::load_job_preset(preset);
  job.options.iterations = 1;
  const auto spec = tiny_cluster();
  config::apply_overrides(job, spec.gpus, 64);
  return lower_on(job, spec);
}

/// `job` (a tiny preset) with layers large enough that its communication and compute
/// overlap: hidden `hidden` (FFN 4×), `heads` heads, sequences of `seq_len` tokens.
inline schedules::JobSpec with_larger_layers(schedules::JobSpec job, int64_t hidden, int64_t heads, int64_t seq_len) {
  job.model.hidden = hidden;
  job.model.heads = heads;
  job.model.seq_len = seq_len;
  job.model.ffn_hidden = 4 * hidden;
  return job;
}

} // namespace twinscale::sim::test

namespace twinscale::sim::test {

/// Megatron-LM's (interleaved) 1F1B order on pipeline rank `s` of `p`, `v` model chunks,
/// `m` micro-batches (m % p == 0 when v > 1), as a program: forward (tf per chunk) and
/// backward (tb per chunk) compute ops, activations/gradients as 0-byte sends and
/// receives, one stream per direction (PpRecv: from previous, TpComm: from next,
/// PpSend: to next, DpComm: to previous).
inline schedules::Program pipeline_program(int64_t s, int64_t p, int64_t v, int64_t m, double tf, double tb,
                                           double hbm_bw, double p2p_bytes = 0) {
  ProgramBuilder b;
  const int64_t total = m * v;
  const int64_t warmup = std::min(total, v == 1 ? p - s - 1 : (p - s - 1) * 2 + (v - 1) * p);
  auto chunk_of = [&](int64_t k, bool fwd) {
    const int64_t c = (k % (p * v)) / p;
    return fwd ? c : v - 1 - c;
  };
  auto mb_of = [&](int64_t k) { return v == 1 ? k : (k / (p * v)) * p + k % p; };
  const auto prev = static_cast<int32_t>((s - 1 + p) % p), next = static_cast<int32_t>((s + 1) % p);
  std::vector<std::vector<uint32_t>> fwd_op(static_cast<size_t>(m), std::vector<uint32_t>(static_cast<size_t>(v)));
  auto forward = [&](int64_t k) {
    const int64_t c = chunk_of(k, true), mb = mb_of(k), vs = c * p + s;
    std::vector<uint32_t> deps;
    if (vs > 0) deps.push_back(b.add(p2p(OpKind::Recv, prev, p2p_bytes, Stream::PpRecv)));
    Op f = compute(tf, hbm_bw, Phase::Forward, static_cast<int32_t>(mb));
    f.labels.chunk = static_cast<int32_t>(c);
    const uint32_t id = b.add_deps(f, deps);
    fwd_op[static_cast<size_t>(mb)][static_cast<size_t>(c)] = id;
    if (vs < p * v - 1) b.add(p2p(OpKind::Send, next, p2p_bytes, Stream::PpSend), {id});
  };
  auto backward = [&](int64_t k) {
    const int64_t c = chunk_of(k, false), mb = mb_of(k), vs = c * p + s;
    std::vector<uint32_t> deps{fwd_op[static_cast<size_t>(mb)][static_cast<size_t>(c)]};
    if (vs < p * v - 1) deps.push_back(b.add(p2p(OpKind::Recv, next, p2p_bytes, Stream::TpComm)));
    Op bw = compute(tb, hbm_bw, Phase::Backward, static_cast<int32_t>(mb));
    bw.labels.chunk = static_cast<int32_t>(c);
    const uint32_t id = b.add_deps(bw, deps);
    if (vs > 0) b.add(p2p(OpKind::Send, prev, p2p_bytes, Stream::DpComm), {id});
  };
  for (int64_t k = 0; k < warmup; ++k) forward(k);
  for (int64_t i = 0; i < total - warmup; ++i) {
    forward(warmup + i);
    backward(i);
  }
  for (int64_t k = total - warmup; k < total; ++k) backward(k);
  return b.take();
}

} // namespace twinscale::sim::test
