// The executor's ordering rules (stream order, dependencies, a group's ops in program
// order) with both device kinds, and its timeout / failure outcomes (M19), on the
// synthetic schedule with an in-process fake device.
#include <algorithm>
#include <chrono>
#include <map>

#include <catch2/catch.hpp>

#include "backend/executor.hpp"
#include "fake_device.hpp"
#include "mpi_helpers.hpp"
#include "records/run_dir.hpp"
#include "schedules/synthetic.hpp"

using namespace twinscale;
using backend::test::FakeDevice;

namespace {

backend::ExecutorOptions opts(double timeout_s, double idle_s) {
  backend::ExecutorOptions o;
  o.timeout_s = timeout_s;
  o.idle_wait_s = idle_s;
  return o;
}

schedules::Schedule tiny() { return schedules::synthetic_schedule(schedules::Layout{2, 2, 2}, {3, 16, 8, 2}); }

} // namespace

TEST_CASE("executor: every op of every rank runs, in an order the semantics allow") {
  const schedules::Schedule s = tiny();
  for (bool on_device : {false, true}) {
    for (int64_t rank = 0; rank < s.world(); ++rank) {
      FakeDevice dev(on_device);
      backend::Executor ex(s, rank, dev, opts(5.0, 1e-6));
      const backend::RankResult r = ex.run();
      const auto& prog = s.program(rank);
      INFO("rank " << rank << " on_device " << on_device);
      REQUIRE(r.status == backend::RunStatus::Completed);
      CHECK(r.ops_completed == prog.ops.size());
      CHECK(r.events.size() == prog.ops.size());
      CHECK(r.waiting.empty());
      std::vector<size_t> pos(prog.ops.size());
      for (size_t k = 0; k < dev.issue_order.size(); ++k) pos[dev.issue_order[k]] = k;
      std::map<int, int64_t> last_on_stream;
      std::map<std::string, int64_t> last_on_channel;
      for (uint32_t i = 0; i < prog.ops.size(); ++i) {
        const auto& op = prog.ops[i];
        for (uint32_t d : prog.deps_of(i)) {
          if (on_device) {
            CHECK(pos[d] < pos[i]); // issued before, waited on device
            CHECK(std::count(dev.wait_lists[i].begin(), dev.wait_lists[i].end(), d) == 1);
          } else {
            CHECK(dev.done_at[d] < dev.issued_at[i]); // completed before issue
          }
        }
        const int st = static_cast<int>(op.stream);
        if (last_on_stream.count(st)) {
          const auto prev = static_cast<uint32_t>(last_on_stream[st]);
          CHECK(pos[prev] < pos[i]);
          if (!on_device) CHECK(dev.done_at[prev] < dev.issued_at[i]);
        }
        last_on_stream[st] = i;
        const std::string ch = backend::op_channel(s, rank, op);
        if (!ch.empty()) {
          if (last_on_channel.count(ch)) CHECK(pos[static_cast<uint32_t>(last_on_channel[ch])] < pos[i]);
          last_on_channel[ch] = i;
        }
      }
    }
  }
}

TEST_CASE("executor: a collective that never completes times out and says what it waits for") {
  const schedules::Schedule s = tiny();
  const int64_t rank = 5; // tp 1, dp 0, pp 1
  const auto& prog = s.program(rank);
  uint32_t second_tp = 0;
  int seen = 0;
  for (uint32_t i = 0; i < prog.ops.size(); ++i)
    if (prog.ops[i].kind == schedules::OpKind::AllReduce && prog.ops[i].group == schedules::GroupKind::Tp &&
        ++seen == 2) {
      second_tp = i;
      break;
    }
  FakeDevice dev(false);
  dev.stuck.insert(second_tp);
  backend::Executor ex(s, rank, dev, opts(0.05, 1e-3));
  const backend::RankResult r = ex.run();
  REQUIRE(r.status == backend::RunStatus::TimedOut);
  CHECK(dev.aborted);
  REQUIRE(r.waiting.size() == 1);
  const records::WaitingOp& w = r.waiting[0];
  CHECK(w.op_index == second_tp);
  CHECK(w.channel == "tp");
  CHECK(w.sequence == 1);
  CHECK(w.peers == std::vector<int64_t>{4, 5});
  CHECK(w.waiting_s >= 0.045); // the timeout counts from the last completion, just before its issue
  CHECK(r.issued.at("tp") == 2);
  CHECK(r.ops_completed < prog.ops.size());
  const auto failed = std::find_if(r.events.begin(), r.events.end(), [&](auto& e) { return e.op_index == second_tp; });
  REQUIRE(failed != r.events.end());
  CHECK(failed->failed);
}

TEST_CASE("executor: an op the device started after the rank stopped ends where it started, and its state reads back") {
  // CI, a SIGSTOPped peer: the rank timed out, read its end time, and a stream thread began
  // the next op before the device was aborted; that event ended before it started and
  // `diagnose` refused the rank's state file
  const schedules::Schedule s = tiny();
  const int64_t rank = 5;
  const auto& prog = s.program(rank);
  const auto first_tp = static_cast<uint32_t>(
      std::find_if(prog.ops.begin(), prog.ops.end(), [](auto& op) { return op.group == schedules::GroupKind::Tp; }) -
      prog.ops.begin());
  REQUIRE(first_tp < prog.ops.size());
  FakeDevice dev(false);
  dev.stuck.insert(first_tp); // waits on its peers until the timeout
  dev.late_start[first_tp] = 5.0;
  backend::Executor ex(s, rank, dev, opts(0.02, 1e-3));
  const backend::RankResult r = ex.run();
  REQUIRE(r.status == backend::RunStatus::TimedOut);
  const auto e = std::find_if(r.events.begin(), r.events.end(), [&](auto& x) { return x.op_index == first_tp; });
  REQUIRE(e != r.events.end());
  CHECK(e->failed);
  CHECK(e->end_s == e->start_s); // started 5 s after the run's end was read
  const std::string dir = backend::test::fresh_dir("late-start");
  records::RankState st;
  st.rank = rank;
  st.status = r.status;
  st.ops_total = r.ops_total;
  st.events = r.events;
  records::write_rank_state(dir, st);
  const records::RankState back = records::read_rank_state(records::rank_state_path(dir, rank));
  REQUIRE(back.events.size() == r.events.size());
  CHECK(back.events.front().end_s >= back.events.front().start_s);
}

TEST_CASE("executor: a p2p receive names its peer's global rank and direction") {
  const schedules::Schedule s = tiny();
  const int64_t rank = 6; // tp 0, dp 1, pp 1: receives from rank 2
  const auto& prog = s.program(rank);
  const auto it =
      std::find_if(prog.ops.begin(), prog.ops.end(), [](auto& op) { return op.kind == schedules::OpKind::Recv; });
  REQUIRE(it != prog.ops.end());
  FakeDevice dev(true);
  dev.stuck.insert(static_cast<uint32_t>(it - prog.ops.begin()));
  backend::Executor ex(s, rank, dev, opts(0.02, 1e-3));
  const backend::RankResult r = ex.run();
  REQUIRE(r.status == backend::RunStatus::TimedOut);
  // Device-ordered: everything was issued; what waits is the stuck recv and what follows on streams.
  REQUIRE(!r.waiting.empty());
  CHECK(r.waiting[0].channel == "recv:pp:2");
  CHECK(r.waiting[0].peers == std::vector<int64_t>{2});
}

TEST_CASE("executor: the abort flag stops a rank that is still waiting") {
  const schedules::Schedule s = tiny();
  FakeDevice dev(false);
  dev.stuck.insert(2);
  backend::ExecutorOptions o = opts(60.0, 1e-3);
  o.should_abort = [] { return true; };
  const backend::RankResult r = backend::Executor(s, 0, dev, o).run();
  CHECK(r.status == backend::RunStatus::Aborted); // the flag, not the 60 s timeout, ended it
  REQUIRE(r.waiting.size() == 1);
  CHECK(r.waiting[0].op_index == 2);
}

TEST_CASE("executor: a failed op stops the rank with OpFailed") {
  const schedules::Schedule s = tiny();
  FakeDevice dev(false);
  dev.failing.insert(3);
  backend::Executor ex(s, 0, dev, opts(5.0, 1e-6));
  const backend::RankResult r = ex.run();
  CHECK(r.status == backend::RunStatus::OpFailed);
  CHECK(r.failed_ops == std::vector<uint32_t>{3});
}

TEST_CASE("synthetic schedule: p2p pairs and collectives match across ranks") {
  const schedules::Schedule s = tiny();
  // Per channel, the number of ops on each side agrees (sends ↔ receives, collective counts).
  std::map<std::pair<int64_t, std::string>, int64_t> count;
  for (int64_t r = 0; r < s.world(); ++r)
    for (const auto& op : s.program(r).ops) {
      const std::string ch = backend::op_channel(s, r, op);
      if (!ch.empty()) ++count[{r, ch}];
    }
  for (const auto& [key, n] : count) {
    const auto& [r, ch] = key;
    if (ch.rfind("send:", 0) == 0 || ch.rfind("recv:", 0) == 0) {
      const auto colon = ch.rfind(':');
      const int64_t peer = std::stoll(ch.substr(colon + 1));
      const std::string mirror = (ch[0] == 's' ? "recv:" : "send:") + ch.substr(5, colon - 5) + ":" + std::to_string(r);
      CHECK(count[{peer, mirror}] == n);
    } else {
      const schedules::GroupKind g = ch == "tp"   ? schedules::GroupKind::Tp
                                     : ch == "dp" ? schedules::GroupKind::Dp
                                                  : schedules::GroupKind::Embedding;
      for (int64_t m : s.layout.group_members(g, r)) CHECK(count[{m, ch}] == n);
    }
  }
}

TEST_CASE("executor watchdog: a receive posted early ages while the rank computes, no false hang", "[timing]") {
  // [timing]: runs alone (RUN_SERIAL): a loaded machine can stretch a 60 ms op past the 150 ms timeout
  // Rank 0 (stage 0) pre-posts its first backward receive and computes forwards for
  // longer than the timeout before it completes: each compute op finishes well inside
  // the timeout, so the rank is progressing (this was once reported as hung).
  const schedules::Schedule s = tiny();
  const auto& prog = s.program(0);
  uint32_t recv = 0;
  while (prog.ops[recv].kind != schedules::OpKind::Recv) ++recv;
  const double timeout_s = 0.15;
  for (bool on_device : {false, true}) {
    INFO("on_device " << on_device);
    FakeDevice dev(on_device);
    dev.slow[recv] = 3 * timeout_s;
    for (uint32_t i = 0; i < prog.ops.size(); ++i)
      if (!prog.ops[i].is_communication() && i < recv + 40) dev.slow[i] = 0.4 * timeout_s;
    const backend::RankResult r = backend::Executor(s, 0, dev, opts(timeout_s, 1e-3)).run();
    CHECK(r.status == backend::RunStatus::Completed);
    CHECK(dev.abort_calls == 0);
    CHECK(r.elapsed_s > timeout_s);
  }
}

TEST_CASE("executor watchdog: a rank whose peer stopped is reported within the timeout") {
  const schedules::Schedule s = tiny();
  const auto& prog = s.program(0);
  uint32_t recv = 0;
  while (prog.ops[recv].kind != schedules::OpKind::Recv) ++recv;
  for (bool on_device : {false, true}) {
    FakeDevice dev(on_device);
    dev.stuck.insert(recv); // the sender is stopped: its message never comes
    const double timeout_s = 0.1;
    const backend::RankResult r = backend::Executor(s, 0, dev, opts(timeout_s, 1e-3)).run();
    CHECK(r.status == backend::RunStatus::TimedOut); // the watchdog, not the test's end, stopped it
    CHECK(r.elapsed_s >= timeout_s);                 // and not before a timeout without progress
    CHECK(dev.abort_calls == 1);
    const bool names_recv =
        std::any_of(r.waiting.begin(), r.waiting.end(), [&](auto& w) { return w.op_index == recv; });
    CHECK(names_recv);
  }
}

TEST_CASE("executor: a device that orders on the GPU has a bounded window of ops in flight per stream") {
  const schedules::Schedule s = tiny();
  FakeDevice dev(true);
  dev.stuck.insert(0); // the first compute op never completes
  backend::ExecutorOptions o = opts(0.05, 1e-3);
  o.max_in_flight_per_stream = 3;
  const backend::RankResult r = backend::Executor(s, 0, dev, o).run();
  CHECK(r.status == backend::RunStatus::TimedOut);
  size_t compute_issued = 0;
  for (uint32_t i : dev.issue_order) compute_issued += s.program(0).ops[i].stream == schedules::Stream::Compute;
  CHECK(compute_issued == 3);
}

TEST_CASE("executor watchdog: waiting on a peer that progresses is not a hang, once it stops, it is") {
  const schedules::Schedule s = tiny();
  const auto& prog = s.program(0);
  uint32_t recv = 0;
  while (prog.ops[recv].kind != schedules::OpKind::Recv) ++recv;
  FakeDevice dev(false);
  dev.stuck.insert(recv); // its sender, rank 4, is slow and then stops
  const double timeout_s = 0.1;
  backend::ExecutorOptions o = opts(timeout_s, 1e-3);
  const double t0 = dev.now_s();
  std::vector<int64_t> asked;
  o.peer_progress = [&](int64_t peer) { // rank 4 progresses for four timeouts, then stops
    asked.push_back(peer);
    return std::min(dev.now_s(), t0 + 4 * timeout_s);
  };
  std::vector<double> published;
  o.publish_progress = [&](double t) { published.push_back(t); };
  const backend::RankResult r = backend::Executor(s, 0, dev, o).run();
  CHECK(r.status == backend::RunStatus::TimedOut);
  CHECK(r.elapsed_s > 4 * timeout_s); // not declared hung while the peer progressed
  REQUIRE(!asked.empty());
  CHECK(std::count(asked.begin(), asked.end(), 4) == static_cast<long>(asked.size())); // only the peer it waits on
  REQUIRE(published.size() >= 2);
  CHECK(published.back() > published.front()); // it passed the peer's progress on
}

TEST_CASE("executor watchdog: two ranks waiting on each other age out (no progress anywhere)") {
  const schedules::Schedule s = tiny();
  const auto& prog = s.program(0);
  uint32_t recv = 0;
  while (prog.ops[recv].kind != schedules::OpKind::Recv) ++recv;
  FakeDevice dev(false);
  dev.stuck.insert(recv);
  const double timeout_s = 0.1;
  backend::ExecutorOptions o = opts(timeout_s, 1e-3);
  double mine = -1e300;
  o.publish_progress = [&](double t) { mine = t; };
  o.peer_progress = [&](int64_t) { return mine; }; // the peer only echoes this rank's progress
  const backend::RankResult r = backend::Executor(s, 0, dev, o).run();
  CHECK(r.status == backend::RunStatus::TimedOut); // an echo of its own progress is no progress
  CHECK(r.elapsed_s >= timeout_s);
  CHECK(dev.abort_calls == 1);
}

namespace {
/// One rank: a GEMM on the compute stream and an all-reduce on the DP stream, both ready
/// at the start, with the given priorities.
schedules::Schedule two_ready_ops(int32_t gemm_priority, int32_t all_reduce_priority) {
  schedules::Schedule s;
  s.names = {"gemm", "grad.ar"};
  schedules::Program p;
  schedules::Op gemm;
  gemm.kind = schedules::OpKind::Gemm;
  gemm.kernel = schedules::Kernel::Gemm;
  gemm.stream = schedules::Stream::Compute;
  gemm.shape = {8, 8, 8, 0};
  gemm.priority = gemm_priority;
  gemm.name = 0;
  schedules::Op ar;
  ar.kind = schedules::OpKind::AllReduce;
  ar.group = schedules::GroupKind::Dp;
  ar.stream = schedules::Stream::DpComm;
  ar.bytes = 64;
  ar.priority = all_reduce_priority;
  ar.name = 1;
  p.ops = {gemm, ar};
  s.programs = {p};
  s.program_of_rank = {0};
  return s;
}
} // namespace

TEST_CASE("executor: of the ops ready at once, the higher priority starts first, then program order") {
  for (bool on_device : {false, true}) {
    INFO("orders on device: " << on_device);
    {
      const auto s = two_ready_ops(0, 5); // the later op has the higher priority
      FakeDevice dev(on_device);
      const auto r = backend::Executor(s, 0, dev, opts(5, 1e-4)).run();
      REQUIRE(r.status == backend::RunStatus::Completed);
      CHECK(dev.issue_order == std::vector<uint32_t>{1, 0});
    }
    {
      const auto s = two_ready_ops(3, 3); // a tie: program order
      FakeDevice dev(on_device);
      const auto r = backend::Executor(s, 0, dev, opts(5, 1e-4)).run();
      REQUIRE(r.status == backend::RunStatus::Completed);
      CHECK(dev.issue_order == std::vector<uint32_t>{0, 1});
    }
  }
}
