// The CUDA device on real GPUs (label gpu; SKIPPED where none, see gpu_main.cpp).
// In-process: one rank runs every op kind (every kernel, every collective on size-1
// communicators, odd byte counts, a data load larger than its elementwise shape) and is
// aborted mid-run without touching a freed communicator. Under mpirun, as many ranks as
// there are GPUs: directed pipeline p2p, tensor/data-parallel collectives, the tiny
// presets; a case needing more GPUs than the machine has is SKIPPED.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>

#include <catch2/catch.hpp>

#include "../backend/mpi_helpers.hpp"
#include "backend/cuda/cuda_device.hpp"
#include "backend/executor.hpp"
#include "backend/trace_check.hpp"
#include "config/job_file.hpp"
#include "diagnose/hang_report.hpp"
#include "gpu_helpers.hpp"
#include "schedules/synthetic.hpp"
#include "tests/skip.hpp"

using namespace twinscale;
using schedules::GroupKind;
using schedules::Kernel;
using schedules::Op;
using schedules::OpKind;
using schedules::Stream;

namespace {

double steady_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

/// One rank, every op kind the CUDA device runs; each op after the previous one.
schedules::Schedule every_kind() {
  schedules::Schedule s;
  s.layout = schedules::Layout{1, 1, 1};
  s.job.name = "every-kind";
  s.job.model.hidden = 1024;
  s.job.model.vocab = 8192;
  schedules::Program p;
  auto add = [&](Op op, const std::string& name) {
    op.name = static_cast<uint32_t>(s.names.size());
    s.names.push_back(name);
    op.dep_begin = static_cast<uint32_t>(p.deps.size());
    if (!p.ops.empty()) {
      p.deps.push_back(static_cast<uint32_t>(p.ops.size() - 1));
      op.dep_count = 1;
    }
    p.ops.push_back(op);
  };
  auto compute = [](OpKind kind, Kernel kernel, std::array<int64_t, 4> shape, Stream st = Stream::Compute) {
    Op op;
    op.kind = kind;
    op.kernel = kernel;
    op.stream = st;
    op.shape = shape;
    op.bytes = 2.0 * static_cast<double>(std::max<int64_t>(shape[0], 1));
    return op;
  };
  auto comm = [](OpKind kind, GroupKind g, Stream st, double bytes, int32_t priority = 0) {
    Op op;
    op.kind = kind;
    op.group = g;
    op.stream = st;
    op.bytes = bytes;
    op.priority = priority;
    if (kind == OpKind::Broadcast) op.peer = 0;
    return op;
  };
  Op load = compute(OpKind::Elementwise, Kernel::DataLoad, {1024, 0, 0, 0}, Stream::Data);
  load.bytes = 8.0 * 1024 * 1024 + 3; // the whole batch, larger than 2·elements, odd
  add(load, "data.load");
  add(compute(OpKind::Gemm, Kernel::Gemm, {4096, 4096, 4096, 0}), "gemm.4096");
  add(compute(OpKind::Gemm, Kernel::Gemm, {2048, 8192, 1024, 0}), "gemm.2048x8192x1024");
  add(compute(OpKind::Attention, Kernel::AttentionUnfused, {32, 2048, 128, 0}), "attention.dense");
  add(compute(OpKind::Attention, Kernel::FlashAttention2, {32, 2048, 128, 512}), "attention.window512");
  const int64_t e = 4096 * 1024;
  for (auto [k, n] : std::initializer_list<std::pair<Kernel, const char*>>{{Kernel::LayerNorm, "layernorm.unfused"},
                                                                           {Kernel::FusedLayerNorm, "layernorm.fused"},
                                                                           {Kernel::Gelu, "gelu.unfused"},
                                                                           {Kernel::FusedBiasGelu, "bias_gelu.fused"},
                                                                           {Kernel::Dropout, "dropout"},
                                                                           {Kernel::ResidualAdd, "residual_add"},
                                                                           {Kernel::Embedding, "embedding"},
                                                                           {Kernel::CrossEntropy, "cross_entropy"}})
    add(compute(OpKind::Elementwise, k, {e, 0, 0, 0}), n);
  add(compute(OpKind::OptimizerStep, Kernel::AdamStep, {16 << 20, 0, 0, 0}), "adam");
  add(compute(OpKind::OptimizerStep, Kernel::LambStep, {16 << 20, 0, 0, 0}), "lamb");
  add(comm(OpKind::AllReduce, GroupKind::Tp, Stream::TpComm, 1001), "tp.all_reduce.odd");
  add(comm(OpKind::AllGather, GroupKind::Tp, Stream::TpComm, 64 << 20), "tp.all_gather");
  add(comm(OpKind::ReduceScatter, GroupKind::Tp, Stream::TpComm, 64 << 20), "tp.reduce_scatter");
  add(comm(OpKind::AllToAll, GroupKind::Tp, Stream::TpComm, 3 << 20), "tp.all_to_all");
  add(comm(OpKind::AllReduce, GroupKind::Dp, Stream::DpComm, 256 << 20), "dp.all_reduce");
  add(comm(OpKind::AllReduce, GroupKind::Dp, Stream::DpComm, 16 << 20, 1), "dp.all_reduce.priority1");
  add(comm(OpKind::Broadcast, GroupKind::World, Stream::DpComm, 777), "world.broadcast.odd");
  s.programs = {p};
  s.program_of_rank = {0};
  s.memory_by_stage.resize(1);
  return s;
}

std::unique_ptr<backend::Device> one_rank_device(const schedules::Schedule& s) {
  std::vector<backend::InitPhase> phases;
  const backend::BroadcastFromRoot alone = [](void*, size_t, const std::string&) {};
  return backend::make_cuda_device(s, 0, alone, steady_s(), 60, phases);
}

/// `twinscale run` on `ranks` GPUs; checks the run completed in an order the
/// schedule's semantics allow (the trace of every rank).
void run_cli(int ranks, const std::string& args, const schedules::Schedule& s) {
  const std::string dir = backend::test::fresh_dir("gpu");
  const auto r = backend::test::shell(backend::test::mpirun(ranks) + " " TWINSCALE_CLI " run " + args +
                                          " --device cuda --timeout 60 --run-dir " + dir,
                                      300);
  INFO(r.output);
  REQUIRE(r.status == 0);
  const auto report = diagnose::analyse_run_dir(dir, ranks);
  REQUIRE(report.all_completed());
  std::vector<schedules::TraceEvent> events;
  for (const auto& st : report.states) events.insert(events.end(), st.events.begin(), st.events.end());
  const auto violations = backend::check_trace_semantics(s, events, 1e-5);
  for (const auto& v : violations) UNSCOPED_INFO(v);
  CHECK(violations.empty());
}

} // namespace

TEST_CASE("cuda device: one rank runs every op kind and times each by its own event pair") {
  const schedules::Schedule s = every_kind();
  auto dev = one_rank_device(s);
  backend::ExecutorOptions o;
  o.timeout_s = 60;
  const backend::RankResult r = backend::Executor(s, 0, *dev, o).run();
  REQUIRE(r.status == backend::RunStatus::Completed);
  REQUIRE(r.events.size() == s.programs[0].ops.size());
  std::printf("%-28s %12s\n", "op (H200 timings)", "time_us");
  double prev_end = -1;
  for (const auto& ev : r.events) {
    const Op& op = s.programs[0].ops[ev.op_index];
    INFO(s.names[op.name]);
    CHECK(!ev.failed);
    CHECK(ev.end_s >= ev.start_s);
    if (op.kind == OpKind::Gemm || op.kind == OpKind::Attention) CHECK(ev.end_s > ev.start_s);
    CHECK(ev.start_s >= prev_end - 5e-6); // each op after its dependency (event resolution ~0.5 µs)
    prev_end = ev.end_s;
    std::printf("%-28s %12.1f\n", s.names[op.name].c_str(), (ev.end_s - ev.start_s) * 1e6);
  }
}

TEST_CASE("cuda device: a run aborted mid-way leaves a process that can start another") {
  schedules::SyntheticOptions so;
  so.micro_batches = 64;
  so.hidden = so.tokens = 8192;
  const auto big = schedules::synthetic_schedule(schedules::Layout{1, 1, 1}, so);
  {
    auto dev = one_rank_device(big);
    backend::ExecutorOptions o;
    o.timeout_s = 60;
    o.should_abort = [] { return true; };
    o.abort_poll_s = 1e-3;
    const backend::RankResult r = backend::Executor(big, 0, *dev, o).run();
    CHECK(r.status == backend::RunStatus::Aborted);
    CHECK(r.ops_completed < r.ops_total);
  } // the device goes with its communicators aborted once, never finalised
  const auto small = schedules::synthetic_schedule(schedules::Layout{1, 1, 1}, {});
  auto dev = one_rank_device(small);
  const backend::RankResult r = backend::Executor(small, 0, *dev, {}).run();
  CHECK(r.status == backend::RunStatus::Completed);
}

TEST_CASE("cuda device: checkpoint stage 1 goes through device memory and comes back intact") {
  const auto s = schedules::synthetic_schedule(schedules::Layout{1, 1, 1}, {});
  auto dev = one_rank_device(s);
  std::vector<uint8_t> state(3 * 1024 * 1024 + 1);
  for (size_t i = 0; i < state.size(); ++i) state[i] = static_cast<uint8_t>(i * 2654435761u >> 13);
  CHECK(dev->stage1_snapshot(state) == state);
}

TEST_CASE("cuda device: 2 ranks run pipeline p2p on directed communicators (synthetic 1x1x2)") {
  if (const auto why = backend::test::missing_for("a 2-stage pipeline", 2, true); !why.empty()) TWINSCALE_SKIP(why);
  schedules::SyntheticOptions so;
  so.micro_batches = 8;
  so.hidden = so.tokens = 1024;
  run_cli(2, "--synthetic 1x1x2 --synthetic-micro-batches 8 --synthetic-hidden 1024",
          schedules::synthetic_schedule(schedules::Layout{1, 1, 2}, so));
}

TEST_CASE("cuda device: 2 ranks run tensor- and data-parallel collectives (synthetic 2x1x1 and 1x2x1)") {
  if (const auto why = backend::test::missing_for("tp 2 / dp 2", 2, true); !why.empty()) TWINSCALE_SKIP(why);
  schedules::SyntheticOptions so;
  so.micro_batches = 4;
  so.hidden = so.tokens = 1024;
  run_cli(2, "--synthetic 2x1x1 --synthetic-micro-batches 4 --synthetic-hidden 1024",
          schedules::synthetic_schedule(schedules::Layout{2, 1, 1}, so));
  run_cli(2, "--synthetic 1x2x1 --synthetic-micro-batches 4 --synthetic-hidden 1024",
          schedules::synthetic_schedule(schedules::Layout{1, 2, 1}, so));
}

TEST_CASE("cuda device: the tiny presets on 8 GPUs (all-gather and reduce-scatter and interleaved pipeline)") {
  if (const auto why = backend::test::missing_for("the tiny presets", 8, true); !why.empty()) TWINSCALE_SKIP(why);
  for (const char* preset : {"tiny-1f1b", "tiny-interleaved", "tiny-megascale"}) {
    INFO(preset);
    run_cli(8, std::string("--preset ") + preset,
            schedules::lower(config::load_job_preset(preset),
                             schedules::LoweringTarget{80e9, /*check_memory=*/false, {}, true}));
  }
}
