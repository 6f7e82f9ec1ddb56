// The end state of a run with a hung rank (SimOptions::hang_rank): what every rank issued
// on each channel and which of its ops never completed, as the records every executor
// leaves (records/rank_state.hpp: channels of schedules::communicator_of, per-channel
// sequences of the execution rules, schedules/execution_rules.hpp), so the same hang
// analysis reads simulated and real runs.
#include <algorithm>
#include <map>

#include "schedules/nccl_order.hpp"
#include "sim/detail/executor.hpp"

namespace twinscale::sim::detail {

std::vector<records::RankState> SimExecutor::hang_states(double end_s) const {
  const auto& L = schedule_.layout;
  std::vector<records::RankState> out;
  out.reserve(slots_.size());
  for (size_t s = 0; s < slots_.size(); ++s) {
    const Slot& sl = slots_[s];
    records::RankState st;
    st.rank = sl.rank;
    st.ops_total = static_cast<uint32_t>(sl.program->ops.size());
    st.elapsed_s = end_s;
    for (uint32_t i = 0; i < sl.program->ops.size(); ++i) {
      const schedules::Op& op = sl.program->ops[i];
      const HotOp& h = sl.hot[i];
      const uint32_t pos = sl.stream_pos[h.stream];
      const bool done = h.pos_in_stream < pos;
      const bool running = h.pos_in_stream == pos && (sl.busy & (1u << h.stream)) != 0;
      if (done) ++st.ops_completed;
      const std::string channel = schedules::communicator_of(schedule_, sl.rank, op, schedules::kDeviceCommModel);
      const int64_t seq = channel.empty() ? 0 : sl.index->sequence(i);
      if (!channel.empty() && (done || running)) ++st.issued[channel];
      if (!running) continue;
      records::WaitingOp w;
      w.op_index = i;
      w.name = op_name(static_cast<int32_t>(s), i);
      w.kind = op.kind;
      w.group = op.group;
      w.stream = op.stream;
      w.channel = channel;
      w.sequence = seq;
      if (op.is_collective())
        w.peers = L.group_members(op.group, sl.rank);
      else if (op.kind == schedules::OpKind::Send || op.kind == schedules::OpKind::Recv)
        w.peers = {peer_rank(static_cast<int32_t>(s), i)};
      w.waiting_s = end_s - sl.stream_start[h.stream];
      st.waiting.push_back(std::move(w));
    }
    const bool hung = static_cast<int32_t>(s) == hang_slot_;
    st.status = st.ops_completed == st.ops_total
                    ? records::RunStatus::Completed
                    : (st.waiting.empty() || hung ? records::RunStatus::Aborted : records::RunStatus::TimedOut);
    out.push_back(std::move(st));
  }
  return out;
}

void SimExecutor::record_running_ops(schedules::BinaryTraceWriter& sink, double end_s) const {
  for (const Slot& sl : slots_)
    for (uint32_t i = 0; i < sl.program->ops.size(); ++i) {
      const HotOp& h = sl.hot[i];
      if (h.pos_in_stream == sl.stream_pos[h.stream] && (sl.busy & (1u << h.stream)) != 0)
        sink.record(sl.rank, i, sl.stream_start[h.stream], std::max(end_s, sl.stream_start[h.stream]), true);
    }
}

} // namespace twinscale::sim::detail
