// The event core shared by both backends: compute ops progressing on GPUs and timers of
// closed-form communication, in one queue ordered by (time, insertion).
//
// Compute ops of one GPU share it equally (processor sharing: kernels of different
// streams); a GPU computes at speed × comm_rate_factors[c] while communication kernels
// of c CTAs in all run on it (SimOptions::comm_rate_factors: 1 / (1 + slowdown) for the
// SMs they take), where speed is 1 or the factor of a fault plan's slowdown
// (events added with add_speed_change). Rates are re-derived and completions
// rescheduled whenever any of that changes, so slowdowns apply exactly to the overlap.
//
// Cost: each GPU has at most one pending completion, kept in a monotone radix heap (one
// entry per GPU, found by slot and replaced when rescheduled: no stale events pile up,
// which in a plain queue made half the pops wasted at every-rank scale; radix_heap.hpp);
// timers and speed changes live in a 4-ary heap of the same keys. Ties between the two
// break by insertion order, as in one queue. A key is 16 bytes (time, then insertion
// number and slot packed in one word); keys only grow (a new one is at or after the last
// event, with a later insertion number), which the radix heap needs. At 12,288 GPUs the
// 4-ary heap's sift from the root was still 23 % of the run (docs/simulator.md, "Round
// 6"). A GPU's state is one cache line.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "schedules/error.hpp"
#include "schedules/op.hpp"
#include "sim/detail/radix_heap.hpp"
#include "sim/detail/time_engine.hpp"

namespace twinscale::sim::detail {

class EventCore {
public:
  /// `comm_rate_factors[c]`: the compute rate while communication kernels of c CTAs run
  /// (c ≥ the table's size: its last entry); empty: communication never slows compute.
  EventCore(CompletionListener& listener, size_t slots, std::vector<double> comm_rate_factors);

  double now() const { return now_; }
  void set_now(double t) { now_ = t; }
  void start_compute(int32_t slot, uint32_t op, double seconds);
  /// The CTAs of the communication kernels now running on `slot`'s GPU (0: none).
  void set_comm_ctas(int32_t slot, int32_t ctas);
  void add_timer(double at, uint32_t comm_id);
  /// From `at` on, `slot`'s GPU computes at `speed` (1 = nominal).
  void add_speed_change(double at, int32_t slot, double speed);

  bool empty() const { return timers_.empty() && gpu_heap_.empty(); }
  double next_time() const;
  /// Pops the next event, sets now() to its time and reports it to the listener.
  void dispatch_next();

private:
  struct Running {
    double remaining_s; // nominal seconds left
    uint32_t op;
  };
  // 64 bytes: the header and the first three running ops (most events touch only this
  // line of a GPU: usually at most two kernels run at once); a fourth and later op of a
  // GPU (kernels on more streams at once) live in overflow_.
  static constexpr uint32_t kInline = 3;
  static constexpr uint32_t kOverflow = schedules::kStreamCount - kInline;
  struct alignas(64) Gpu {
    double since = 0;
    double speed = 1;
    uint32_t next_op = 0;  // its pending completion (while in the heap)
    uint8_t count = 0;     // ops running on the GPU: at most one per stream
    uint8_t comm_ctas = 0; // the CTAs of its running communication kernels (capped at 255)
    std::array<uint32_t, kInline> op{};
    std::array<double, kInline> remaining_s{};
  };
  static_assert(sizeof(Gpu) == 64);
  Running get(const Gpu& g, int32_t slot, uint32_t i) const {
    if (i < kInline) return {g.remaining_s[i], g.op[i]};
    return overflow_[static_cast<size_t>(slot) * kOverflow + i - kInline];
  }
  void put(Gpu& g, int32_t slot, uint32_t i, const Running& r) {
    if (i < kInline) {
      g.remaining_s[i] = r.remaining_s;
      g.op[i] = r.op;
      return;
    }
    if (overflow_.empty()) overflow_.resize(gpus_.size() * kOverflow);
    overflow_[static_cast<size_t>(slot) * kOverflow + i - kInline] = r;
  }
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
  uint64_t next_seq();
  double rate(const Gpu& g) const;
  void advance(Gpu& g, int32_t slot);
  void reschedule(int32_t slot);
  bool compute_first() const;
  void prefetch(int32_t slot) const;

  CompletionListener& listener_;
  std::vector<double> comm_factor_; // by CTAs running (SimOptions::comm_rate_factors)
  double now_ = 0;
  uint64_t seq_ = 0;
  std::vector<Gpu> gpus_;
  mutable RadixHeap<kSlotBits> gpu_heap_; // GPUs with a pending completion (top() finds the least lazily)
  std::vector<Running> overflow_;         // by slot: running ops past kInline (allocated on first use)
  // Timers and speed changes: a plain 4-ary heap ordered by the same 16-byte keys
  // (slot bits 0), carrying a comm id (any 32-bit value: the multi-job mux packs the job
  // into it) or an index in speed_changes_.
  struct Timer {
    HeapEntry key;
    uint32_t id;
    bool speed; // id indexes speed_changes_
    bool operator<(const Timer& o) const { return key < o.key; }
  };
  std::vector<Timer> timers_;
  struct SpeedChange {
    int32_t slot;
    double speed;
  };
  std::vector<SpeedChange> speed_changes_;
  void timer_push(const Timer& t);
  Timer timer_pop();
};

} // namespace twinscale::sim::detail
