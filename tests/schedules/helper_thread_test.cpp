// common/helper_thread.hpp: work split with a helper thread gives what a loop in order
// gives (each index once, the first error of the loop; the same schedules).
#include <catch2/catch.hpp>

#include <atomic>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/helper_thread.hpp"
#include "config/job_file.hpp"
#include "config/presets.hpp"
#include "schedules/schedule.hpp"
#include "schedules/schedule_equal.hpp"

using twinscale::for_each_index_with_helper;
using twinscale::HelperThread;
using twinscale::thread_beside;

TEST_CASE("helper thread: a thread started beside its creator runs its body", "[helper_thread]") {
  std::atomic<int> ran{0};
  std::thread t = thread_beside([&ran] { ran = 1; });
  t.join();
  CHECK(ran == 1);
}

TEST_CASE("helper thread: every index is called once, whatever the split", "[helper_thread]") {
  for (const bool helper : {false, true})
    for (size_t n : {0, 1, 2, 3, 8, 41}) {
      INFO("helper " << helper << ", n " << n);
      std::vector<std::atomic<int>> calls(n);
      for_each_index_with_helper(n, helper ? HelperThread::Always : HelperThread::Off,
                                 [&](size_t i) { calls[i].fetch_add(1); });
      for (size_t i = 0; i < n; ++i) CHECK(calls[i].load() == 1);
    }
}

TEST_CASE("helper thread: the error rethrown is the one a loop in order meets first", "[helper_thread]") {
  // failures low (the caller's side), high (the helper's side) and both: always the
  // lowest failing index, and every index below it was called
  const std::vector<std::set<size_t>> failing = {{3}, {14}, {3, 14}, {0, 15}, {7, 8}};
  for (const auto& bad : failing)
    for (int round = 0; round < 50; ++round) {
      constexpr size_t n = 16;
      std::vector<std::atomic<int>> calls(n);
      std::string what;
      try {
        for_each_index_with_helper(n, HelperThread::Always, [&](size_t i) {
          calls[i].fetch_add(1);
          volatile double x = 0; // a little work, so that the two sides interleave
          for (int k = 0; k < 2000 * static_cast<int>(i % 3); ++k) x = x + 1;
          if (bad.contains(i)) throw std::runtime_error(std::to_string(i));
        });
      } catch (const std::runtime_error& e) {
        what = e.what();
      }
      const size_t first = *bad.begin();
      INFO("failing " << first << ", round " << round);
      REQUIRE(what == std::to_string(first));
      for (size_t i = 0; i < first; ++i) CHECK(calls[i].load() == 1);
      for (size_t i = 0; i < n; ++i) CHECK(calls[i].load() <= 1);
    }
}

TEST_CASE("helper thread: the tiny presets lowered with a helper thread are the schedules lowered alone",
          "[helper_thread]") {
  // (lowering_setup_test compares every field with the op-by-op lowering; this one is small
  // enough for ThreadSanitizer: scripts/sanitize.sh --threads)
  for (const std::string& name : twinscale::config::preset_names("jobs")) {
    if (!name.starts_with("tiny")) continue;
    INFO(name);
    const twinscale::schedules::JobSpec job = twinscale::config::load_job_preset(name);
    twinscale::schedules::LoweringTarget alone;
    alone.check_memory = false;
    twinscale::schedules::LoweringTarget beside = alone;
    beside.helper_thread = twinscale::HelperThread::Always;
    for (int round = 0; round < 5; ++round) {
      std::string why;
      const twinscale::schedules::Schedule a = twinscale::schedules::lower(job, beside);
      const twinscale::schedules::Schedule b = twinscale::schedules::lower(job, alone);
      CHECK(twinscale::schedules::schedules_equal(a, b, &why));
      INFO(why);
      CHECK(a.names == b.names);
      CHECK(a.model_flops_per_iteration == b.model_flops_per_iteration);
    }
  }
}
