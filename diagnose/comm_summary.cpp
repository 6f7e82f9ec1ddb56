#include "diagnose/comm_summary.hpp"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <utility>

namespace twinscale::diagnose {

using schedules::Stream;

CommReducer::CommReducer(const std::optional<schedules::Layout>& layout, int64_t world)
    : layout_(layout), world_(world), steps_(static_cast<size_t>(world)) {
  if (!layout_)
    note_ = "slow links: the layout (--layout TPxDPxPP, Megatron's order) is needed to know each collective's group";
  else if (layout_->world() != world)
    note_ = "slow links: --layout does not match the trace's " + std::to_string(world) + " ranks; not analysed";
  else
    grouped_ = true;
}

void CommReducer::add(int64_t rank, int32_t step, Stream stream, uint32_t op_index, int64_t occurrence, double start_s,
                      double end_s, bool failed, uint32_t name) {
  if (rank < last_rank_ || rank >= world_ || step < 0)
    throw std::logic_error("CommReducer: rank " + std::to_string(rank) + " after rank " + std::to_string(last_rank_) +
                           " (ranks must come in ascending order, below " + std::to_string(world_) + ")");
  last_rank_ = rank;
  present_ = true;
  auto& steps = steps_[static_cast<size_t>(rank)];
  if (steps.size() <= static_cast<size_t>(step)) steps.resize(static_cast<size_t>(step) + 1);
  StepComms& s = steps[static_cast<size_t>(step)];
  if (!s.any) {
    s.any = true;
    s.first_start = start_s;
    s.last_end = end_s;
  } else {
    s.first_start = std::min(s.first_start, start_s);
    s.last_end = std::max(s.last_end, end_s);
  }
  ++s.ops;
  if (failed) ++s.failed;
  if (stream != Stream::TpComm && stream != Stream::DpComm) return;
  if (!s.collective || op_index > s.last_op) {
    s.collective = true;
    s.last_op = op_index;
    s.last_start = start_s;
  }
  if (!grouped_ || failed) return;
  if (name >= (1u << 24) || occurrence > INT32_MAX) {
    grouped_ = false;
    note_ = "slow links: more than 2^24 op names or 2^31 ops on a stream; not analysed";
    return;
  }
  const schedules::Layout& L = *layout_;
  Open* at = nullptr;
  if (stream == Stream::TpComm) {
    const int64_t leader = rank - rank % L.tp;
    if (leader != open_tp_leader_) {
      close_tp();
      open_tp_leader_ = leader;
    }
    if (tp_open_.size() <= static_cast<size_t>(step)) tp_open_.resize(static_cast<size_t>(step) + 1);
    auto& row = tp_open_[static_cast<size_t>(step)];
    if (row.size() <= static_cast<size_t>(occurrence)) row.resize(static_cast<size_t>(occurrence) + 1);
    at = &row[static_cast<size_t>(occurrence)];
  } else {
    const schedules::RankCoord c = L.coord(rank);
    at = &dp_open_[Key{L.rank({c.tp, 0, c.pp}), occurrence, step, static_cast<uint8_t>(stream)}];
  }
  Open& o = *at;
  o.last_start = o.seen ? std::max(o.last_start, start_s) : start_s;
  o.end = std::max(o.end, end_s);
  o.name = name;
  o.seen = true;
}

namespace {
CollectiveTime instance(uint8_t stream, int32_t step, int64_t occurrence, int64_t leader, double transfer_s,
                        uint32_t name) {
  CollectiveTime c;
  c.transfer_s = transfer_s;
  c.step = step;
  c.occurrence = static_cast<int32_t>(occurrence);
  c.leader = static_cast<int32_t>(leader);
  c.name = name;
  c.stream = stream;
  return c;
}
} // namespace

void CommReducer::close_tp() {
  if (open_tp_leader_ >= 0) sealed_ = false;
  for (size_t step = 0; step < tp_open_.size(); ++step)
    for (size_t occ = 0; occ < tp_open_[step].size(); ++occ) {
      Open& o = tp_open_[step][occ];
      if (!o.seen) continue;
      closed_.push_back(instance(static_cast<uint8_t>(Stream::TpComm), static_cast<int32_t>(step),
                                 static_cast<int64_t>(occ), open_tp_leader_, o.end - o.last_start, o.name));
      o = Open{};
    }
  open_tp_leader_ = -1;
}

void CommReducer::merge_into(std::unordered_map<Key, Open, KeyHash>& into, const Key& k, const Open& v) {
  Open& o = into[k];
  o.last_start = o.seen ? std::max(o.last_start, v.last_start) : v.last_start;
  o.end = std::max(o.end, v.end);
  o.name = v.name;
  o.seen = true;
}

void CommReducer::seal() {
  close_tp();
  if (sealed_) return;
  // closed_ holds TP instances, leader-major (ranks come in ascending order): a stable
  // counting sort by (step, occurrence), both dense, puts them in instance_order.
  std::vector<std::vector<size_t>> start;
  for (const CollectiveTime& c : closed_) {
    if (start.size() <= static_cast<size_t>(c.step)) start.resize(static_cast<size_t>(c.step) + 1);
    auto& row = start[static_cast<size_t>(c.step)];
    if (row.size() <= static_cast<size_t>(c.occurrence)) row.resize(static_cast<size_t>(c.occurrence) + 1, 0);
    ++row[static_cast<size_t>(c.occurrence)];
  }
  size_t total = 0;
  for (auto& row : start)
    for (size_t& n : row) total += std::exchange(n, total);
  std::vector<CollectiveTime> out(closed_.size());
  for (const CollectiveTime& c : closed_)
    out[start[static_cast<size_t>(c.step)][static_cast<size_t>(c.occurrence)]++] = c;
  closed_ = std::move(out);
  sealed_ = true;
}

void CommReducer::merge(CommReducer&& other) {
  if (other.world_ != world_ || other.grouped_ != grouped_)
    throw std::logic_error("CommReducer::merge: reducers of different traces");
  seal();
  other.seal();
  std::vector<CollectiveTime> both(closed_.size() + other.closed_.size());
  std::merge(closed_.begin(), closed_.end(), other.closed_.begin(), other.closed_.end(), both.begin(),
             [](const CollectiveTime& a, const CollectiveTime& b) { return instance_order(a, b); });
  closed_ = std::move(both);
  std::vector<CollectiveTime>().swap(other.closed_);
  for (const auto& [k, v] : other.dp_open_) merge_into(dp_open_, k, v);
  for (size_t r = 0; r < steps_.size(); ++r)
    if (!other.steps_[r].empty()) steps_[r] = std::move(other.steps_[r]);
  present_ = present_ || other.present_;
  last_rank_ = std::max(last_rank_, other.last_rank_);
  open_tp_leader_ = -1;
}

CommSummary CommReducer::finish(std::vector<std::string> names, int64_t steps) {
  seal();
  // DP instances sort after every TP one (stream 2 > 1): sorted among themselves, appended.
  std::vector<CollectiveTime> dp;
  for (const auto& [k, o] : dp_open_)
    dp.push_back(instance(k.stream, k.step, k.occurrence, k.leader, o.end - o.last_start, o.name));
  dp_open_.clear();
  std::sort(dp.begin(), dp.end(),
            [](const CollectiveTime& a, const CollectiveTime& b) { return instance_order(a, b); });
  closed_.insert(closed_.end(), dp.begin(), dp.end());
  CommSummary s;
  s.present = present_;
  s.grouped = grouped_;
  s.note = note_;
  s.collectives = std::move(closed_);
  s.names = std::move(names);
  for (auto& r : steps_) r.resize(static_cast<size_t>(std::max<int64_t>(steps, static_cast<int64_t>(r.size()))));
  s.steps = std::move(steps_);
  return s;
}

} // namespace twinscale::diagnose
