// Helpers for the simulator tests: hand-built schedules whose op durations are exact
// (memory-bound ops with launch overhead off, so seconds = bytes / HBM bandwidth).
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "config/cluster_file.hpp"
#include "schedules/schedule.hpp"
#include "sim/simulate.hpp"
#include "topology/fabric.hpp"

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

} // namespace twinscale::sim::test
