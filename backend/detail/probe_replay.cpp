#include "backend/detail/probe_replay.hpp"

#include <algorithm>
#include <chrono>

#include "backend/cpu_device.hpp"
#include "backend/detail/mpi_groups.hpp"
#include "backend/error.hpp"
#include "backend/executor.hpp"

namespace twinscale::backend::detail {

using schedules::Op;

schedules::Schedule compute_only(const schedules::Schedule& schedule, std::vector<std::vector<uint32_t>>& original) {
  schedules::Schedule out = schedule;
  original.assign(schedule.programs.size(), {});
  for (size_t p = 0; p < schedule.programs.size(); ++p) {
    const schedules::Program& in = schedule.programs[p];
    schedules::Program& prog = out.programs[p];
    prog.ops.clear();
    prog.deps.clear();
    std::vector<int64_t> renumber(in.ops.size(), -1);
    for (uint32_t i = 0; i < in.ops.size(); ++i) {
      const Op& op = in.ops[i];
      if (op.is_communication()) continue;
      Op copy = op;
      copy.dep_begin = static_cast<uint32_t>(prog.deps.size());
      for (uint32_t d : in.deps_of(op))
        if (renumber[d] >= 0) prog.deps.push_back(static_cast<uint32_t>(renumber[d]));
      copy.dep_count = static_cast<uint32_t>(prog.deps.size()) - copy.dep_begin;
      renumber[i] = static_cast<int64_t>(prog.ops.size());
      prog.ops.push_back(copy);
      original[p].push_back(i);
    }
  }
  return out;
}

Replay replay_like_run(const schedules::Schedule& compute, const std::vector<std::vector<uint32_t>>& original,
                       int64_t rank, const MpiGroups& groups, int64_t shape_divisor, double max_buffer_bytes) {
  CpuDeviceOptions o;
  o.shape_divisor = shape_divisor;
  o.max_buffer_bytes = max_buffer_bytes;
  const double epoch = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  CpuDevice device(o, groups, epoch);
  ExecutorOptions eo;
  eo.timeout_s = 600;
  const RankResult r = Executor(compute, rank, device, eo).run();
  if (r.status != RunStatus::Completed)
    throw BackendError("probe: the kernel replay of rank " + std::to_string(rank) + " did not complete (" +
                       std::string(to_string(r.status)) + ")");
  const size_t program = compute.program_of_rank[static_cast<size_t>(rank)];
  const schedules::Program& prog = compute.programs[program];
  Replay out;
  std::vector<const schedules::TraceEvent*> by_op(prog.ops.size(), nullptr);
  for (const schedules::TraceEvent& e : r.events)
    if (!e.failed && e.op_index < by_op.size()) by_op[e.op_index] = &e;
  const schedules::TraceEvent* previous = nullptr;
  for (uint32_t i = 0; i < prog.ops.size(); ++i) {
    const schedules::TraceEvent* e = by_op[i];
    if (e == nullptr) throw BackendError("probe: the kernel replay of rank " + std::to_string(rank) + " lost an op");
    out.ops.push_back({original[program][i], e->end_s - e->start_s});
    if (prog.ops[i].stream != schedules::Stream::Compute) continue;
    if (previous != nullptr) out.hand_off_s.push_back(std::max(0.0, e->start_s - previous->end_s));
    previous = e;
  }
  return out;
}

} // namespace twinscale::backend::detail
