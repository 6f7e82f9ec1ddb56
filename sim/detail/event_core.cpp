#include "sim/detail/event_core.hpp"

#include <algorithm>
#include <utility>

#include "schedules/error.hpp"

namespace twinscale::sim::detail {

EventCore::EventCore(CompletionListener& listener, size_t slots, std::vector<double> comm_rate_factors)
    : listener_(listener), comm_factor_(std::move(comm_rate_factors)), gpus_(slots), gpu_heap_(slots) {
  if (comm_factor_.empty()) comm_factor_.push_back(1.0);
  comm_factor_.resize(256, comm_factor_.back()); // every uint8_t count has its entry
  TWINSCALE_ASSERT(slots < (size_t{1} << kSlotBits), "more GPU slots than the event core packs");
}

uint64_t EventCore::next_seq() {
  // 2^35 insertions: ~100 times the events of a 12,288-GPU every-rank iteration
  TWINSCALE_ASSERT(seq_ < (uint64_t{1} << (64 - kSlotBits)), "event core: insertion counter overflow");
  return seq_++;
}

double EventCore::rate(const Gpu& g) const {
  // the same arithmetic as speed × (1 / (1 + slowdown)) / count, without the divisions
  // whose result is exact anyway (x / 1 and x / 2 are x and x × 0.5 in floating point)
  const double base = g.speed * (g.comm_ctas != 0 ? comm_factor_[g.comm_ctas] : 1.0);
  if (g.count <= 1) return base;
  return g.count == 2 ? base * 0.5 : base / static_cast<double>(g.count);
}

void EventCore::advance(Gpu& g, int32_t slot) {
  const double done = (now_ - g.since) * rate(g);
  if (done > 0) {
    const uint32_t n = std::min<uint32_t>(g.count, kInline);
    for (uint32_t i = 0; i < n; ++i) g.remaining_s[i] = std::max(0.0, g.remaining_s[i] - done);
    for (uint32_t i = kInline; i < g.count; ++i) {
      Running& r = overflow_[static_cast<size_t>(slot) * kOverflow + i - kInline];
      r.remaining_s = std::max(0.0, r.remaining_s - done);
    }
  }
  g.since = now_;
}

void EventCore::reschedule(int32_t slot) {
  Gpu& g = gpus_[static_cast<size_t>(slot)];
  if (g.count == 0) {
    gpu_heap_.erase(slot);
    return;
  }
  // the op with the least work left finishes first (ties: the earliest started)
  uint32_t first = 0;
  double least = g.remaining_s[0];
  const uint32_t n = std::min<uint32_t>(g.count, kInline);
  for (uint32_t i = 1; i < n; ++i)
    if (g.remaining_s[i] < least) least = g.remaining_s[i], first = i;
  for (uint32_t i = kInline; i < g.count; ++i)
    if (const double r = get(g, slot, i).remaining_s; r < least) least = r, first = i;
  const double r = rate(g);
  const double left = r == 1.0 ? least : least / r; // x / 1 == x: skips the division
  const HeapEntry e = HeapEntry::make(r > 0 ? now_ + left : now_ + 1e300, next_seq(), slot);
  g.next_op = get(g, slot, first).op;
  gpu_heap_.erase(slot);
  gpu_heap_.push(e.k);
}

void EventCore::timer_push(const Timer& t) {
  size_t i = timers_.size();
  timers_.push_back(t);
  while (i > 0) {
    const size_t parent = (i - 1) / 4;
    if (!(t < timers_[parent])) break;
    timers_[i] = timers_[parent];
    i = parent;
  }
  timers_[i] = t;
}

EventCore::Timer EventCore::timer_pop() {
  const Timer top = timers_.front();
  const Timer t = timers_.back();
  timers_.pop_back();
  const size_t n = timers_.size();
  if (n == 0) return top;
  size_t i = 0;
  for (;;) {
    const size_t first = 4 * i + 1;
    if (first >= n) break;
    size_t child = first;
    for (size_t c = first + 1; c < std::min(first + 4, n); ++c)
      if (timers_[c] < timers_[child]) child = c;
    if (!(timers_[child] < t)) break;
    timers_[i] = timers_[child];
    i = child;
  }
  timers_[i] = t;
  return top;
}

void EventCore::prefetch(int32_t slot) const {
  // the likeliest next event (unless the completing GPU starts a shorter op or a timer
  // comes first): load its state now, a whole event ahead (at 12,288 GPUs each GPU's
  // and rank's state is a cache miss)
  __builtin_prefetch(&gpus_[static_cast<size_t>(slot)]);
  listener_.prefetch(slot);
}

bool EventCore::compute_first() const {
  if (gpu_heap_.empty()) return false;
  // insertion numbers are unique across both heaps: the keys never tie
  return timers_.empty() || gpu_heap_.top() < timers_.front().key.k;
}

double EventCore::next_time() const {
  return compute_first() ? HeapEntry{gpu_heap_.top()}.time() : timers_.front().key.time();
}

void EventCore::start_compute(int32_t slot, uint32_t op, double seconds) {
  Gpu& g = gpus_[static_cast<size_t>(slot)];
  advance(g, slot);
  TWINSCALE_ASSERT(g.count < schedules::kStreamCount, "more compute ops running on a GPU than it has streams");
  put(g, slot, g.count, {seconds, op});
  ++g.count;
  reschedule(slot);
}

void EventCore::set_comm_ctas(int32_t slot, int32_t ctas) {
  Gpu& g = gpus_[static_cast<size_t>(slot)];
  const auto c = static_cast<uint8_t>(std::clamp(ctas, 0, 255));
  const double before = g.comm_ctas != 0 ? comm_factor_[g.comm_ctas] : 1.0;
  const double after = c != 0 ? comm_factor_[c] : 1.0;
  // progress is taken at every start and end of communication and whenever the rate
  // changes; a count that changes while the rate stays needs neither
  const bool toggles = (g.comm_ctas == 0) != (c == 0);
  if (!toggles && before == after) {
    g.comm_ctas = c;
    return;
  }
  advance(g, slot);
  g.comm_ctas = c;
  if (after != before) reschedule(slot);
}

void EventCore::add_timer(double at, uint32_t comm_id) {
  timer_push({HeapEntry::make(at, next_seq(), 0), comm_id, false});
}

void EventCore::add_speed_change(double at, int32_t slot, double speed) {
  const auto index = static_cast<uint32_t>(speed_changes_.size());
  TWINSCALE_ASSERT(index == speed_changes_.size(), "event core: too many speed changes");
  speed_changes_.push_back({slot, speed});
  timer_push({HeapEntry::make(at, next_seq(), 0), index, true});
}

void EventCore::dispatch_next() {
  if (compute_first()) {
    const HeapEntry top{gpu_heap_.top()};
    const int32_t slot = top.slot();
    Gpu& g = gpus_[static_cast<size_t>(slot)];
    now_ = top.time();
    const uint32_t op = g.next_op;
    // popped first: the GPU's next op (the common case) is pushed again, with a key
    // above the popped one
    int32_t next = gpu_heap_.pop();
    if (next < 0 && !gpu_heap_.empty()) next = HeapEntry{gpu_heap_.top()}.slot();
    if (next >= 0) prefetch(next);
    advance(g, slot);
    uint32_t i = 0;
    while (i < g.count && get(g, slot, i).op != op) ++i;
    TWINSCALE_ASSERT(i < g.count, "completed compute op not running");
    for (; i + 1 < g.count; ++i) put(g, slot, i, get(g, slot, i + 1)); // keeps start order
    --g.count;
    reschedule(slot);
    listener_.on_compute_done(slot, op);
    return;
  }
  const Timer t = timer_pop();
  now_ = t.key.time();
  if (!t.speed) {
    listener_.on_comm_done(t.id, false, 0.0);
    return;
  }
  const SpeedChange& c = speed_changes_[t.id];
  Gpu& g = gpus_[static_cast<size_t>(c.slot)];
  advance(g, c.slot);
  g.speed = c.speed;
  reschedule(c.slot);
}

} // namespace twinscale::sim::detail
