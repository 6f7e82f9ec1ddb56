// The event core's GPU queue (sim/detail/radix_heap.hpp): a monotone radix heap with
// erase by slot must pop exactly the order a plain ordered set pops, for keys built as the
// event core builds them (time bits, then insertion number and slot), including equal
// times, pushes at the popped time, and erasures of the least entry, of the entry the
// pop found next, and of entries never looked at.
#include <catch2/catch.hpp>

#include <cstring>
#include <random>
#include <set>

#include "sim/detail/radix_heap.hpp"

using twinscale::sim::detail::RadixHeap;

namespace {

constexpr int kSlotBits = 29;
using Heap = RadixHeap<kSlotBits>;

Heap::Key key_of(double time, uint64_t seq, int32_t slot) {
  uint64_t bits = 0;
  std::memcpy(&bits, &time, sizeof bits);
  return static_cast<Heap::Key>(bits) << 64 | (seq << kSlotBits | static_cast<uint64_t>(slot));
}

double time_of(Heap::Key k) {
  const auto bits = static_cast<uint64_t>(k >> 64);
  double t = 0;
  std::memcpy(&t, &bits, sizeof t);
  return t;
}

} // namespace

TEST_CASE("radix heap: pops the order of an ordered set under monotone pushes and erasures", "[sim][event]") {
  for (uint32_t seed : {1u, 2u, 3u}) {
    std::mt19937_64 rng(seed);
    const int32_t slots = seed == 1 ? 8 : 300;
    Heap heap(static_cast<size_t>(slots));
    std::set<Heap::Key> ref;
    std::vector<Heap::Key> key_of_slot(static_cast<size_t>(slots), 0);
    std::vector<bool> in(static_cast<size_t>(slots), false);
    double now = 0;
    uint64_t seq = 0;
    std::uniform_real_distribution<double> u(0, 1);
    int popped = 0;
    auto put = [&](int32_t s) { // a reschedule: erase, then push at now + something
      if (in[static_cast<size_t>(s)]) ref.erase(key_of_slot[static_cast<size_t>(s)]);
      heap.erase(s);
      const double p = u(rng);
      const double dt = p < 0.1 ? 0.0 : p < 0.2 ? 1e-15 : p < 0.6 ? u(rng) * 1e-6 : u(rng) * 1e-2;
      const Heap::Key k = key_of(now + dt, seq++, s);
      heap.push(k);
      ref.insert(k);
      key_of_slot[static_cast<size_t>(s)] = k;
      in[static_cast<size_t>(s)] = true;
    };
    for (int step = 0; step < 200000; ++step) {
      const double p = u(rng);
      const auto s = static_cast<int32_t>(rng() % static_cast<uint64_t>(slots));
      if (p < 0.45) {
        put(s);
      } else if (p < 0.55) {
        if (in[static_cast<size_t>(s)]) ref.erase(key_of_slot[static_cast<size_t>(s)]);
        heap.erase(s);
        in[static_cast<size_t>(s)] = false;
      } else if (!ref.empty()) {
        REQUIRE(heap.size() == ref.size());
        const Heap::Key top = heap.top();
        REQUIRE(top == *ref.begin());
        if (p < 0.6) { // erase the least entry instead of popping it
          const int32_t t = Heap::slot_of(top);
          heap.erase(t);
          ref.erase(ref.begin());
          in[static_cast<size_t>(t)] = false;
          continue;
        }
        now = time_of(top);
        const int32_t next = heap.pop();
        ref.erase(ref.begin());
        in[static_cast<size_t>(Heap::slot_of(top))] = false;
        ++popped;
        if (next >= 0) REQUIRE(Heap::slot_of(*ref.begin()) == next); // the hint is the next least
        if (p < 0.8) put(Heap::slot_of(top));                        // the popped GPU's next op
        if (next >= 0 && p > 0.95) {                                 // erase the hinted next entry
          heap.erase(next);
          ref.erase(ref.begin());
          in[static_cast<size_t>(next)] = false;
        }
      }
      REQUIRE(heap.empty() == ref.empty());
    }
    CHECK(popped > 10000);
    while (!ref.empty()) {
      REQUIRE(heap.top() == *ref.begin());
      heap.pop();
      ref.erase(ref.begin());
    }
    CHECK(heap.empty());
  }
}
