// Helper threads that start at once and take memory as the main thread does.
//
// Two costs of a short helper (the closed forms computed ahead of an analytic run, a few
// milliseconds of work beside a 45 ms process), measured on this project's 2-core VM:
// - *Its start.* Linux queues a new thread on its creator's CPU. Created while the
//   creator computes, a thread waited 1.9 ms (median of 40; p90 3.1 ms) before it first
//   ran, although the other core was idle. Created with the other CPUs as its affinity,
//   it ran after 37–56 µs.
// - *Its heap.* glibc gives a new thread its own malloc arena, whose pages come 4 KiB at a
//   time, while the main heap is backed by transparent huge pages (cli/main.cpp,
//   tune_allocator). The same lowering work took a helper 6.4 ms in its arena against
//   3.3–3.6 ms with the arena advised like the main heap.
#pragma once

#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>

#include "common/helper_thread_mode.hpp"

namespace twinscale {

/// std::thread(body), started on a CPU other than the caller's where the process may use
/// another one (otherwise as std::thread); once running, the thread takes the process's
/// whole set of CPUs back, so the scheduler moves it where it likes afterwards. Throws
/// std::system_error as std::thread does.
template <class Body>
std::thread thread_beside(Body body) {
  cpu_set_t all;
  CPU_ZERO(&all);
  const int here = sched_getcpu();
  if (sched_getaffinity(0, sizeof all, &all) != 0 || CPU_COUNT(&all) < 2 || here < 0 || !CPU_ISSET(here, &all))
    return std::thread(std::move(body));
  cpu_set_t others = all;
  CPU_CLR(here, &others);
  // the thread waits until its affinity is set, then widens it to the process's set
  auto placed = std::make_shared<std::atomic<bool>>(false);
  std::thread t([placed, all, body = std::move(body)]() mutable {
    placed->wait(false, std::memory_order_acquire);
    pthread_setaffinity_np(pthread_self(), sizeof all, &all); // advice: a failure leaves it where it is
    body();
  });
  pthread_setaffinity_np(t.native_handle(), sizeof others, &others); // advice, as above
  placed->store(true, std::memory_order_release);
  placed->notify_one();
  return t;
}

/// Asks for transparent huge pages in the calling thread's malloc arena, as the main heap
/// has them. glibc (64-bit) builds a thread's arena from heaps of 64 MiB, each aligned to
/// its size, so the heap holding a fresh small block starts at that block's address
/// rounded down to 64 MiB. Advice only: where the layout differs (another allocator, the
/// main arena), the kernel applies it to whatever anonymous memory lies there or refuses
/// it, and no result depends on it.
inline void advise_huge_pages_in_thread_heap() {
  constexpr uintptr_t kHeap = uintptr_t{64} << 20;
  void* probe = std::malloc(64);
  if (probe == nullptr) return;
  const uintptr_t base = reinterpret_cast<uintptr_t>(probe) & ~(kHeap - 1);
  std::free(probe);
  madvise(reinterpret_cast<void*>(base), kHeap, MADV_HUGEPAGE); // advice only
}

/// The machine's runnable tasks at this instant, the calling thread included
/// (/proc/loadavg's fourth field, "running/total"); 0 when it cannot be read.
inline int runnable_tasks() {
  std::FILE* f = std::fopen("/proc/loadavg", "r");
  if (f == nullptr) return 0;
  int running = 0;
  if (std::fscanf(f, "%*f %*f %*f %d/", &running) != 1) running = 0;
  std::fclose(f);
  return running;
}

/// Whether a CPU this process may use besides the caller's has nothing to run: at most
/// CPUs − 1 runnable tasks, the caller among them, at one look. The caller does not sleep
/// between looks (beside a busy core three looks 0.2 ms apart cost it ~2.5 ms); a look
/// that catches a passing process only keeps the work on the caller's thread. The answer
/// is kept for a second: a run's lowering, set-up and closed forms ahead share one look,
/// and a sweep looks about once a second, not at every point.
inline bool other_core_idle() {
  using Clock = std::chrono::steady_clock;
  static std::atomic<int64_t> decided_at{INT64_MIN}; // Clock ticks of the last look
  static std::atomic<bool> idle{false};
  const int64_t now = Clock::now().time_since_epoch().count();
  const int64_t second = std::chrono::duration_cast<Clock::duration>(std::chrono::seconds(1)).count();
  const int64_t at = decided_at.load(std::memory_order_acquire);
  if (at != INT64_MIN && now - at < second) return idle.load(std::memory_order_relaxed);
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  int running = 0;
  const bool answer = sched_getaffinity(0, sizeof cpus, &cpus) == 0 && CPU_COUNT(&cpus) >= 2 &&
                      ((running = runnable_tasks()) <= 0 || running <= CPU_COUNT(&cpus) - 1);
  idle.store(answer, std::memory_order_relaxed);
  decided_at.store(now, std::memory_order_release);
  return answer;
}

/// Whether `when` gives the caller a helper thread now (Always; WhenCoreIdle where
/// other_core_idle()).
inline bool helper_wanted(HelperThread when) {
  return when == HelperThread::Always || (when == HelperThread::WhenCoreIdle && other_core_idle());
}

/// Calls fn(i) for every i in [0, n), the calls for different i possibly at once: the
/// caller takes them from 0 upwards and, where helper_wanted(when), a thread started with
/// thread_beside() (its arena advised for huge pages) takes them from n − 1 downwards,
/// until the two meet. Whatever the split, a call that throws stops only its own side:
/// the caller then stops too, while a failed helper leaves the rest to the caller, so the
/// exception rethrown is the one a plain loop in order would have thrown first (the
/// lowest index that threw). Without a helper (n < 2, none wanted, no thread to be had) it
/// is that plain loop. The split never shows in the results where fn(i) writes only what
/// belongs to i.
template <class Fn>
void for_each_index_with_helper(size_t n, HelperThread when, Fn&& fn) {
  if (n < 2 || !helper_wanted(when)) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  struct Shared {
    std::mutex m;
    size_t lo = 0, hi = 0;       // [lo, hi) not yet claimed
    bool helper_stopped = false; // the helper claims no more (done, or its call threw)
    std::exception_ptr helper_error;
  };
  auto s = std::make_shared<Shared>();
  s->hi = n;
  auto helper_body = [s, &fn]() {
    advise_huge_pages_in_thread_heap();
    for (;;) {
      size_t i = 0;
      {
        const std::lock_guard lock(s->m);
        if (s->helper_stopped || s->lo >= s->hi) break;
        i = --s->hi;
      }
      try {
        fn(i);
      } catch (...) {
        const std::lock_guard lock(s->m);
        s->helper_error = std::current_exception();
        s->helper_stopped = true;
        // the indexes it gave up are below i and still unclaimed: the caller takes them
        return;
      }
    }
    const std::lock_guard lock(s->m);
    s->helper_stopped = true;
  };
  std::thread t;
  try {
    t = thread_beside(helper_body);
  } catch (const std::system_error&) { // no thread to be had
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::exception_ptr caller_error;
  for (;;) {
    size_t i = 0;
    {
      const std::lock_guard lock(s->m);
      if (s->lo >= s->hi) break;
      i = s->lo++;
    }
    try {
      fn(i);
    } catch (...) {
      caller_error = std::current_exception();
      const std::lock_guard lock(s->m);
      s->helper_stopped = true; // every index it would take lies above this one
      break;
    }
  }
  t.join();
  if (caller_error) std::rethrow_exception(caller_error);
  if (s->helper_error) std::rethrow_exception(s->helper_error);
}

} // namespace twinscale
