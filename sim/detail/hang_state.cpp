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
  // What the ranks of a slot share: its positions (ops completed, ops issued on each
  // channel of its program, the ops still running), taken once per executed slot.
  struct SlotState {
    uint32_t completed = 0;
    std::vector<uint32_t> issued; // by channel of the program's index
    std::vector<uint32_t> running;
  };
  std::vector<SlotState> taken(slots_.size());
  for (size_t s = 0; s < slots_.size(); ++s) {
    const Slot& sl = slots_[s];
    SlotState& t = taken[s];
    t.issued.assign(sl.index->channels().size(), 0);
    for (uint32_t i = 0; i < sl.program->ops.size(); ++i) {
      const HotOp& h = sl.hot[i];
      const uint32_t pos = sl.stream_pos[h.stream];
      const bool done = h.pos_in_stream < pos;
      const bool running = h.pos_in_stream == pos && (sl.busy & (1u << h.stream)) != 0;
      if (done) ++t.completed;
      const uint16_t ch = sl.index->channel(i);
      if (ch != schedules::kNoChannel && (done || running)) ++t.issued[ch];
      if (running) t.running.push_back(i);
    }
  }
  // Every rank in rank order (a hung run executes every rank, or one replica of each
  // class): from its own slot or its counterpart's (representative_slot), under its own
  // channels' names (an op's communicator is a function of its channel and rank:
  // communicator_of) and peers.
  std::vector<records::RankState> out;
  out.reserve(static_cast<size_t>(L.world()));
  std::vector<std::string> name;
  for (int64_t rank = 0; rank < L.world(); ++rank) {
    const int32_t s = representative_slot(rank);
    const Slot& sl = slots_[static_cast<size_t>(s)];
    const SlotState& t = taken[static_cast<size_t>(s)];
    const schedules::ProgramIndex& ix = *sl.index;
    name.assign(ix.channels().size(), std::string());
    auto channel_name = [&](uint16_t ch) -> const std::string& {
      if (name[ch].empty())
        name[ch] = schedules::communicator_of(schedule_, rank, sl.program->ops[ix.channel_ops(ch)[0]],
                                              schedules::kDeviceCommModel);
      return name[ch];
    };
    records::RankState st;
    st.rank = rank;
    st.ops_total = static_cast<uint32_t>(sl.program->ops.size());
    st.ops_completed = t.completed;
    st.elapsed_s = end_s;
    for (uint16_t ch = 0; ch < t.issued.size(); ++ch)
      if (t.issued[ch] > 0) st.issued[channel_name(ch)] += t.issued[ch];
    for (uint32_t i : t.running) {
      const schedules::Op& op = sl.program->ops[i];
      const uint16_t ch = ix.channel(i);
      records::WaitingOp w;
      w.op_index = i;
      w.name = op_name(s, i);
      w.kind = op.kind;
      w.group = op.group;
      w.stream = op.stream;
      if (ch != schedules::kNoChannel) {
        w.channel = channel_name(ch);
        w.sequence = ix.sequence(i);
      }
      if (op.is_collective())
        w.peers = L.group_members(op.group, rank);
      else if (op.kind == schedules::OpKind::Send || op.kind == schedules::OpKind::Recv)
        w.peers = {schedules::group_member(L, op.group, rank, op.peer)};
      w.waiting_s = end_s - sl.stream_start[sl.hot[i].stream];
      st.waiting.push_back(std::move(w));
    }
    const bool hung = rank == options_.hang_rank;
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
