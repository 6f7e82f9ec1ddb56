#include "sim/detail/event_core.hpp"

#include <algorithm>

#include "schedules/error.hpp"

namespace twinscale::sim::detail {

EventCore::EventCore(CompletionListener& listener, size_t slots, double slowdown)
    : listener_(listener), slowdown_(slowdown), gpus_(slots), heap_pos_(slots, -1),
      heap_(static_cast<HeapEntry*>(::operator new[]((slots + 4) * sizeof(HeapEntry), std::align_val_t{64}))) {
  TWINSCALE_ASSERT(slots < (size_t{1} << kSlotBits), "more GPU slots than the event core packs");
}

uint64_t EventCore::next_seq() {
  // 2^35 insertions: ~100 times the events of a 12,288-GPU every-rank iteration
  TWINSCALE_ASSERT(seq_ < (uint64_t{1} << (64 - kSlotBits)), "event core: insertion counter overflow");
  return seq_++;
}

double EventCore::rate(const Gpu& g) const {
  const double base = g.speed * (g.comm_active ? 1.0 / (1.0 + slowdown_) : 1.0);
  return g.running.empty() ? base : base / static_cast<double>(g.running.size());
}

void EventCore::advance(Gpu& g) {
  const double done = (now_ - g.since) * rate(g);
  if (done > 0)
    for (auto& r : g.running) r.remaining_s = std::max(0.0, r.remaining_s - done);
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

void EventCore::heap_remove(int32_t slot) {
  const int32_t pos = heap_pos_[static_cast<size_t>(slot)];
  if (pos < 0) return;
  const auto i = static_cast<size_t>(pos);
  heap_pos_[static_cast<size_t>(slot)] = -1;
  const HeapEntry last = at(--heap_size_);
  if (i == heap_size_) return;
  heap_place(i, last);
  heap_up(i);
  heap_down(static_cast<size_t>(heap_pos_[static_cast<size_t>(last.slot())]));
}

void EventCore::reschedule(int32_t slot) {
  Gpu& g = gpus_[static_cast<size_t>(slot)];
  if (g.running.empty()) {
    if (slot != completing_) heap_remove(slot);
    return;
  }
  // the op with the least work left finishes first (ties: the earliest started)
  size_t first = 0;
  for (size_t i = 1; i < g.running.size(); ++i)
    if (g.running[i].remaining_s < g.running[first].remaining_s) first = i;
  const double r = rate(g);
  const HeapEntry e = HeapEntry::make(r > 0 ? now_ + g.running[first].remaining_s / r : now_ + 1e300, next_seq(), slot);
  g.next_op = g.running[first].op;
  if (heap_pos_[static_cast<size_t>(slot)] < 0) {
    heap_place(heap_size_++, e);
    heap_up(heap_size_ - 1);
  } else {
    const auto pos = static_cast<size_t>(heap_pos_[static_cast<size_t>(slot)]);
    const bool earlier = e < at(pos);
    at(pos) = e;
    if (earlier)
      heap_up(pos);
    else
      heap_down(pos);
  }
}

void EventCore::prefetch_next() const {
  if (heap_size_ == 0) return;
  const int32_t next = at(0).slot();
  __builtin_prefetch(&gpus_[static_cast<size_t>(next)]);
  listener_.prefetch(next);
}

bool EventCore::compute_first() const {
  if (heap_size_ == 0) return false;
  if (queue_.empty()) return true;
  const HeapEntry& h = at(0);
  const Event& e = queue_.top();
  return h.time() != e.time ? h.time() < e.time : h.seq() < e.seq;
}

double EventCore::next_time() const { return compute_first() ? at(0).time() : queue_.top().time; }

void EventCore::start_compute(int32_t slot, uint32_t op, double seconds) {
  Gpu& g = gpus_[static_cast<size_t>(slot)];
  advance(g);
  g.running.push_back({op, seconds});
  reschedule(slot);
}

void EventCore::set_comm_active(int32_t slot, bool active) {
  Gpu& g = gpus_[static_cast<size_t>(slot)];
  if (g.comm_active == active) return;
  advance(g);
  g.comm_active = active;
  if (slowdown_ != 0) reschedule(slot);
}

void EventCore::add_timer(double at, uint32_t comm_id) { queue_.push({at, next_seq(), Kind::Timer, -1, comm_id, 0}); }

void EventCore::add_speed_change(double at, int32_t slot, double speed) {
  queue_.push({at, next_seq(), Kind::Speed, slot, 0, speed});
}

void EventCore::dispatch_next() {
  if (compute_first()) {
    const int32_t slot = at(0).slot();
    Gpu& g = gpus_[static_cast<size_t>(slot)];
    now_ = at(0).time();
    const uint32_t op = g.next_op;
    advance(g);
    auto it = std::find_if(g.running.begin(), g.running.end(), [&](const Running& r) { return r.op == op; });
    TWINSCALE_ASSERT(it != g.running.end(), "completed compute op not running");
    g.running.erase(it);
    // The GPU's entry stays on top while the listener runs: when it starts the rank's
    // next compute op (the common case) the entry moves down once instead of being
    // removed and pushed again. Nothing is dispatched meanwhile, so the stale entry is
    // never popped.
    completing_ = slot;
    reschedule(slot);
    listener_.on_compute_done(slot, op);
    completing_ = -1;
    if (g.running.empty()) heap_remove(slot);
    prefetch_next();
    return;
  }
  const Event e = queue_.top();
  queue_.pop();
  now_ = e.time;
  if (e.kind == Kind::Timer) {
    listener_.on_comm_done(e.id, false, 0.0);
    return;
  }
  Gpu& g = gpus_[static_cast<size_t>(e.slot)];
  advance(g);
  g.speed = e.speed;
  reschedule(e.slot);
}

} // namespace twinscale::sim::detail
