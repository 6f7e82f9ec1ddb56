#include "sim/detail/event_core.hpp"

#include <algorithm>

#include "schedules/error.hpp"

namespace twinscale::sim::detail {

EventCore::EventCore(CompletionListener& listener, size_t slots, double slowdown)
    : listener_(listener), slowdown_(slowdown), comm_factor_(1.0 / (1.0 + slowdown)), gpus_(slots),
      heap_(static_cast<HeapEntry*>(::operator new[]((slots + 4) * sizeof(HeapEntry), std::align_val_t{64}))),
      heap_pos_(slots, -1) {
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
  const double base = g.speed * (g.comm_active ? comm_factor_ : 1.0);
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

void EventCore::heap_up(size_t i) {
  const HeapEntry e = at(i);
  while (i > 0) {
    const size_t parent = (i - 1) / 4;
    if (!(e < at(parent))) break;
    heap_place(i, at(parent));
    i = parent;
  }
  heap_place(i, e);
}

void EventCore::heap_down(size_t i) {
  const HeapEntry e = at(i);
  const size_t n = heap_size_;
  for (;;) {
    const size_t first = 4 * i + 1;
    if (first >= n) break;
    size_t child = first;
    if (first + 4 <= n) {
      const size_t a = at(first + 1) < at(first) ? first + 1 : first;
      const size_t b = at(first + 3) < at(first + 2) ? first + 3 : first + 2;
      child = at(b) < at(a) ? b : a;
    } else {
      for (size_t c = first + 1; c < n; ++c)
        if (at(c) < at(child)) child = c;
    }
    if (!(at(child) < e)) break;
    heap_place(i, at(child));
    i = child;
  }
  heap_place(i, e);
}

void EventCore::heap_down_from_root() {
  // Floyd's sift: an entry rescheduled from the root (a completion followed by the GPU's
  // next op) usually belongs near the bottom, so the hole descends along the least
  // children to a leaf without comparing against the entry (no unpredictable exit per
  // level), then the entry rises from there (usually not at all). Local pointers: the
  // stores into heap_pos_ would otherwise make the compiler reload them every level.
  HeapEntry* const h = heap_.get() + 3;
  int32_t* const where = heap_pos_.data();
  const HeapEntry e = h[0];
  const size_t n = heap_size_;
  size_t i = 0;
  for (;;) {
    const size_t first = 4 * i + 1;
    if (first >= n) break;
    size_t child = first;
    if (first + 4 <= n) {
      const size_t a = h[first + 1] < h[first] ? first + 1 : first;
      const size_t b = h[first + 3] < h[first + 2] ? first + 3 : first + 2;
      child = h[b] < h[a] ? b : a;
    } else {
      for (size_t c = first + 1; c < n; ++c)
        if (h[c] < h[child]) child = c;
    }
    h[i] = h[child];
    where[static_cast<size_t>(h[i].slot())] = static_cast<int32_t>(i);
    i = child;
  }
  while (i > 0) {
    const size_t parent = (i - 1) / 4;
    if (!(e < h[parent])) break;
    h[i] = h[parent];
    where[static_cast<size_t>(h[i].slot())] = static_cast<int32_t>(i);
    i = parent;
  }
  h[i] = e;
  where[static_cast<size_t>(e.slot())] = static_cast<int32_t>(i);
}

void EventCore::heap_remove(int32_t slot) {
  const int32_t pos = heap_pos_[static_cast<size_t>(slot)];
  if (pos < 0) return;
  const auto i = static_cast<size_t>(pos);
  heap_pos_[static_cast<size_t>(slot)] = -1;
  const HeapEntry last = at(--heap_size_);
  if (i == heap_size_) return;
  heap_place(i, last);
  if (i == 0) {
    heap_down_from_root();
    return;
  }
  heap_up(i);
  heap_down(static_cast<size_t>(heap_pos_[static_cast<size_t>(last.slot())]));
}

void EventCore::reschedule(int32_t slot) {
  Gpu& g = gpus_[static_cast<size_t>(slot)];
  if (g.count == 0) {
    if (slot != completing_) heap_remove(slot);
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
  if (heap_pos_[static_cast<size_t>(slot)] < 0) {
    heap_place(heap_size_++, e);
    heap_up(heap_size_ - 1);
  } else {
    const auto pos = static_cast<size_t>(heap_pos_[static_cast<size_t>(slot)]);
    const bool earlier = e < at(pos);
    at(pos) = e;
    if (earlier)
      heap_up(pos);
    else if (pos == 0)
      heap_down_from_root();
    else
      heap_down(pos);
  }
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

void EventCore::prefetch_next() const {
  // While the root's completion is handled, the least of its children is the likeliest
  // next event (unless the root's GPU starts a shorter op or a timer comes first): load
  // its state now, a whole event ahead (at 12,288 GPUs each GPU's and rank's state is a
  // cache miss).
  const size_t n = std::min<size_t>(heap_size_, 5);
  if (n < 2) return;
  size_t next = 1;
  for (size_t c = 2; c < n; ++c)
    if (at(c) < at(next)) next = c;
  const int32_t slot = at(next).slot();
  __builtin_prefetch(&gpus_[static_cast<size_t>(slot)]);
  listener_.prefetch(slot);
}

bool EventCore::compute_first() const {
  if (heap_size_ == 0) return false;
  // insertion numbers are unique across both heaps: the keys never tie
  return timers_.empty() || at(0) < timers_.front().key;
}

double EventCore::next_time() const { return compute_first() ? at(0).time() : timers_.front().key.time(); }

void EventCore::start_compute(int32_t slot, uint32_t op, double seconds) {
  Gpu& g = gpus_[static_cast<size_t>(slot)];
  advance(g, slot);
  TWINSCALE_ASSERT(g.count < schedules::kStreamCount, "more compute ops running on a GPU than it has streams");
  put(g, slot, g.count, {seconds, op});
  ++g.count;
  reschedule(slot);
}

void EventCore::set_comm_active(int32_t slot, bool active) {
  Gpu& g = gpus_[static_cast<size_t>(slot)];
  if (g.comm_active == active) return;
  advance(g, slot);
  g.comm_active = active;
  if (slowdown_ != 0) reschedule(slot);
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
    const int32_t slot = at(0).slot();
    Gpu& g = gpus_[static_cast<size_t>(slot)];
    now_ = at(0).time();
    const uint32_t op = g.next_op;
    prefetch_next();
    advance(g, slot);
    uint32_t i = 0;
    while (i < g.count && get(g, slot, i).op != op) ++i;
    TWINSCALE_ASSERT(i < g.count, "completed compute op not running");
    for (; i + 1 < g.count; ++i) put(g, slot, i, get(g, slot, i + 1)); // keeps start order
    --g.count;
    // The GPU's entry stays on top while the listener runs: when it starts the rank's
    // next compute op (the common case) the entry moves down once instead of being
    // removed and pushed again. Nothing is dispatched meanwhile, so the stale entry is
    // never popped.
    completing_ = slot;
    reschedule(slot);
    listener_.on_compute_done(slot, op);
    completing_ = -1;
    if (g.count == 0) heap_remove(slot);
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
