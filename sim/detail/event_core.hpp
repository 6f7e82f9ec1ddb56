// The event core shared by both backends: compute ops progressing on GPUs and timers of
// closed-form communication, in one queue ordered by (time, insertion).
//
// Compute ops of one GPU share it equally (processor sharing: kernels of different
// streams); a GPU computes at speed × 1 / (1 + nccl_compute_slowdown) while the rank's
// NCCL kernels move data, where speed is 1 or the factor of a fault plan's slowdown
// (events added with add_speed_change). Rates are re-derived and completions
// rescheduled whenever any of that changes, so slowdowns apply exactly to the overlap.
//
// Cost: each GPU has at most one pending completion, kept in an indexed 4-ary heap
// (one entry per GPU, moved in place when rescheduled: no stale events pile up, which
// in a plain queue made half the pops wasted at every-rank scale); timers and speed
// changes live in a second heap. Ties between the two break by insertion order, as in
// one queue. A heap entry is 16 bytes (time, then insertion number and slot packed in
// one word) and the four children of a node share one 64-byte cache line: at 12,288
// GPUs the binary heap's sift-down was a quarter of the run, half its levels cache
// misses (docs/simulator.md, "Cost").
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <queue>
#include <vector>

#include "schedules/error.hpp"
#include "schedules/op.hpp"
#include "sim/detail/time_engine.hpp"

namespace twinscale::sim::detail {

class EventCore {
public:
  EventCore(CompletionListener& listener, size_t slots, double nccl_compute_slowdown);

  double now() const { return now_; }
  void set_now(double t) { now_ = t; }
  void start_compute(int32_t slot, uint32_t op, double seconds);
  void set_comm_active(int32_t slot, bool active);
  void add_timer(double at, uint32_t comm_id);
  /// From `at` on, `slot`'s GPU computes at `speed` (1 = nominal).
  void add_speed_change(double at, int32_t slot, double speed);

  bool empty() const { return queue_.empty() && heap_size_ == 0; }
  double next_time() const;
  /// Pops the next event, sets now() to its time and reports it to the listener.
  void dispatch_next();

private:
  enum class Kind : uint8_t { Timer, Speed };
  struct Event {
    double time;
    uint64_t seq;
    Kind kind;
    int32_t slot;
    uint32_t id;  // comm id (timer)
    double speed; // speed change
    bool operator>(const Event& o) const { return time != o.time ? time > o.time : seq > o.seq; }
  };
  struct Running {
    uint32_t op;
    double remaining_s; // nominal seconds left
  };
  // The header and the first two running ops share the first cache line (most events
  // touch only that line of a GPU: usually at most two kernels run at once).
  struct alignas(64) Gpu {
    double since = 0;
    double speed = 1;
    uint32_t next_op = 0; // its pending completion (while in the heap)
    bool comm_active = false;
    // ops running on the GPU: at most one per stream, kept inline (no pointer to chase)
    struct RunningSet {
      uint32_t count = 0;
      std::array<Running, schedules::kStreamCount> items{};
      bool empty() const { return count == 0; }
      size_t size() const { return count; }
      Running* begin() { return items.data(); }
      Running* end() { return items.data() + count; }
      Running& operator[](size_t i) { return items[i]; }
      const Running& operator[](size_t i) const { return items[i]; }
      void push_back(const Running& r) {
        TWINSCALE_ASSERT(count < items.size(), "more compute ops running on a GPU than it has streams");
        items[count++] = r;
      }
      void erase(Running* it) {
        std::copy(it + 1, end(), it);
        --count;
      }
    } running;
  };
  // Ordered by (time, seq) as one 128-bit number: the bits of a time ≥ +0.0 order as
  // the time does, and seq and slot are packed as seq << kSlotBits | slot (seq is
  // unique), so sift-down picks the least child without unpredictable branches.
  static constexpr int kSlotBits = 29;
  struct HeapEntry {
    unsigned __int128 k;
    static HeapEntry make(double time, uint64_t seq, int32_t slot) {
      const double t = time + 0.0; // −0.0 → +0.0
      uint64_t bits = 0;
      __builtin_memcpy(&bits, &t, sizeof bits);
      return {static_cast<unsigned __int128>(bits) << 64 | (seq << kSlotBits | static_cast<uint64_t>(slot))};
    }
    double time() const {
      const auto bits = static_cast<uint64_t>(k >> 64);
      double t = 0;
      __builtin_memcpy(&t, &bits, sizeof t);
      return t;
    }
    uint64_t seq() const { return static_cast<uint64_t>(k) >> kSlotBits; }
    int32_t slot() const { return static_cast<int32_t>(static_cast<uint64_t>(k) & ((uint64_t{1} << kSlotBits) - 1)); }
    bool operator<(const HeapEntry& o) const { return k < o.k; }
  };
  static_assert(sizeof(HeapEntry) == 16);
  struct AlignedFree {
    void operator()(HeapEntry* p) const { ::operator delete[](p, std::align_val_t{64}); }
  };
  // Node i lives at heap_[i + 3]: the children of i (4i+1..4i+4) then fill the aligned
  // line heap_[4(i+1)..4(i+1)+3].
  HeapEntry& at(size_t i) { return heap_[i + 3]; }
  const HeapEntry& at(size_t i) const { return heap_[i + 3]; }
  uint64_t next_seq();
  double rate(const Gpu& g) const;
  void advance(Gpu& g);
  void reschedule(int32_t slot);
  void heap_place(size_t i, const HeapEntry& e) {
    at(i) = e;
    heap_pos_[static_cast<size_t>(e.slot())] = static_cast<int32_t>(i);
  }
  void heap_up(size_t i);
  void heap_down(size_t i);
  void heap_remove(int32_t slot);
  bool compute_first() const;
  void prefetch_next() const;

  CompletionListener& listener_;
  double slowdown_;
  double now_ = 0;
  uint64_t seq_ = 0;
  std::vector<Gpu> gpus_;
  std::unique_ptr<HeapEntry[], AlignedFree> heap_; // GPUs with a pending completion, min on top
  size_t heap_size_ = 0;
  std::vector<int32_t> heap_pos_; // by slot: index in the heap, −1 if none (compact: hot)
  int32_t completing_ = -1;       // slot whose completion the listener is handling
  std::priority_queue<Event, std::vector<Event>, std::greater<>> queue_;
};

} // namespace twinscale::sim::detail
