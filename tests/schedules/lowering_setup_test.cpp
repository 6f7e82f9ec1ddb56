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
#include "schedules/detail/builder.hpp"
#include "schedules/detail/stage_lowering.hpp"
#include "schedules/execution_rules.hpp"
#include "schedules/schedule.hpp"

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
