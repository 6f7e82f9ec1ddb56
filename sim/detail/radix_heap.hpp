// A monotone priority queue over unique 128-bit keys with one entry per slot (a radix
// heap, Ahuja, Mehlhorn, Orlin and Tarjan 1990): every key pushed is ≥ the last key
// popped, as the event core's (time, insertion number) keys are. Bucket i > 0 holds the
// keys whose highest bit differing from the last popped key is bit i − 1 (bucket 0: equal
// to it), so every key of a lower bucket is less than every key of a higher one. Popping
// the least key of bucket b moves the rest of b into lower buckets (against the new last
// key); a key moves at most 128 times in its life and usually a few. An entry is found by
// its slot (the key's low kSlotBits bits) in O(1). Any correct priority queue over the same total order
// pops the same sequence, so replacing a heap by this one changes no result.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "schedules/error.hpp"

namespace twinscale::sim::detail {

template <int kSlotBits>
class RadixHeap {
public:
  using Key = unsigned __int128; // its low kSlotBits bits: the slot
  static int32_t slot_of(Key key) {
    return static_cast<int32_t>(static_cast<uint64_t>(key) & ((uint64_t{1} << kSlotBits) - 1));
  }

  explicit RadixHeap(size_t slots) : where_(slots) {}

  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  bool contains(int32_t slot) const { return where_[static_cast<size_t>(slot)].index >= 0; }

  /// Adds `key` (≥ the last key popped; its slot must not be in the heap).
  void push(Key key) {
    TWINSCALE_ASSERT(key >= last_, "radix heap: a key below the last one popped");
    place(bucket_of(key), key);
    ++size_;
    if (min_.index >= 0 && key < at(min_)) min_ = where_[static_cast<size_t>(slot_of(key))];
  }
  /// Removes `slot` if it is in the heap.
  void erase(int32_t slot) {
    const Where w = where_[static_cast<size_t>(slot)];
    if (w.index < 0) return;
    if (min_.index >= 0 && min_.bucket == w.bucket && min_.index == w.index) min_.index = -1;
    remove_at(w);
    where_[static_cast<size_t>(slot)].index = -1;
    --size_;
  }
  /// The least key (the heap is not empty).
  Key top() {
    if (min_.index < 0) find_min();
    return at(min_);
  }
  /// Removes the least entry; its key becomes the bound for later pushes. Returns the slot
  /// of the next least entry when the pop found it for free (−1 otherwise): a hint.
  int32_t pop() {
    if (min_.index < 0) find_min();
    const Where m = min_;
    const Key e = at(m);
    last_ = e;
    remove_at(m);
    where_[static_cast<size_t>(slot_of(e))].index = -1;
    --size_;
    min_.index = -1;
    if (m.bucket == 0) return -1;
    // the rest of the bucket: all of its keys are above the new last key and share its
    // bits above bit bucket − 1, so each lands in a lower bucket; the least of them is
    // the next least key (every lower bucket was empty)
    std::vector<Key>& from = buckets_[m.bucket];
    if (from.empty()) return -1;
    clear_bit(m.bucket);
    Key least = ~Key{0};
    for (const Key x : from) {
      place(bucket_of(x), x);
      if (x < least) least = x, min_ = where_[static_cast<size_t>(slot_of(x))];
    }
    from.clear();
    return slot_of(least);
  }

private:
  struct Where {
    int32_t index = -1; // in buckets_[bucket]; −1: not in the heap
    uint32_t bucket = 0;
  };
  static constexpr uint32_t kBuckets = 129;

  uint32_t bucket_of(Key key) const {
    const Key x = key ^ last_;
    const auto hi = static_cast<uint64_t>(x >> 64);
    if (hi != 0) return 128 - static_cast<uint32_t>(__builtin_clzll(hi));
    const auto lo = static_cast<uint64_t>(x);
    return lo == 0 ? 0 : 64 - static_cast<uint32_t>(__builtin_clzll(lo));
  }
  Key at(const Where& w) const { return buckets_[w.bucket][static_cast<size_t>(w.index)]; }
  void place(uint32_t b, Key key) {
    std::vector<Key>& v = buckets_[b];
    where_[static_cast<size_t>(slot_of(key))] = {static_cast<int32_t>(v.size()), b};
    v.push_back(key);
    nonempty_[b / 64] |= uint64_t{1} << (b % 64);
  }
  void clear_bit(uint32_t b) { nonempty_[b / 64] &= ~(uint64_t{1} << (b % 64)); }
  void remove_at(const Where& w) {
    std::vector<Key>& v = buckets_[w.bucket];
    const auto i = static_cast<size_t>(w.index);
    if (i + 1 != v.size()) {
      v[i] = v.back();
      where_[static_cast<size_t>(slot_of(v[i]))].index = w.index;
      if (min_.index >= 0 && min_.bucket == w.bucket && static_cast<size_t>(min_.index) == v.size() - 1)
        min_.index = w.index;
    }
    v.pop_back();
    if (v.empty()) clear_bit(w.bucket);
  }
  void find_min() {
    TWINSCALE_ASSERT(size_ > 0, "radix heap: top of an empty heap");
    uint32_t b = 0;
    for (uint32_t w = 0; w < nonempty_.size(); ++w)
      if (nonempty_[w] != 0) {
        b = w * 64 + static_cast<uint32_t>(__builtin_ctzll(nonempty_[w]));
        break;
      }
    const std::vector<Key>& v = buckets_[b];
    size_t best = 0;
    for (size_t i = 1; i < v.size(); ++i)
      if (v[i] < v[best]) best = i;
    min_ = {static_cast<int32_t>(best), b};
  }

  Key last_ = 0;
  size_t size_ = 0;
  Where min_;                          // the least entry when index ≥ 0 (else found on demand)
  std::array<uint64_t, 3> nonempty_{}; // bit b: buckets_[b] has entries
  std::array<std::vector<Key>, kBuckets> buckets_;
  std::vector<Where> where_; // by slot
};

} // namespace twinscale::sim::detail
