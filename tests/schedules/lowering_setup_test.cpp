// The shortcuts of lowering and of the program index that must not change a result: the
// name table's memo (a reused buffer with other characters is another name; names that
// share the memo's key keep their own ids), the channel index reused along a run of one
// channel, stage programs lowered with their vectors sized from a sibling stage (the same
// ops as lowered alone), and the message check settling each program pair once.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "config/job_file.hpp"
#include "config/presets.hpp"
#include "schedules/detail/builder.hpp"
#include "schedules/detail/stage_lowering.hpp"
#include "schedules/execution_rules.hpp"
#include "schedules/schedule.hpp"
#include "schedules/schedule_equal.hpp"

using namespace twinscale;
using namespace twinscale::schedules;

TEST_CASE("lowering set-up: names interned through the memo keep one id per spelling", "[schedules][lower]") {
  detail::NameTable names;
  std::string buffer = "attn.qkv"; // short: the characters stay in one place when reassigned
  const char* where = buffer.data();
  const uint32_t qkv = names.intern(buffer);
  buffer = "attn.pro"; // same address, other characters
  REQUIRE(buffer.data() == where);
  const uint32_t proj = names.intern(buffer);
  CHECK(proj != qkv);
  buffer = "attn.qkv";
  CHECK(names.intern(buffer) == qkv);
  CHECK(names.intern(std::string_view("attn.pro")) == proj); // another address, same name
  CHECK(names.intern("") == names.intern(std::string_view()));
  const std::vector<std::string> taken = names.take();
  REQUIRE(taken.size() == 3);
  CHECK(taken[qkv] == "attn.qkv");
  CHECK(taken[proj] == "attn.pro");
  // the table starts over: the memo holds no id of the names taken
  buffer = "mlp.fc1";
  CHECK(names.intern(buffer) == 0);
  CHECK(names.intern("attn.qkv") == 1);
  CHECK(names.take() == std::vector<std::string>{"mlp.fc1", "attn.qkv"});
}

TEST_CASE("lowering set-up: channels along runs of one channel are numbered as one by one", "[schedules][rules]") {
  auto comm = [](GroupKind group, Stream stream, int32_t priority) {
    Op op;
    op.kind = OpKind::AllReduce;
    op.group = group;
    op.stream = stream;
    op.priority = priority;
    return op;
  };
  Program p;
  p.ops = {comm(GroupKind::Tp, Stream::TpComm, 0),
           comm(GroupKind::Tp, Stream::TpComm, 0),
           Op{},
           comm(GroupKind::Dp, Stream::DpComm, 0),
           comm(GroupKind::Dp, Stream::DpComm, 0),
           comm(GroupKind::Tp, Stream::TpComm, 0),
           comm(GroupKind::Dp, Stream::DpComm, 1),
           comm(GroupKind::Dp, Stream::DpComm, 1),
           comm(GroupKind::Tp, Stream::TpComm, 0)};
  const ProgramIndex ix(p, 0);
  REQUIRE(ix.channels().size() == 3);
  const std::vector<uint32_t> tp{0, 1, 5, 8}, dp{3, 4}, dp1{6, 7};
  for (const auto& [ops, prototype] : {std::pair{tp, 0u}, std::pair{dp, 3u}, std::pair{dp1, 6u}}) {
    const auto in_channel = ix.channel_ops(ix.channel(prototype));
    CHECK(std::vector<uint32_t>(in_channel.begin(), in_channel.end()) == ops);
    for (size_t k = 0; k < ops.size(); ++k) {
      CHECK(ix.channel(ops[k]) == ix.channel(prototype));
      CHECK(ix.sequence(ops[k]) == k);
    }
  }
  CHECK(ix.channel(2) == kNoChannel);
  CHECK(ix.stream_ops(Stream::TpComm).size() == 4);
  CHECK(ix.stream_ops(Stream::DpComm).size() == 4);
  CHECK(ix.stream_ops(Stream::Compute).size() == 1);
}

TEST_CASE("lowering set-up: a stage sized from a sibling lowers the ops it lowers alone", "[schedules][lower]") {
  for (const char* preset : {"tiny-megascale", "tiny-interleaved"}) {
    INFO(preset);
    const auto job = config::load_job_preset(preset);
    const Schedule s = lower(job);
    REQUIRE(s.programs.size() >= 2);
    for (size_t p = 0; p < s.programs.size(); ++p) {
      detail::NameTable names;
      // alone, then sized from a much smaller sibling (the vectors regrow) and from itself
      const Program alone = detail::StageLowering(job, static_cast<int64_t>(p), 0, names).run();
      Program tiny;
      tiny.ops.resize(1);
      const Program from_tiny = detail::StageLowering(job, static_cast<int64_t>(p), 0, names).run(&tiny);
      const Program from_self = detail::StageLowering(job, static_cast<int64_t>(p), 0, names).run(&alone);
      for (const Program* other : {&from_tiny, &from_self}) {
        REQUIRE(other->ops.size() == alone.ops.size());
        CHECK(other->deps == alone.deps);
        for (size_t i = 0; i < alone.ops.size(); ++i) {
          CHECK(other->ops[i].name == alone.ops[i].name);
          CHECK(other->ops[i].dep_begin == alone.ops[i].dep_begin);
          CHECK(other->ops[i].flops == alone.ops[i].flops);
        }
      }
      CHECK(alone.ops.size() == s.programs[p].ops.size());
    }
  }
}

TEST_CASE("lowering set-up: names that share the memo's key (length, first and last eight characters) keep their ids",
          "[schedules][lower]") {
  detail::NameTable names;
  // same length, same first and last eight characters: one memo slot, told apart by the characters
  const std::string a = "attn.proj.abc.dgrad.rs", b = "attn.proj.xyz.dgrad.rs";
  const uint32_t ia = names.intern(a), ib = names.intern(b);
  CHECK(ia != ib);
  for (int i = 0; i < 3; ++i) { // alternating: each call finds the other's id in the slot
    CHECK(names.intern(a) == ia);
    CHECK(names.intern(b) == ib);
    CHECK(names.intern(a + "") == ia); // built anew: another address, the same name
  }
  CHECK(names.intern("a") != names.intern("b")); // short names
  CHECK(names.intern(std::string_view("a")) == names.intern("a"));
  const std::vector<std::string> taken = names.take();
  REQUIRE(taken.size() == 4);
  CHECK(taken[ia] == a);
  CHECK(taken[ib] == b);
}

TEST_CASE("lowering set-up: a message mismatch of programs that many ranks share is reported once, at its first rank",
          "[schedules][rules]") {
  const auto job = config::load_job_preset("tiny-megascale");
  Schedule s = lower(job);
  REQUIRE(s.layout.pp >= 2);
  REQUIRE(s.layout.world() > s.layout.pp); // several ranks per stage program
  CHECK(ExecutionRules(s).check_messages().empty());
  // the first receive of stage 1 expects one byte more than its sender carries
  const uint32_t program = s.program_of_rank[static_cast<size_t>(s.layout.rank({0, 0, 1}))];
  auto& ops = s.programs[program].ops;
  const auto recv = std::find_if(ops.begin(), ops.end(), [](const Op& op) { return op.kind == OpKind::Recv; });
  REQUIRE(recv != ops.end());
  recv->bytes += 1;
  const auto v = ExecutionRules(s).check_messages();
  REQUIRE(v.size() == 1); // one per (program, channel, peer's program, index): every rank shares it
  int64_t first = -1;     // the lowest rank running that program
  for (int64_t r = 0; r < s.world() && first < 0; ++r)
    if (s.program_of_rank[static_cast<size_t>(r)] == program) first = r;
  CHECK(v[0].rank == first);
  CHECK(v[0].op == static_cast<uint32_t>(recv - ops.begin()));
  CHECK(v[0].reason.find("expects") != std::string::npos);
}

namespace {
/// The two schedules are one: the same programs to run (schedules_equal: every field of
/// every op, names as text, dependencies) with the same name numbering and dependency lists.
void require_same_programs(const Schedule& replayed, const Schedule& emitted) {
  std::string why;
  CHECK(schedules_equal(replayed, emitted, &why));
  INFO(why);
  CHECK(why.empty());
  CHECK(replayed.names == emitted.names);
  REQUIRE(replayed.programs.size() == emitted.programs.size());
  for (size_t p = 0; p < emitted.programs.size(); ++p) {
    INFO("program " << p);
    CHECK(replayed.programs[p].deps == emitted.programs[p].deps);
    size_t differing = 0; // where ops point into the dependency and name tables
    for (size_t i = 0; i < emitted.programs[p].ops.size(); ++i) {
      const Op &x = replayed.programs[p].ops[i], &y = emitted.programs[p].ops[i];
      differing += x.dep_begin != y.dep_begin || x.dep_count != y.dep_count || x.name != y.name ? 1 : 0;
    }
    CHECK(differing == 0);
  }
}
} // namespace

TEST_CASE("lowering set-up: layer passes copied from an earlier one, and programs lowered by a helper thread, give "
          "the program emitted op by op",
          "[schedules][lower]") {
  std::vector<std::pair<std::string, JobSpec>> jobs;
  for (const std::string& name : config::preset_names("jobs")) jobs.emplace_back(name, config::load_job_preset(name));
  // what a layer pass reads besides the builder's state, on the small presets
  auto variant = [&](const char* base, const char* what, auto&& change) {
    JobSpec job = config::load_job_preset(base);
    change(job);
    jobs.emplace_back(std::string(base) + " " + what, job);
  };
  variant("tiny-megascale", "recompute every 2nd layer", [](JobSpec& j) {
    j.options.recompute = true;
    j.options.recompute_every = 2;
  });
  variant("tiny-1f1b", "torchtitan's per-op recomputation (tp 1)", [](JobSpec& j) {
    j.parallel.dp *= j.parallel.tp;
    j.parallel.tp = 1;
    j.parallel.sequence_parallel = false;
    j.options.recompute = true;
    j.options.recompute_saves_alternate_matmuls = true;
  });
  variant("tiny-interleaved", "selective recomputation, no async TP all-reduce, dropout", [](JobSpec& j) {
    j.options.selective_recompute = true;
    j.options.tp_async_allreduce = false;
    j.model.dropout = 0.1;
  });
  variant("tiny-interleaved", "unfused operators, no gradient-accumulation fusion", [](JobSpec& j) {
    j.options.operators.fused_layernorm = false;
    j.options.operators.fused_gelu = false;
    j.options.operators.flash_attention = false;
    j.options.grad_accumulation_fusion = false;
    j.options.grad_reduce_fp32 = true;
  });
  variant("tiny-1f1b", "no sequence parallelism, two iterations", [](JobSpec& j) {
    j.parallel.sequence_parallel = false;
    j.options.iterations = 2;
  });
  variant("tiny-fsdp", "prefetch 0, copy-out and copy-in", [](JobSpec& j) {
    j.options.fsdp_prefetch = 0;
    j.options.fsdp_copy_out = true;
    j.options.fsdp_grad_copy_in = true;
    j.options.fsdp_grad_predivide = true;
  });
  variant("tiny-fp8", "recompute", [](JobSpec& j) { j.options.recompute = true; });
  size_t replayed_jobs = 0;
  for (const auto& [name, job] : jobs) {
    INFO(name);
    LoweringTarget each_op;
    each_op.check_memory = false;
    each_op.replay_layers = false;
    LoweringTarget replay = each_op;
    replay.replay_layers = true;
    require_same_programs(lower(job, replay), lower(job, each_op));
    if (name.starts_with("tiny") || name == "gpt-175b-megascale") { // the split does not depend on scale
      LoweringTarget beside = replay; // some programs lowered by a helper thread, names renumbered
      beside.helper_thread = HelperThread::Always;
      require_same_programs(lower(job, beside), lower(job, each_op));
    }
    detail::NameTable names;
    detail::StageLowering stage(job, job.parallel.pp > 1 ? 1 : 0, 0, names);
    stage.run();
    replayed_jobs += stage.replayed_passes() > 0 ? 1 : 0;
  }
  // dense layers of every kind are copied (MoE layers never are): most jobs replay some
  CHECK(replayed_jobs * 4 >= jobs.size() * 3);
}

TEST_CASE("lowering set-up: a span whose ops depend on what its start state does not name is not replayed",
          "[schedules][lower]") {
  detail::NameTable names;
  detail::ProgramBuilder b(names);
  const uint32_t first = b.compute(OpKind::Gemm, Kernel::Gemm, "a", 1, 1, {1, 1, 1, 0});
  const uint32_t second = b.compute(OpKind::Gemm, Kernel::Gemm, "b", 1, 1, {1, 1, 1, 0});
  const auto before = b.context();
  REQUIRE(before);
  CHECK(before->last_compute_back == 1);
  const auto begin = static_cast<uint32_t>(b.size());
  // depends on the latest compute op (named) and on the op before it (not named)
  b.compute(OpKind::Gemm, Kernel::Gemm, "c", 1, 1, {1, 1, 1, 0}, {second});
  CHECK(b.span_since(begin, *before, b.labels)); // only the named op
  const auto begin2 = static_cast<uint32_t>(b.size());
  const auto before2 = b.context();
  b.compute(OpKind::Gemm, Kernel::Gemm, "d", 1, 1, {1, 1, 1, 0}, {first});
  CHECK_FALSE(b.span_since(begin2, *before2, b.labels));
  // labels other than the phase changed inside the span: not replayable either
  const auto begin3 = static_cast<uint32_t>(b.size());
  const auto before3 = b.context();
  const OpLabels at = b.labels;
  b.labels.layer = 7;
  b.compute(OpKind::Gemm, Kernel::Gemm, "e", 1, 1, {1, 1, 1, 0});
  CHECK_FALSE(b.span_since(begin3, *before3, at));
  // a replayable span copied: shifted dependencies, the labels in effect, the state after
  b.labels.layer = 3;
  const auto begin4 = static_cast<uint32_t>(b.size());
  const auto before4 = b.context(); // the latest compute op is the one before
  const uint32_t g = b.compute(OpKind::Gemm, Kernel::Gemm, "f", 1, 1, {1, 1, 1, 0}, {b.last_compute()});
  const uint32_t rs = b.collective(OpKind::ReduceScatter, GroupKind::Tp, Stream::TpComm, "f.rs", 8, {g});
  b.wait_before_next_compute(rs);
  b.compute(OpKind::Elementwise, Kernel::ResidualAdd, "h", 1, 1, {1, 0, 0, 0}); // waits for the reduce-scatter
  const auto span = b.span_since(begin4, *before4, b.labels);
  REQUIRE(span);
  REQUIRE(b.context() == before4); // the same relation to the ops before as at begin4
  b.labels.layer = 4;
  b.labels.phase = Phase::Backward; // replay keeps each op's own phase
  b.replay(*span);
  const Program& p = b.program();
  const uint32_t c0 = begin4 + 3;
  REQUIRE(p.ops.size() == c0 + 3);
  auto deps = [&](uint32_t op) { return std::vector<uint32_t>(p.deps_of(op).begin(), p.deps_of(op).end()); };
  for (uint32_t k = 0; k < 3; ++k) {
    CHECK(p.ops[c0 + k].name == p.ops[begin4 + k].name);
    CHECK(p.ops[c0 + k].labels.layer == 4);
    CHECK(p.ops[c0 + k].labels.phase == Phase::Forward);
  }
  CHECK(deps(c0) == std::vector<uint32_t>{c0 - 1}); // the latest compute op, shifted with the place
  CHECK(deps(c0 + 1) == std::vector<uint32_t>{c0});
  CHECK(deps(c0 + 2) == std::vector<uint32_t>{c0 + 1});
  CHECK(b.last_compute() == c0 + 2);
  CHECK(b.context() == before4);
}
