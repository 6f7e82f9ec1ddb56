#include "backend/work_queue.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <iostream>
#include <mutex>
#include <thread>
#include <time.h>

#include <mpi.h>

#include "backend/work_queue_error.hpp"

namespace twinscale::backend {

namespace {

constexpr int kTagWork = 7101;   // rank 0 → worker: one int64 item, or kStop
constexpr int kTagResult = 7102; // worker → rank 0: int64 item followed by the result bytes
constexpr int64_t kStop = -1;

/// Sends that may still be in flight, with their buffers. Blocking MPI_Send spins until
/// the receiver's MPI library takes the message, and a receiver busy computing a point
/// does not; so every send is non-blocking and completed later, by polling with naps.
class Outbox {
public:
  void send(std::string bytes, int to, int tag) {
    reap();
    pending_.push_back({std::move(bytes), MPI_REQUEST_NULL});
    auto& p = pending_.back();
    MPI_Isend(p.bytes.data(), static_cast<int>(p.bytes.size()), MPI_BYTE, to, tag, MPI_COMM_WORLD, &p.request);
  }
  /// Frees the buffers of completed sends.
  void reap() {
    while (!pending_.empty()) {
      int done = 0;
      MPI_Test(&pending_.front().request, &done, MPI_STATUS_IGNORE);
      if (!done) break;
      pending_.pop_front();
    }
  }
  void drain();

private:
  struct Pending {
    std::string bytes;
    MPI_Request request;
  };
  std::deque<Pending> pending_; // std::deque: push_back keeps the other buffers in place
};

std::string int64_bytes(int64_t v) {
  std::string b(sizeof v, '\0');
  std::memcpy(b.data(), &v, sizeof v);
  return b;
}

void send_item(Outbox& out, int64_t item, int to) { out.send(int64_bytes(item), to, kTagWork); }

/// A short sleep between polls. Blocking MPI calls busy-poll in Open MPI and would take
/// the CPU from the computing rank beside them (2 ranks on 2 cores, or an oversubscribed
/// node); items take tens of milliseconds or more, so a poll every ≤ 2 ms costs nothing.
void nap(int& round) {
  const long ns = round < 10 ? 50'000L : 2'000'000L;
  ++round;
  timespec t{0, ns};
  ::nanosleep(&t, nullptr);
}

void send_result(Outbox& out, int64_t item, const std::string& result) {
  out.send(int64_bytes(item) + result, 0, kTagResult);
}

/// Blocking (or not) receipt of one result at rank 0; returns false when none waits.
bool receive_result(bool block, int& from, int64_t& item, std::string& result) {
  MPI_Status st;
  int flag = 0;
  for (int round = 0;; nap(round)) {
    MPI_Iprobe(MPI_ANY_SOURCE, kTagResult, MPI_COMM_WORLD, &flag, &st);
    if (flag || !block) break;
  }
  if (!flag) return false;
  int bytes = 0;
  MPI_Get_count(&st, MPI_BYTE, &bytes);
  std::string msg(static_cast<size_t>(bytes), '\0');
  MPI_Recv(msg.data(), bytes, MPI_BYTE, st.MPI_SOURCE, kTagResult, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  from = st.MPI_SOURCE;
  std::memcpy(&item, msg.data(), sizeof item);
  result = msg.substr(sizeof item);
  return true;
}

void Outbox::drain() {
  for (int round = 0; !pending_.empty(); nap(round)) reap();
}

/// Set once an MpiJobError is thrown: MpiSession then leaves MPI unfinalised (a finalise
/// would wait for ranks that wait for this one) and main ends the job.
std::atomic<bool> g_job_failed{false};

/// The error every rank must end for: where it happened on this rank and why.
MpiJobError job_error(const char* where, const std::string& why) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  g_job_failed = true;
  return MpiJobError("rank " + std::to_string(rank) + ": " + where + ": " + why + " (the MPI job must end)");
}

[[noreturn]] void die(const char* where, const std::exception& e) { throw job_error(where, e.what()); }

WorkQueueStats run_root(const std::vector<int64_t>& items, int size, const std::function<std::string(int64_t)>& compute,
                        const std::function<void(int64_t, const std::string&)>& consume, const WorkQueueOptions& o) {
  WorkQueueStats stats;
  for (int64_t i : items)
    if (i < 0) die("work queue", WorkQueueError("item " + std::to_string(i) + " is negative (items must be ≥ 0)"));
  size_t next = 0;
  Outbox outbox;
  std::vector<int> outstanding(static_cast<size_t>(size), 0);
  int64_t in_flight = 0;
  const int prefetch = o.prefetch < 1 ? 1 : o.prefetch;
  // Items a worker may hold: `prefetch`, fewer near the end so that no rank is left
  // computing a backlog while the others are done.
  auto cap = [&]() {
    const size_t left = items.size() - next;
    return static_cast<int>(std::clamp<size_t>(left / static_cast<size_t>(size), 1, static_cast<size_t>(prefetch)));
  };
  auto top_up = [&](int w) {
    while (next < items.size() && outstanding[static_cast<size_t>(w)] < cap()) {
      send_item(outbox, items[next++], w);
      ++outstanding[static_cast<size_t>(w)];
      ++in_flight;
    }
  };
  for (int w = 1; w < size; ++w) top_up(w);
  const bool root_computes = o.root_computes || size == 1;
  auto handle = [&](int from, int64_t item, const std::string& result) {
    --outstanding[static_cast<size_t>(from)];
    --in_flight;
    try {
      consume(item, result);
    } catch (const std::exception& e) {
      die("storing a result", e);
    }
    top_up(from);
  };
  int from = 0;
  int64_t item = 0;
  std::string result;
  while (next < items.size() || in_flight > 0) {
    while (receive_result(false, from, item, result)) handle(from, item, result);
    if (root_computes && next < items.size()) {
      const int64_t mine = items[next++];
      std::string r;
      try {
        r = compute(mine);
      } catch (const std::exception& e) {
        die("computing an item", e);
      }
      ++stats.items_here;
      try {
        consume(mine, r);
      } catch (const std::exception& e) {
        die("storing a result", e);
      }
      continue;
    }
    const double t0 = MPI_Wtime();
    if (in_flight > 0 && receive_result(true, from, item, result)) handle(from, item, result);
    stats.wait_s += MPI_Wtime() - t0;
  }
  for (int w = 1; w < size; ++w) send_item(outbox, kStop, w);
  outbox.drain();
  stats.items_total = static_cast<int64_t>(items.size());
  return stats;
}

/// Rank 0 when MPI allows another thread to make the MPI calls (MPI_THREAD_SERIALIZED):
/// the calling thread computes rank 0's share while a service thread hands out items,
/// takes results in and consumes every result (rank 0's own too), so a worker's request
/// is answered within a nap (≤ 2 ms) instead of after rank 0's current item. compute()
/// runs on the calling thread only, consume() on the service thread only.
class ThreadedRoot {
public:
  ThreadedRoot(const std::vector<int64_t>& items, int size,
               const std::function<void(int64_t, const std::string&)>& consume, const WorkQueueOptions& o)
      : items_(items), size_(size), consume_(consume), prefetch_(std::max(1, o.prefetch)),
        outstanding_(static_cast<size_t>(size), 0) {}

  WorkQueueStats run(const std::function<std::string(int64_t)>& compute, bool root_computes) {
    WorkQueueStats stats;
    std::thread service([this] { serve(); });
    for (;;) {
      int64_t mine = 0;
      {
        std::lock_guard<std::mutex> lock(m_);
        if (!root_computes || next_ >= items_.size() || failed_) break;
        mine = items_[next_++];
      }
      try {
        std::string r = compute(mine);
        ++stats.items_here;
        std::lock_guard<std::mutex> lock(m_);
        own_.emplace_back(mine, std::move(r));
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(m_);
        failed_ = true;
        failure_where_ = "computing an item";
        failure_ = e.what();
      }
    }
    {
      std::lock_guard<std::mutex> lock(m_);
      main_done_ = true;
    }
    const double t0 = MPI_Wtime(); // no other MPI call runs now: MPI_Wtime is local
    service.join();
    stats.wait_s = MPI_Wtime() - t0;
    if (failed_) throw job_error(failure_where_.c_str(), failure_); // the service thread has stopped
    stats.items_total = static_cast<int64_t>(items_.size());
    return stats;
  }

private:
  /// Items a worker may hold: `prefetch`, fewer near the end (no backlog on one rank).
  int cap_locked() const {
    const size_t left = items_.size() - next_;
    return static_cast<int>(std::clamp<size_t>(left / static_cast<size_t>(size_), 1, static_cast<size_t>(prefetch_)));
  }
  void top_up(int w) {
    for (;;) {
      int64_t item = 0;
      {
        std::lock_guard<std::mutex> lock(m_);
        if (next_ >= items_.size() || outstanding_[static_cast<size_t>(w)] >= cap_locked()) return;
        item = items_[next_++];
      }
      send_item(outbox_, item, w);
      ++outstanding_[static_cast<size_t>(w)];
      ++in_flight_;
    }
  }
  /// Consumes one result; false (the failure recorded for the calling thread) if it threw.
  bool store(int64_t item, const std::string& result) {
    try {
      consume_(item, result);
      return true;
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lock(m_);
      failed_ = true;
      failure_where_ = "storing a result";
      failure_ = e.what();
      return false;
    }
  }
  void serve() {
    for (int w = 1; w < size_; ++w) top_up(w);
    int from = 0;
    int64_t item = 0;
    std::string result;
    for (int round = 0;;) {
      bool busy = false;
      while (receive_result(false, from, item, result)) {
        --outstanding_[static_cast<size_t>(from)];
        --in_flight_;
        if (!store(item, result)) return; // the calling thread throws; main ends the job
        top_up(from);
        busy = true;
      }
      std::deque<std::pair<int64_t, std::string>> own;
      bool done = false;
      {
        std::lock_guard<std::mutex> lock(m_);
        own.swap(own_);
        if (failed_) return; // rank 0's own item failed: the calling thread throws
        done = main_done_ && next_ >= items_.size();
      }
      for (auto& [i, r] : own)
        if (!store(i, r)) return;
      busy = busy || !own.empty();
      if (done && in_flight_ == 0) {
        std::lock_guard<std::mutex> lock(m_);
        if (own_.empty()) break;
        continue;
      }
      for (int w = 1; w < size_; ++w) top_up(w); // rank 0 computing nothing: workers take the rest
      outbox_.reap();
      if (busy)
        round = 0;
      else
        nap(round);
    }
    for (int w = 1; w < size_; ++w) send_item(outbox_, kStop, w);
    outbox_.drain();
  }

  const std::vector<int64_t>& items_;
  const int size_;
  const std::function<void(int64_t, const std::string&)>& consume_;
  const int prefetch_;
  Outbox outbox_;                // service thread only
  std::vector<int> outstanding_; // service thread only
  int64_t in_flight_ = 0;        // service thread only
  std::mutex m_;                 // guards what follows
  size_t next_ = 0;
  std::deque<std::pair<int64_t, std::string>> own_; // rank 0's results, to consume
  bool main_done_ = false;
  bool failed_ = false;
  std::string failure_where_, failure_;
};

bool threads_allowed() {
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  return provided >= MPI_THREAD_SERIALIZED;
}

WorkQueueStats run_worker(const std::function<std::string(int64_t)>& compute) {
  WorkQueueStats stats;
  Outbox outbox;
  for (;;) {
    int64_t item = 0;
    MPI_Request req;
    const double t0 = MPI_Wtime();
    MPI_Irecv(&item, static_cast<int>(sizeof item), MPI_BYTE, 0, kTagWork, MPI_COMM_WORLD, &req);
    int done = 0;
    for (int round = 0;; nap(round)) {
      MPI_Test(&req, &done, MPI_STATUS_IGNORE);
      if (done) break;
    }
    stats.wait_s += MPI_Wtime() - t0;
    if (item == kStop) break;
    std::string r;
    try {
      r = compute(item);
    } catch (const std::exception& e) {
      die("computing an item", e);
    }
    send_result(outbox, item, r);
    ++stats.items_here;
  }
  outbox.drain();
  return stats;
}

} // namespace

void end_mpi_job(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::abort(); // MPI_Abort does not return; its declaration does not say so
}

MpiSession::MpiSession() {
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised) {
    // SERIALIZED: rank 0's work queue makes its MPI calls from a service thread
    int provided = MPI_THREAD_SINGLE;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
      throw WorkQueueError("MPI_Init_thread failed");
    owns_ = true;
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

MpiSession::~MpiSession() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!owns_ || finalized || g_job_failed) return; // a failed job is ended by main (MPI_Abort)
  if (std::uncaught_exceptions() == 0) {
    // Meet in a polled barrier first: MPI_Finalize's own synchronisation spins while
    // rank 0 still writes its summary.
    MPI_Request req;
    MPI_Ibarrier(MPI_COMM_WORLD, &req);
    int done = 0;
    for (int round = 0;; nap(round)) {
      MPI_Test(&req, &done, MPI_STATUS_IGNORE);
      if (done) break;
    }
  }
  MPI_Finalize();
}

bool MpiSession::broadcast(bool flag) const {
  int v = flag ? 1 : 0;
  MPI_Request req;
  MPI_Ibcast(&v, 1, MPI_INT, 0, MPI_COMM_WORLD, &req);
  int done = 0;
  for (int round = 0;; nap(round)) { // polled: a blocking broadcast spins while rank 0 opens the store
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (done) break;
  }
  return v == 1;
}

WorkQueueStats run_work_queue(const std::vector<int64_t>& items, const std::function<std::string(int64_t)>& compute,
                              const std::function<void(int64_t, const std::string&)>& consume,
                              const WorkQueueOptions& options) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (rank == 0) {
    for (int64_t i : items)
      if (i < 0) die("work queue", WorkQueueError("item " + std::to_string(i) + " is negative (items must be ≥ 0)"));
    if (size > 1 && threads_allowed())
      return ThreadedRoot(items, size, consume, options).run(compute, options.root_computes);
    return run_root(items, size, compute, consume, options);
  }
  return run_worker(compute);
}

} // namespace twinscale::backend
