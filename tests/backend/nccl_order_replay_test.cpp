// A deadlock of the CUDA device, caught without a GPU: the executor's real issue order (recorded by
// the fake device) replayed under NCCL's ordering rules. With every send and receive of
// a pipeline group on one communicator (the CUDA device before the fix) pp ≥ 2
// deadlocks; with one directed communicator per peer pair and direction (the fix, the
// devices' model) it does not.
#include <catch2/catch.hpp>

#include "backend/executor.hpp"
#include "config/job_file.hpp"
#include "fake_device.hpp"
#include "schedules/nccl_order.hpp"
#include "schedules/synthetic.hpp"
#include "schedules/validate.hpp"

using namespace twinscale;

namespace {

/// Each rank's issue order on a device that orders on the GPU, as the executor issues it.
std::vector<std::vector<uint32_t>> executor_issue_orders(const schedules::Schedule& s) {
  std::vector<std::vector<uint32_t>> orders;
  for (int64_t r = 0; r < s.world(); ++r) {
    backend::test::FakeDevice dev(true);
    backend::ExecutorOptions o;
    o.timeout_s = 5;
    o.idle_wait_s = 1e-6;
    REQUIRE(backend::Executor(s, r, dev, o).run().status == backend::RunStatus::Completed);
    orders.push_back(dev.issue_order);
  }
  return orders;
}

void check_replay(const schedules::Schedule& s) {
  const auto orders = executor_issue_orders(s);
  const schedules::IssueOrder replay = [&](int64_t r) { return orders[static_cast<size_t>(r)]; };
  const auto shared = schedules::check_nccl_order(s, schedules::CommModel{false, false}, replay);
  REQUIRE(!shared.empty());
  for (const auto& v : shared) {
    INFO(schedules::describe(v));
    CHECK(v.kind == schedules::ViolationKind::NcclOrder);
    CHECK(v.rank >= 0);
    CHECK(v.op_index >= 0);
    CHECK(v.reason.find("pp{") != std::string::npos); // names the shared communicator
  }
  const auto directed = schedules::check_nccl_order(s, schedules::kDeviceCommModel, replay);
  for (const auto& v : directed) UNSCOPED_INFO(schedules::describe(v));
  CHECK(directed.empty());
}

} // namespace

TEST_CASE("nccl order replay: synthetic 1x2x1 deadlocks on one shared pp communicator, not on directed ones") {
  schedules::SyntheticOptions o;
  o.micro_batches = 4;
  check_replay(schedules::synthetic_schedule(schedules::Layout{1, 1, 2}, o));
}

TEST_CASE(
    "nccl order replay: tiny-1f1b and tiny-interleaved deadlock on one shared pp communicator, not on directed ones") {
  for (const char* name : {"tiny-1f1b", "tiny-interleaved"}) {
    INFO(name);
    check_replay(schedules::lower(config::load_job_preset(name),
                                  schedules::LoweringTarget{80e9, /*check_memory=*/false, {}, true}));
  }
}

TEST_CASE("nccl order replay: the fake device holds a communicator's later op until the earlier one completes") {
  const auto s = schedules::synthetic_schedule(schedules::Layout{1, 1, 2}, {});
  const auto& prog = s.program(1);
  // Two receives of stage 1 from stage 0 on one directed channel: hold back the first.
  std::vector<uint32_t> recvs;
  for (uint32_t i = 0; i < prog.ops.size(); ++i)
    if (prog.ops[i].kind == schedules::OpKind::Recv) recvs.push_back(i);
  REQUIRE(recvs.size() >= 2);
  backend::test::FakeDevice dev(true);
  dev.stuck.insert(recvs[0]);
  backend::ExecutorOptions o;
  o.timeout_s = 0.05;
  o.idle_wait_s = 1e-4;
  const auto r = backend::Executor(s, 1, dev, o).run();
  CHECK(r.status == backend::RunStatus::TimedOut);
  CHECK(dev.done_at[recvs[1]] < 0); // issued, but queued behind the stuck one
  CHECK(dev.issued_at[recvs[1]] >= 0);
  CHECK(dev.abort_calls == 1);
}
