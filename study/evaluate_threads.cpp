#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>

#include "common/helper_thread.hpp"
#include "study/evaluate.hpp"

namespace twinscale::study {

bool study_runs_in_threads(const StudySpec& spec) {
  const bool simulates = spec.evaluation == Evaluation::Simulate || spec.evaluation == Evaluation::Campaign;
  return !(simulates && spec.mode == SimModeChoice::Flow);
}

namespace {

/// The results of the workers, slot k for todo[k], and the first exception any of them hit.
struct Slots {
  explicit Slots(size_t n) : results(n) {}
  std::mutex m;
  std::condition_variable ready;
  std::vector<std::optional<PointResult>> results;
  std::exception_ptr error;
  std::atomic<size_t> next{0};
  std::atomic<bool> stop{false};

  void fail(std::exception_ptr e) {
    std::lock_guard<std::mutex> lock(m);
    if (!error) error = std::move(e);
    stop = true;
    ready.notify_all();
  }
};

void worker(const StudySpec& spec, const std::vector<Point>& points, const std::vector<int64_t>& todo, Slots& s) {
  try {
    advise_huge_pages_in_thread_heap(); // its points' memory in 2 MiB pages, as the main heap's
    Evaluator evaluator(spec);
    evaluator.set_helper_thread(false); // the points themselves run side by side
    for (size_t k = s.next++; k < todo.size() && !s.stop; k = s.next++) {
      PointResult r = evaluator.evaluate(points[static_cast<size_t>(todo[k])]);
      std::lock_guard<std::mutex> lock(s.m);
      s.results[k] = std::move(r);
      s.ready.notify_all();
    }
  } catch (...) {
    s.fail(std::current_exception());
  }
}

} // namespace

void evaluate_in_threads(Evaluator& own, const StudySpec& spec, const std::vector<Point>& points,
                         const std::vector<int64_t>& todo, int threads,
                         const std::function<void(const Point&, const PointResult&)>& on_result) {
  const size_t n = todo.size();
  if (threads <= 1 || n <= 1) {
    for (int64_t id : todo) {
      const Point& p = points[static_cast<size_t>(id)];
      on_result(p, own.evaluate(p));
    }
    return;
  }
  if (!study_runs_in_threads(spec))
    throw std::logic_error("evaluate_in_threads: a flow-mode study runs on one thread (study_runs_in_threads)");
  Slots s(n);
  std::vector<std::thread> pool;
  const size_t count = std::min(static_cast<size_t>(threads), n);
  pool.reserve(count);
  for (size_t t = 0; t < count; ++t)
    pool.emplace_back(worker, std::cref(spec), std::cref(points), std::cref(todo), std::ref(s));
  try {
    for (size_t k = 0; k < n; ++k) {
      PointResult r;
      {
        std::unique_lock<std::mutex> lock(s.m);
        s.ready.wait(lock, [&] { return s.results[k].has_value() || s.error; });
        if (!s.results[k]) break; // a worker failed before this point was done
        r = std::move(*s.results[k]);
        s.results[k].reset();
      }
      on_result(points[static_cast<size_t>(todo[k])], r);
    }
  } catch (...) {
    s.fail(std::current_exception());
  }
  s.stop = true;
  for (auto& t : pool) t.join();
  if (s.error) std::rethrow_exception(s.error);
}

} // namespace twinscale::study
